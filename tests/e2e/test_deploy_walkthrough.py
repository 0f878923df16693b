"""docs/deploy.md's "Try it on a test cluster" block runs, verbatim, on the real control plane:
install, samples with their status, the controller from a shell, its first decision."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.e2e.controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy.md"
SECTION = "### Try it on a test cluster"


def walkthrough() -> str:
    """The first ```bash block after SECTION in docs/deploy.md."""
    text = DEPLOY.read_text()
    start = text.index(SECTION)
    match = re.search(r"^```bash\n(.*?)^```$", text[start:], re.DOTALL | re.MULTILINE)
    assert match is not None, f"{DEPLOY}: no bash block under {SECTION!r}"
    return match.group(1)


def test_the_deploy_walkthrough_runs_as_written(control_plane: ControlPlane) -> None:
    script = walkthrough()
    assert "placement run" in script and "kubectl apply -k config/default" in script
    bin_dir = str(Path(sys.executable).parent)  # `placement` of this environment
    env = {**control_plane.env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    # the last command's output: the decision of spread-demo/spread-even-zones (Balance 0, so
    # what other placements decided first does not matter)
    listing = yaml.safe_load(done.stdout[done.stdout.index("apiVersion: v1\nitems:") :])
    (decision,) = listing["items"]
    assert decision["metadata"]["name"] == "spread-even-zones-decision-1"
    clusters = [d["clusterName"] for d in decision["status"]["decisions"]]
    # the samples' README: two of each zone of us-east
    assert sorted(clusters) == [
        "aws-us-east-1a-1",
        "aws-us-east-1a-2",
        "aws-us-east-1b-1",
        "aws-us-east-1b-2",
    ]
    # and what `placement simulate` computes offline for the same samples
    simulated = subprocess.run(
        [
            sys.executable,
            "-m",
            "controllers.cli",
            "simulate",
            "-f",
            "config/samples/hub",
            "-o",
            "yaml",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    expected = [
        d["clusterName"]
        for item in yaml.safe_load(simulated.stdout)["items"]
        if item["kind"] == "PlacementDecision"
        and item["metadata"]["name"] == "spread-even-zones-decision-1"
        for d in item["status"]["decisions"]
    ]
    assert sorted(clusters) == sorted(expected)
