"""Every Python block of the README (and of `docs/`, when there is one) runs as written, the way
the docs tell a newcomer to run it: `placement run --load config/samples/hub` (a subprocess, from
the checkout) starts the docs' hub and prints its `KUBECONFIG`; each block is saved as a script
and run in a fresh interpreter outside the source tree with that `$KUBECONFIG`, through the real
client. A block followed by a plain ``` block must print exactly that block's lines."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from apis.placements import PLACEMENT_LABEL, PlacementDecision
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway

ROOT = Path(__file__).resolve().parents[1]
GUARD = 120.0  # seconds: only so that a hung example fails the test instead of hanging it
BLOCK = re.compile(
    r"^```python\n(.*?)^```\n(?:\n[^`\n][^\n]*\n\n```\n(.*?)^```$)?", re.DOTALL | re.MULTILINE
)
EXPORT = re.compile(r"^export KUBECONFIG=(\S+)$", re.MULTILINE)
# The sample placement the add-on script follows, and its PlacementDecisions once scheduled.
SAMPLE = ("apps", "rollout-groups-percent", 4)


def python_blocks() -> list[tuple[str, str, str | None]]:
    """(where, code, printed) of every ```python block of README.md and docs/**/*.md; printed is
    the plain ``` block after it (one line of prose between them), if any."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = []
    for page in pages:
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{page.relative_to(ROOT)}:{line}", match[1], match[2]))
    return found


BLOCKS = python_blocks()


def test_the_docs_have_the_add_on_example_and_what_it_prints() -> None:
    examples = [(code, printed) for _, code, printed in BLOCKS if "DecisionTracker" in code]
    assert examples and all(printed for _, printed in examples)
    assert all(f'"{SAMPLE[0]}", "{SAMPLE[1]}"' in code for code, _ in examples)


@asynccontextmanager
async def docs_hub(tmp_path: Path) -> AsyncIterator[Path]:
    """`placement run --load config/samples/hub` as a subprocess; yields its kubeconfig once
    the sample placement's decisions are written, and stops it with SIGTERM (exit 0)."""
    log = tmp_path / "placement-run.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "controllers.cli",
            "run",
            "--load",
            "config/samples/hub",
            "--http-addr",
            "127.0.0.1:0",
            "--debug-addr",
            "",
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            cwd=ROOT,
        )
    try:
        async with asyncio.timeout(GUARD):
            while not (found := EXPORT.search(log.read_text(encoding="utf-8"))):
                assert process.returncode is None, log.read_text(encoding="utf-8")
                await asyncio.sleep(0.05)
            kubeconfig = Path(found[1])
            namespace, name, count = SAMPLE
            async with await Gateway.connect(ClusterAccess(kubeconfig=kubeconfig)) as gw:
                while True:
                    pds = await gw.list(
                        PlacementDecision, namespace, label_selector=f"{PLACEMENT_LABEL}={name}"
                    )
                    if len([pd for pd in pds.items if pd.status and pd.status.decisions]) >= count:
                        break
                    await asyncio.sleep(0.05)
        yield kubeconfig
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), GUARD) == 0, log.read_text(encoding="utf-8")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("where", "code", "printed"), BLOCKS, ids=[where for where, _, _ in BLOCKS]
)
async def test_a_python_block_of_the_docs_runs_against_the_docs_hub(
    where: str, code: str, printed: str | None, tmp_path: Path
) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    async with docs_hub(tmp_path) as kubeconfig:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=tmp_path,
            env=env,
        )
        async with asyncio.timeout(GUARD):
            out, err = await process.communicate()
    assert process.returncode == 0, f"{where}:\n{err.decode()}"
    assert err.decode() == "", where
    if printed is not None:
        assert out.decode().splitlines() == printed.splitlines(), out.decode()
