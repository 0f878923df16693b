"""The shell blocks of README.md and docs/ that can run here run as written.

The rule, block by block (every ```bash block of README.md and docs/**/*.md):

* A block is **skipped** when one of its commands starts with a word of `SKIPPED`, each listed
  with its reason: what needs a real cluster (`kubectl` other than `kubectl kustomize`, `curl`),
  keeps running as a server (`placement run`, `placement scheduler run`, `placement webhook
  run`, `python -m controllers.embedded`), needs a container engine (`docker`), changes the
  environment or the repository (`pip install`, `go install`, `python -m controllers.cli.crds`
  without `--check`), or is the suite or the scale harness itself (`pytest`, `python -m perf`:
  CI runs them).
* Every other block **runs**, and then each of its commands must start with a word of `RUNS`
  (the offline verbs of `placement`, `kubectl kustomize`, the add-on example); a command in
  neither list fails the test, so a new kind of command is classified before it lands.
* A block runs as one `bash -euo pipefail` script in a temporary folder holding a copy of the
  repository's `config/` (the paths the pages use) and standing in for `$HOME`, with `placement`
  the command of this checkout (`python -m controllers.cli`). It must exit 0.
* A ```yaml block whose first line is `# <file name>` is written to that file first, and an
  output block (a plain ``` block whose first line is `$ placement ...`) runs its command there:
  every line it shows, other than `...` (lines left out), must come out, in order.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUARD = 300.0  # seconds per block: only so that a hung command fails instead of hanging
BASH = re.compile(r"^```bash\n(.*?)^```$", re.DOTALL | re.MULTILINE)
OUTPUT = re.compile(r"^```\n(\$ placement .*?)^```$", re.DOTALL | re.MULTILINE)
FILE = re.compile(r"^```yaml\n# ([\w.-]+\n.*?)^```$", re.DOTALL | re.MULTILINE)

# Commands that run here, by their first words.
RUNS = (
    "placement validate",
    "placement simulate",
    "placement explain",
    "placement scheduler simulate",
    "placement demo",
    "placement webhook certs",
    "kubectl kustomize",
    "python -m ocm_placement.examples.",
    "python -m controllers.cli.crds --check",
)
# Commands that make their whole block skipped, and why.
SKIPPED = {
    "kubectl": "needs a cluster (every verb but kustomize)",
    "curl": "needs a running controller",
    "placement run": "a server that keeps running",
    "placement scheduler run": "a server that keeps running",
    "placement webhook run": "a server that keeps running",
    "python -m controllers.embedded": "a server that keeps running",
    "docker": "needs a container engine and a registry",
    "pip install": "changes the environment (CI runs the README's install command)",
    "python -m controllers.cli.crds": "rewrites config/crds (CI runs `--check`)",
    "pytest": "the suite itself (CI runs it)",
    "python -m perf": "the scale harness: minutes (pytest runs its smoke pass)",
    "go install": "downloads and builds a tool (setup-envtest, for the e2e tier's binaries)",
}


@dataclass(frozen=True)
class Block:
    where: str
    page: Path
    code: str


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(pattern: re.Pattern[str]) -> list[Block]:
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(f"{page.relative_to(ROOT)}:{line}", page, match[1]))
    return found


def commands(code: str) -> list[str]:
    """Each simple command of a block (continuations joined, comments dropped), as its words."""
    joined = code.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, ";"]:
            ends = word != ";" and word.endswith(";")
            word = word.removesuffix(";") if ends else word
            if word in {"|", "||", "&&", ";", "&", "do", "then", "done", "fi"}:
                if command:
                    found.append(" ".join(command))
                command = []
            elif word in {"for", "while", "if"} and not command:
                command = ["for"]
            else:
                command.append(word)
            if ends:
                found.append(" ".join(command))
                command = []
    return [c for c in found if not c.startswith("for ")]


def starts(command: str, prefix: str) -> bool:
    return command == prefix or command.startswith(prefix if prefix.endswith(".") else prefix + " ")


def skip_reason(block: Block) -> str | None:
    for command in commands(block.code):
        if any(starts(command, prefix) for prefix in RUNS):
            continue
        for prefix, reason in SKIPPED.items():
            if starts(command, prefix):
                return f"{prefix}: {reason}"
    return None


SHELL = blocks(BASH)
RUNNABLE = [b for b in SHELL if skip_reason(b) is None]


Files = tuple[tuple[str, str], ...]


def files_of(page: Path) -> Files:
    """The files a page's ```yaml blocks name: (name, content)."""
    return tuple(
        (name, body)
        for name, _, body in (b.code.partition("\n") for b in blocks(FILE) if b.page == page)
    )


