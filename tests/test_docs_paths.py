"""The contributor pages name the tree as it is: docs/architecture.md and CONTRIBUTING.md.

* Every repository path they write in backticks (`placement/pods/backend/queue.py`,
  `plugins/pods/coscheduling/`, `tests/e2e/`, also inside a command such as
  `pytest tests/plugins/pods/coscheduling`, or in a fenced block) exists, so a move or a rename
  that forgets these pages fails here instead of leaving them pointing at nothing.
* docs/architecture.md names the folder of every room the import rules of
  tests/test_architecture.py know: each core room (`placement/pods/<room>/`,
  `placement/spot/`, `plugins/pods/helper/`), each plugin family of plugins/pods/, and each room
  of controllers/. A new room or family is described there before it lands.

A word counts as a repository path when its first part is a top-level folder or file of the
repository (`TOP`), so API groups (`events.k8s.io/v1`) and subresources (`pods/binding`) are not
taken for paths. Placeholders (`plugins/pods/<family>/`) and globs (`perf/results*/`) are
skipped: they name no one file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_architecture import ROOMS, core_rooms

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("docs/architecture.md", "CONTRIBUTING.md")
TOP = (
    "apis",
    "placement",
    "plugins",
    "controllers",
    "ocm_placement",
    "tests",
    "perf",
    "config",
    "docs",
    ".ci",
)
TOP_FILES = ("README.md", "CONTRIBUTING.md", "pyproject.toml", "mkdocs.yml", "Dockerfile")
CODE = re.compile(r"^```[\w-]*\n(.*?)^```$|`([^`\n]+)`", re.DOTALL | re.MULTILINE)
PATH = re.compile(r"[\w.-]+(?:/[\w.-]*)*")
PLACEHOLDER = re.compile(r"[<>*{}$]")


def repository_paths(text: str) -> list[str]:
    """The repository paths written in the backtick spans of `text`, in order, without repeats."""
    found: list[str] = []
    for block, span in CODE.findall(text):
        for word in (block or span).split():
            word = word.strip("'\"(),;:")
            if PLACEHOLDER.search(word) or not PATH.fullmatch(word):
                continue
            first = word.split("/")[0]
            if (first in TOP and "/" in word) or word in TOP_FILES:
                found.append(word)
    return list(dict.fromkeys(found))


def missing_paths(page: str, root: Path = ROOT) -> list[str]:
    """The repository paths of one page that do not exist under `root`."""
    text = (root / page).read_text(encoding="utf-8")
    return [path for path in repository_paths(text) if not (root / path).exists()]


def room_folders(root: Path = ROOT) -> list[str]:
    """The folder of every room tests/test_architecture.py knows, as the pages write it."""
    core = [room.replace(".", "/") + "/" for room in core_rooms(root)]
    return [*core, *(f"controllers/{room}/" for room in ROOMS)]


@pytest.mark.parametrize("page", PAGES)
def test_every_path_a_contributor_page_names_exists(page: str) -> None:
    assert repository_paths((ROOT / page).read_text(encoding="utf-8")), f"{page} names no path"
    assert missing_paths(page) == []


def test_the_architecture_page_names_every_room_and_plugin_family() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(repository_paths(text))

    assert [folder for folder in room_folders() if folder not in named] == []


def test_the_room_list_holds_the_core_rooms_the_families_and_controllers_rooms() -> None:
    folders = room_folders()

    assert "placement/pods/cluster/" in folders
    assert "placement/spot/" in folders
    assert "plugins/pods/helper/" in folders
    assert "plugins/pods/coscheduling/" in folders
    assert "controllers/kube/" in folders


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "the queue (`placement/pods/backend/queue.py`)",
            ["placement/pods/backend/queue.py"],
            id="file",
        ),
        pytest.param(
            "`plugins/pods/coscheduling/`, `tests/e2e/`",
            ["plugins/pods/coscheduling/", "tests/e2e/"],
            id="folders",
        ),
        pytest.param(
            "`pytest tests/plugins/pods/coscheduling -q`",
            ["tests/plugins/pods/coscheduling"],
            id="in-a-command",
        ),
        pytest.param(
            "see `README.md` and `.ci/run`",
            ["README.md", ".ci/run"],
            id="top-level-file-and-hidden-folder",
        ),
        pytest.param("`events.k8s.io/v1`, `pods/binding`, `kube/`", [], id="not-repository-paths"),
        pytest.param("`plugins/pods/<family>/`, `perf/results*/`", [], id="placeholders-and-globs"),
        pytest.param("`placement` and `placement/`", ["placement/"], id="a-bare-word-is-no-path"),
        pytest.param(
            "```bash\npytest tests/placement/pods\n```\nthen `perf/README.md`",
            ["tests/placement/pods", "perf/README.md"],
            id="in-a-fenced-block",
        ),
    ],
)
def test_repository_paths_are_read_from_backtick_spans(text: str, expected: list[str]) -> None:
    assert repository_paths(text) == expected


def test_a_missing_path_is_reported(tmp_path: Path) -> None:
    (tmp_path / "placement" / "pods").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "architecture.md").write_text(
        "`placement/pods/` holds `placement/pods/nodes.py`.\n", encoding="utf-8"
    )

    assert missing_paths("docs/architecture.md", tmp_path) == ["placement/pods/nodes.py"]
