"""`placement scheduler simulate --config` with profiles none of the pods name (issue 48, item 5):
one warning line naming the profiles' schedulerNames and those the pods asked for, exit 0, and
each line of the plugins' report once although two profiles' plugins saw the same gang. The
KubeSchedulerConfiguration of docs/pod-scheduler.md schedules the docs' own samples."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from controllers.cli.common import EXIT_OK
from tests.controllers.cli.samples import ROOT, run

NOW = ["--now", "2026-01-01T00:00:00Z"]
SPARK = str(ROOT / "config" / "samples" / "pods" / "gangs" / "spark.yaml")
GANG_LINE = "gang gang-spark/spark-pi: phase "


def docs_config() -> str:
    """The `# scheduler-config.yaml` block of docs/pod-scheduler.md, as a reader saves it."""
    page = (ROOT / "docs" / "pod-scheduler.md").read_text(encoding="utf-8")
    match = re.search(r"^```yaml\n# scheduler-config\.yaml\n(.*?)^```$", page, re.S | re.M)
    assert match is not None, "docs/pod-scheduler.md names its scheduler-config.yaml"
    return match[1]


def test_the_docs_configuration_schedules_the_docs_sample(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "scheduler-config.yaml"
    config.write_text(docs_config())
    argv = ["scheduler", "simulate", "--config", str(config), "-f", SPARK, "-o", "table", *NOW]
    code, out, err = run(capsys, *argv)
    assert (code, err) == (EXIT_OK, "")
    lines = out.splitlines()
    assert lines[-1] == "6 pods: 6 bound, 0 pending; 0 evicted; 0s simulated"
    # two profiles carry Coscheduling: the gang's line once
    assert sum(line.startswith(GANG_LINE) for line in lines) == 1


def test_a_run_where_no_pod_names_a_profile_says_so_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The docs' file as it was: its first profile named as scheduler-plugins names its own."""
    config = tmp_path / "scheduler-config.yaml"
    config.write_text(
        docs_config().replace(
            "schedulerName: ocm-pod-scheduler", "schedulerName: scheduler-plugins-scheduler", 1
        )
    )
    argv = ["scheduler", "simulate", "--config", str(config), "-f", SPARK, *NOW]
    code, out, err = run(capsys, *argv, "-o", "table")
    assert code == EXIT_OK  # pods of other schedulers are valid input
    assert err == (
        "warning: no pod names a profile of this configuration, so none was scheduled: the "
        "profiles' schedulerName 'scheduler-plugins-scheduler', 'bin-packer'; the pods' "
        "spec.schedulerName 'ocm-pod-scheduler' (6 pods)\n"
    )
    lines = out.splitlines()
    assert lines[-1] == "6 pods: 0 bound, 6 pending; 0 evicted; 0s simulated"
    assert sum(line.startswith(GANG_LINE) for line in lines) == 1
    code, out, err = run(capsys, *argv, "-o", "json")
    assert code == EXIT_OK and err.startswith("warning: no pod names a profile")
    assert json.loads(out)["kind"] == "List"  # stdout stays the document


def test_the_warning_counts_each_name_the_pods_ask_for(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(
        """apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: default}
spec: {containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: other-1, namespace: default}
spec: {schedulerName: other, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: other-2, namespace: default}
spec: {schedulerName: other, containers: [{name: c}]}
"""
    )
    code, _, err = run(capsys, "scheduler", "simulate", "-f", str(path), "-o", "table", *NOW)
    assert code == EXIT_OK
    assert err.endswith(
        "the profiles' schedulerName 'ocm-pod-scheduler'; the pods' spec.schedulerName "
        "'default-scheduler' (1 pod), 'other' (2 pods)\n"
    )


def test_no_warning_when_a_pod_is_ours_or_nothing_waits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "scheduler", "simulate", "-f", SPARK, "-o", "table", *NOW)
    assert (code, err) == (EXIT_OK, "")
    path = tmp_path / "bound.yaml"
    path.write_text(
        """apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: bound, namespace: default}
spec: {nodeName: node-1, containers: [{name: c}]}
"""
    )
    code, _, err = run(capsys, "scheduler", "simulate", "-f", str(path), "-o", "table", *NOW)
    assert (code, err) == (EXIT_OK, "")