def workspace(tmp: Path, files: Files) -> dict[str, str]:
    """A folder like the repository's root for the pages' paths; the environment to run in."""
    shutil.copytree(ROOT / "config", tmp / "config")
    for name, body in files:
        (tmp / name).write_text(body, encoding="utf-8")
    (tmp / "bin").mkdir()
    placement = tmp / "bin" / "placement"
    placement.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m controllers.cli "$@"\n')
    placement.chmod(0o755)
    return {
        **os.environ,
        "HOME": str(tmp),
        "PATH": f"{tmp / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "KUBECONFIG": str(tmp / "no-kubeconfig"),
    }


def run(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=GUARD,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(script, -1, "", f"still running after {GUARD} s")


OUTPUTS = blocks(OUTPUT)


def command_of(output: Block) -> str:
    return output.code.partition("\n")[0].removeprefix("$ ")


Ran = dict[tuple[Files, str], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """Every runnable block and every output block's command, each once (the same text on two
    pages runs once), side by side: each is one process, mostly CPU."""
    scripts = {(files_of(b.page), b.code) for b in RUNNABLE}
    scripts |= {(files_of(b.page), command_of(b)) for b in OUTPUTS}

    def one(key: tuple[Files, str]) -> subprocess.CompletedProcess[str]:
        files, script = key
        folder = tmp_path_factory.mktemp("block")
        return run(script, folder, workspace(folder, files))

    keys = sorted(scripts)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        return dict(zip(keys, pool.map(one, keys), strict=True))


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.where for b in RUNNABLE])
def test_a_shell_block_that_needs_no_cluster_runs(block: Block, ran: Ran) -> None:
    unclassified = [
        c for c in commands(block.code) if not any(starts(c, prefix) for prefix in RUNS)
    ]
    assert unclassified == [], f"{block.where}: add these commands to RUNS or SKIPPED"
    done = ran[files_of(block.page), block.code]
    assert done.returncode == 0, f"{block.where}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


@pytest.mark.parametrize("block", OUTPUTS, ids=[b.where for b in OUTPUTS])
def test_a_shown_output_is_what_the_command_prints(block: Block, ran: Ran) -> None:
    done = ran[files_of(block.page), command_of(block)]
    shown = block.code.partition("\n")[2]
    printed = [line.rstrip() for line in (done.stdout + "\n" + done.stderr).splitlines()]
    at = 0
    for line in shown.splitlines():
        if line.strip() in {"", "..."}:
            continue
        assert line.rstrip() in printed[at:], f"{block.where}: not printed (in order): {line}"
        at = printed.index(line.rstrip(), at) + 1


def test_the_rule_sees_what_it_is_for() -> None:
    assert commands("a x \\\n  y | b # c\nfor s in 1 2; do kubectl get $s; done") == [
        "a x y",
        "b",
        "kubectl get $s",
    ]
    skipped = Block("x", ROOT, "placement validate -f x\nkubectl apply -k config/default\n")
    assert skip_reason(skipped) == "kubectl: needs a cluster (every verb but kustomize)"
    assert skip_reason(Block("x", ROOT, "kubectl kustomize d | placement validate -f -\n")) is None
    # The pages keep runnable blocks of each kind, and output blocks.
    ran = {c.split()[0] + " " + c.split()[1] for b in RUNNABLE for c in commands(b.code)}
    assert {"placement validate", "placement simulate", "kubectl kustomize"} <= ran
    assert OUTPUTS
    named = [file for block in blocks(FILE) for file in files_of(block.page)]
    assert named and all(body.strip() for _, body in named)
