"""The wheel has one top-level package, `ocm_placement`: the build hook (hatch_build.py) writes
`apis`, `placement`, `plugins` and `controllers` under it with their imports of each other
rewritten, so that a project with its own `controllers` (or `placement`, ...) package can
install it and `import ocm_placement`. It carries the CRDs and samples as package data, byte for
byte as in `config/` (their canonical copies), and an installation of it finds them without the
source tree, so that `placement demo` and the embedded `placement run` work from a regular
install and the image.

The wheel is built offline with the build backend the test extra installs (hatchling); `.ci/run`
goes further and runs `placement demo` from the wheel installed into a fresh environment.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from hatch_build import RewriteError, Rewriter, stage, top_level_imports

ROOT = Path(__file__).resolve().parents[1]
TOP = "ocm_placement"
PACKAGED = f"{TOP}/controllers/cli/data"
FOLDERS = ("crds", "samples")
PIP = (sys.executable, "-m", "pip", "--quiet")


def hook_config() -> dict[str, Any]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    hook: dict[str, Any] = project["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]
    return hook


MOVED: tuple[str, ...] = tuple(hook_config()["packages"])
KEEP: tuple[str, ...] = tuple(hook_config()["keep-strings"])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    (built,) = out.glob("*.whl")
    return built


def files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by its path relative to it."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file()
    }


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_wheel_carries_the_config_folder_as_it_is_in_the_repository(
    wheel: Path, folder: str
) -> None:
    prefix = f"{PACKAGED}/{folder}/"
    with zipfile.ZipFile(wheel) as archive:
        packed = {
            name.removeprefix(prefix): archive.read(name)
            for name in archive.namelist()
            if name.startswith(prefix)
        }
    assert packed == files(ROOT / "config" / folder)
    assert packed  # an empty folder on both sides would prove nothing


def test_the_wheel_has_one_top_level_package_and_every_module_of_the_five(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {TOP}
    # Every module of the repository's packages, each once, at its place under ocm_placement/.
    expected = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / TOP).rglob("*.py")
        if "__pycache__" not in path.parts
    } | {
        f"{TOP}/{path.relative_to(ROOT).as_posix()}"
        for package in MOVED
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    modules = [name for name in names if name.endswith(".py")]
    assert len(modules) == len(set(modules))
    assert set(modules) == expected
    assert {f"{TOP}/{package}/py.typed" for package in MOVED} <= set(names)


def test_every_module_of_the_wheel_compiles_and_imports_only_under_ocm_placement(
    wheel: Path,
) -> None:
    rewriter = Rewriter(ROOT, MOVED)
    seen = 0
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            text = archive.read(name).decode("utf-8")
            compile(text, name, "exec")
            assert top_level_imports(text, MOVED) == [], name
            imported = top_level_imports(text, (TOP,))
            seen += len(imported)
            # ...and what it imports under ocm_placement exists in the wheel.
            for module in imported:
                base = module.replace(".", "/")
                assert {f"{base}.py", f"{base}/__init__.py"} & names, (name, module)
            # No string that names a module of the moved packages is left (see the pinned list).
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    dotted = "." in node.value  # "placement" alone is a word
                    assert not (dotted and rewriter.is_module(node.value)), (name, node.value)
    assert seen > 1000  # the project's modules import each other; a rewrite of none proves nothing


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed (without dependencies) into a folder of its own, once; the folder.
    The tests run with it on PYTHONPATH, the dependencies coming from this environment."""
    folder = tmp_path_factory.mktemp("site")
    subprocess.run(
        [*PIP, "install", "--no-deps", "--target", str(folder), str(wheel)],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    return folder


def test_an_installed_wheel_serves_its_packaged_crds_and_samples(
    site: Path, tmp_path: Path
) -> None:
    # Outside the source tree, with the installed copy first on the path (before the editable
    # install's source tree): what a regular install or the container image sees.
    probe = (
        "import json, ocm_placement\n"
        "from ocm_placement.controllers.cli.crds import CRD_DIR, SAMPLES_DIR\n"
        "from ocm_placement.controllers.embedded.resources import load_resources\n"
        "print(json.dumps({'package': ocm_placement.__file__, 'crds': str(CRD_DIR),\n"
        "    'samples': sorted(str(p.relative_to(SAMPLES_DIR))\n"
        "                      for p in SAMPLES_DIR.rglob('*') if p.is_file()),\n"
        "    'kinds': sorted({r.kind for r in load_resources()})}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    found = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe],
            check=True,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
        ).stdout
    )
    assert Path(found["package"]).is_relative_to(site)
    assert Path(found["crds"]) == site / PACKAGED / "crds"
    assert found["samples"] == sorted(files(ROOT / "config" / "samples"))
    assert {"Placement", "PlacementDecision", "ManagedCluster", "PodGroup"} <= set(found["kinds"])


VERBS = [
    ["run"],
    ["demo"],
    ["validate"],
    ["simulate"],
    ["explain"],
    ["scheduler", "run"],
    ["scheduler", "simulate"],
    ["webhook", "run"],
    ["webhook", "certs"],
]


