"""A known kind under a wrong apiVersion: `placement validate` and `placement scheduler simulate`
(run as a user runs them) keep kube's "unknown kind" wording and add the apiVersions the kind is
known under; a kind known nowhere gets no hint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DOCUMENTS = """\
apiVersion: v2
kind: Pod
metadata: {name: web, namespace: default}
spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v9
kind: Event
metadata: {name: seen, namespace: default}
---
apiVersion: cluster.open-cluster-management.io/v1
kind: Placement
metadata: {name: web, namespace: default}
---
apiVersion: example.com/v1
kind: Pods
metadata: {name: web, namespace: default}
"""


@pytest.mark.parametrize("verb", [["validate"], ["scheduler", "simulate"]], ids=" ".join)
def test_a_known_kind_under_a_wrong_api_version_says_which_versions_it_has(
    verb: list[str], tmp_path: Path
) -> None:
    manifest = tmp_path / "wrong.yaml"
    manifest.write_text(DOCUMENTS, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "controllers.cli", *verb, "-f", str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert (
        f"{manifest}: document 1: unknown kind 'Pod' (apiVersion 'v2'); "
        "did you mean apiVersion 'v1'?"
    ) in lines
    assert (
        f"{manifest}: document 2: unknown kind 'Event' (apiVersion 'v9'); "
        "did you mean apiVersion 'events.k8s.io/v1' or 'v1'?"
    ) in lines
    assert (
        f"{manifest}: document 3: unknown kind 'Placement' (apiVersion "
        "'cluster.open-cluster-management.io/v1'); did you mean apiVersion "
        "'cluster.open-cluster-management.io/v1beta1'?"
    ) in lines
    # A kind no apiVersion has: the message alone (validate skips it as a kind without a model).
    assert not any("Pods" in line and "did you mean" in line for line in lines)
