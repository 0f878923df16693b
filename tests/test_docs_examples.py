"""Every Python block of the README (and of `docs/`, when there is one) runs as written: each is
saved as a script and run in a fresh interpreter outside the source tree, with `$KUBECONFIG`
pointing at an embedded hub that holds the add-on example's fleet (`addons/config-rollout`, 12
clusters in 4 decision groups, the placement controller running), through the real client."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest
import yaml

from ocm_placement.examples.progressive_configmap import embedded_hub

ROOT = Path(__file__).resolve().parents[1]
GUARD = 120.0  # seconds: only so that a hung example fails the test instead of hanging it
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks() -> list[tuple[str, str]]:
    """(where, code) of every ```python block of README.md and docs/**/*.md."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = []
    for page in pages:
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{page.relative_to(ROOT)}:{line}", match[1]))
    return found


BLOCKS = python_blocks()


def test_the_readme_has_the_add_on_example() -> None:
    assert any("DecisionTracker" in code for _, code in BLOCKS)


@pytest.mark.asyncio
@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[where for where, _ in BLOCKS])
async def test_a_python_block_of_the_docs_runs_against_an_embedded_hub(
    where: str, code: str, tmp_path: Path
) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    async with embedded_hub() as url:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "hub", "cluster": {"server": url}}],
                    "users": [{"name": "hub", "user": {}}],
                    "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "hub"}}],
                    "current-context": "hub",
                }
            )
        )
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
    if "DecisionTracker" in code:  # the add-on example: the canary group first
        assert out.decode().splitlines() == [
            f"apply to cluster-0{i} (group 0)" for i in (1, 2, 3)
        ], out.decode()