def test_every_verb_and_the_consumer_api_work_from_the_installed_wheel(
    site: Path, tmp_path: Path
) -> None:
    # What the container image holds (its Dockerfile installs the same wheel): the hub
    # controller, both add-ons' commands and the add-on authors' API. `python -m ocm_placement`
    # is the `placement` command; each verb's help is asked of the console script's function
    # (ocm_placement.cli:main), all in one process.
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-m", TOP, "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: placement" in done.stdout
    helps = (
        "import contextlib, io, json, sys\n"
        "from ocm_placement.cli import main\n"
        "found = []\n"
        f"for verb in {VERBS!r}:\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        try:\n"
        "            code = main([*verb, '--help'])\n"
        "        except SystemExit as exc:\n"
        "            code = exc.code\n"
        "    found.append([verb, code, out.getvalue()])\n"
        "print(json.dumps(found))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", helps],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert [verb for verb, _, _ in answers] == VERBS
    for verb, code, out in answers:
        assert code == 0, (verb, out)
        assert f"usage: placement {' '.join(verb)}" in out, verb
    probe = "import ocm_placement; print(ocm_placement.__file__, len(ocm_placement.__all__))"
    found = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=True,
        stdin=subprocess.DEVNULL,
    ).stdout.split()
    assert Path(found[0]).is_relative_to(site) and int(found[1]) >= 5


def test_the_image_copies_every_package_of_the_wheel() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    for package in (*packages, *MOVED):
        assert f"COPY {package} ./{package}\n" in dockerfile, package
    assert "hatch_build.py" in dockerfile  # the hook the wheel is built with


# A project of an add-on author: its own packages named as the repository's are, first on
# sys.path (the script's folder), and the wheel installed beside its other dependencies.
PROJECT_SCRIPT = """
import asyncio, json, sys
from datetime import UTC, datetime

import apis, controllers, placement, plugins  # the project's own

import ocm_placement
from ocm_placement import ClusterAccess, DecisionTracker, Gateway, RolloutStrategy, rollout
from ocm_placement.examples.progressive_configmap import NAMESPACE, PLACEMENT, embedded_hub


async def follow() -> list[str]:
    # The example's embedded hub decides its Placement; the tracker follows it over HTTP.
    async with embedded_hub() as url:
        async with await Gateway.connect(ClusterAccess(url=url)) as gateway:
            async with DecisionTracker(gateway, NAMESPACE, PLACEMENT, settle=0.2) as tracker:
                async with asyncio.timeout(60):  # a guard only
                    while not tracker.clusters():
                        await tracker.next_change()
                strategy = RolloutStrategy.model_validate({"type": "All"})
                plan = rollout(strategy, tracker.groups(), [], datetime.now(UTC))
                return sorted(status.cluster for status in plan.to_rollout)


clusters = asyncio.run(follow())
import controllers.views  # the project's own submodule, after ocm_placement ran

print(json.dumps({
    "own": [apis.OWN, controllers.OWN, placement.OWN, plugins.OWN, controllers.views.OWN],
    "ocm_placement": ocm_placement.__file__,
    "gateway": Gateway.__module__,
    "clusters": clusters,
    "top_level": sorted(
        name for name in sys.modules
        if name.split(".")[0] in ("apis", "controllers", "placement", "plugins")
    ),
}))
"""


