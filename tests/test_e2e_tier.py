"""The e2e tier never passes quietly: without `$KUBEBUILDER_ASSETS` it is skipped and the run's
summary says so and why; with it naming a folder that lacks the binaries, its tests fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_TEST = "tests/e2e/test_deploy_walkthrough.py"


def run_tier(assets: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBEBUILDER_ASSETS"}
    if assets is not None:
        env["KUBEBUILDER_ASSETS"] = assets
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", ONE_TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_without_assets_the_tier_is_skipped_and_the_summary_says_why() -> None:
    done = run_tier(None)
    assert done.returncode == 0, done.stdout
    assert "e2e tier did not run: $KUBEBUILDER_ASSETS is not set" in done.stdout
    assert "1 skipped" in done.stdout


def test_with_assets_that_lack_the_binaries_the_tier_fails(tmp_path: Path) -> None:
    done = run_tier(str(tmp_path))
    assert done.returncode == 1, done.stdout
    assert f"KUBEBUILDER_ASSETS={tmp_path} has no executable etcd, kube-apiserver" in done.stdout
    assert "did not run" not in done.stdout