def test_a_project_with_its_own_controllers_package_imports_ocm_placement(
    site: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    for package in MOVED:
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(f"OWN = {package!r}\n")
    (project / "controllers" / "views.py").write_text("OWN = 'views'\n")
    (project / "main.py").write_text(PROJECT_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "main.py"],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    # The project's packages are the ones its code gets, before and after ocm_placement ran...
    assert found["own"] == ["apis", "controllers", "placement", "plugins", "views"]
    assert found["top_level"] == [
        "apis",
        "controllers",
        "controllers.views",
        "placement",
        "plugins",
    ]
    # ...and ocm_placement, from the wheel, placed and followed the example's 12 clusters.
    assert Path(found["ocm_placement"]).is_relative_to(site)
    assert found["gateway"] == "ocm_placement.controllers.kube.gateway"
    assert found["clusters"] == [f"cluster-{i:02d}" for i in range(1, 13)]


def test_the_console_script_of_the_wheel_validates_the_packaged_samples(
    site: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "controllers").mkdir(parents=True)
    (project / "controllers" / "__init__.py").write_text("raise ImportError('not this one')\n")
    samples = site / PACKAGED / "samples"
    done = subprocess.run(
        [str(site / "bin" / "placement"), "validate", "-f", str(samples)],
        capture_output=True,
        text=True,
        cwd=project,
        env={**os.environ, "PYTHONPATH": f"{project}{os.pathsep}{site}"},
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "valid" in done.stdout.lower(), done.stdout


# Every string literal the hook renames (besides import statements), by file: module names the
# code imports by name, `python -m` commands in help and docstrings. Pinned, so a new one is
# reviewed (is it really a module name?) rather than renamed unseen.
RENAMED_STRINGS = {
    "controllers/addons/scheduler.py": ["controllers.addons.scheduler"] * 2,  # docstring, prog
    "controllers/cli/__init__.py": ["controllers.cli"],  # docstring
    "controllers/cli/__main__.py": ["controllers.cli"],  # docstring
    "controllers/cli/addon_templates.py": ["controllers.cli.addon_templates"] * 3,
    "controllers/cli/crds.py": [
        "controllers.cli.crds",  # docstring
        "controllers.cli",  # resources.files(__package__ or ...)
        "controllers.cli.crds",  # prog
        "controllers.cli.crds",  # "out of date; run ..."
    ],
    # the verbs' modules, imported by name when a verb runs (VERBS)
    "controllers/cli/main.py": [
        f"controllers.cli.{verb}"
        for verb in ("validate", "simulate", "explain", "run", "demo", "scheduler", "webhook")
    ],
    # importlib.import_module(...) and the ModuleNotFoundError's name it expects
    "controllers/cli/scheduler.py": ["controllers.addons.scheduler"] * 2,
    "controllers/embedded/__main__.py": ["controllers.embedded"] * 2,  # docstring, prog
    "controllers/embedded/apiserver.py": ["controllers.embedded"],  # docstring
    # the lazy exports: each name's module
    "ocm_placement/__init__.py": [
        "controllers.kube.config",
        *["placement.rollout"] * 1,
        "controllers.consumer",
        "controllers.kube.gateway",
        "placement.rollout",
        "controllers.consumer",
        *["placement.rollout"] * 3,
        "apis.rollout",
        "controllers.kube.config",
        "placement.rollout",
    ],
}


def test_the_hook_renames_exactly_the_pinned_module_name_strings(tmp_path: Path) -> None:
    placed, strings = stage(ROOT, MOVED, tmp_path, keep=KEEP)
    by_file: dict[str, list[str]] = {}
    for renamed in strings:
        by_file.setdefault(renamed.path, []).append(renamed.name)
    assert by_file == RENAMED_STRINGS
    assert len(placed) > 200
    # The generators' headers stay as the files in config/ carry them.
    crds = (tmp_path / TOP / "controllers" / "cli" / "crds.py").read_text(encoding="utf-8")
    assert "# Generated by `python -m controllers.cli.crds` from the apis models." in crds
    assert 'prog="python -m ocm_placement.controllers.cli.crds"' in crds


def rewrite(source: str) -> str:
    text, _ = Rewriter(ROOT, MOVED).rewrite(textwrap.dedent(source), "example.py")
    return text


def test_the_rewrite_renames_import_statements_and_leaves_the_rest() -> None:
    source = """\
        import os, apis.meta as meta
        from controllers.kube.gateway import (
            Gateway,  # from controllers.kube import x
        )
        from placement import rollout
        from placementx import y
        from . import sibling
        from ocm_placement import cli


        def late():
            if True:
                pass
            from plugins.balance import Balance
            return ("placement.rollout", "plugins.enabled",
                    "plugins.balance.per_row", f"{x}")
        """
    assert rewrite(source) == textwrap.dedent("""\
        import os, ocm_placement.apis.meta as meta
        from ocm_placement.controllers.kube.gateway import (
            Gateway,  # from controllers.kube import x
        )
        from ocm_placement.placement import rollout
        from placementx import y
        from . import sibling
        from ocm_placement import cli


        def late():
            if True:
                pass
            from ocm_placement.plugins.balance import Balance
            return ("ocm_placement.placement.rollout", "plugins.enabled",
                    "plugins.balance.per_row", f"{x}")
        """)


def test_the_rewrite_renames_python_dash_m_in_strings_and_keeps_the_kept() -> None:
    source = '''\
        """`python -m controllers.embedded` runs one;
        `python -m controllers.nothing` is none."""
        PROG = f"python -m controllers.cli.crds {1}"
        HEADER = "# Generated by `python -m controllers.cli.crds`"
        '''
    text, names = Rewriter(ROOT, MOVED, KEEP).rewrite(textwrap.dedent(source), "example.py")
    assert text == textwrap.dedent('''\
        """`python -m ocm_placement.controllers.embedded` runs one;
        `python -m controllers.nothing` is none."""
        PROG = f"python -m ocm_placement.controllers.cli.crds {1}"
        HEADER = "# Generated by `python -m controllers.cli.crds`"
        ''')
    assert [n.name for n in names] == ["controllers.embedded", "controllers.cli.crds"]


def test_the_rewrite_refuses_a_bare_import_of_a_moved_package() -> None:
    # `import apis.meta` binds `apis`: no single renamed import binds the same name.
    with pytest.raises(RewriteError, match=r"example.py:2: `import apis.meta` binds `apis`"):
        rewrite("import os\nimport apis.meta\n")
