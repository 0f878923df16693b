"""`placement scheduler simulate -o table` stays within 120 columns and loses nothing (issue 48,
item 4): a message cut in the MESSAGE column is printed whole under the table (the pods sharing
one on one line, the first three named), and the report lines below it are never cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.cli.common import EXIT_OK
from tests.controllers.cli.samples import run

NOW = ["--now", "2026-01-01T00:00:00Z"]
FULL = (
    "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
    "preemption: 0/1 nodes are available: "
    "1 Preemption is not helpful for scheduling."
)


def pod(name: str, cpu: str, labels: str = "{}") -> str:
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: shop, labels: {labels}}}
spec:
  schedulerName: ocm-pod-scheduler
  containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    """One node of 2 cpus, a pod that fits, five pods of 16 cpus (one message for all) and a
    gang of 3 whose PodGroup name is long enough to make its report line over 120 columns."""
    gang = "a-podgroup-whose-name-makes-the-report-line-wider-than-a-table"
    labels = f"{{scheduling.x-k8s.io/pod-group: {gang}}}"
    path = tmp_path / "all.yaml"
    path.write_text(
        """apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
"""
        + pod("fits", "1")
        + "".join(pod(f"huge-{i}", "16") for i in range(5))
        + "".join(pod(f"member-{i}", "16", labels) for i in range(3))
        + f"""---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {{name: {gang}, namespace: shop}}
spec: {{minMember: 3}}
"""
    )
    return path


def test_each_cut_message_is_printed_whole_under_the_table(
    capsys: pytest.CaptureFixture[str], manifests: Path
) -> None:
    code, out, err = run(capsys, "scheduler", "simulate", "-f", str(manifests), "-o", "table", *NOW)
    assert (code, err) == (EXIT_OK, "")
    lines = out.splitlines()
    rows = lines[1:10]
    assert [r.split()[1] for r in rows][:6] == [
        "fits",
        "huge-0",
        "huge-1",
        "huge-2",
        "huge-3",
        "huge-4",
    ]
    assert all(len(line) <= 120 for line in [lines[0], *rows])  # the table stays compact
    assert rows[1].rstrip().endswith("...")  # the cell is cut ...
    under = lines[10:]
    # ... and the message is under the table, whole, once for the five pods sharing it
    assert f"shop/huge-0, shop/huge-1, shop/huge-2 and 2 more: Unschedulable: {FULL}" in under
    assert sum(FULL in line for line in under) == 1
    assert not any("..." in line for line in under)  # no report line cut either
    gang_line = next(line for line in under if line.startswith("gang shop/a-podgroup"))
    assert len(gang_line) > 120 and "minMember 3: 0 bound" in gang_line
    assert under[-1] == "9 pods: 1 bound, 8 pending; 0 evicted; 0s simulated"


def test_a_table_whose_messages_fit_adds_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "one.yaml"
    path.write_text(
        """apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
"""
        + pod("fits", "1")
    )
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", str(path), "-o", "table", *NOW)
    assert code == EXIT_OK
    assert out.splitlines()[2:] == ["1 pods: 1 bound, 0 pending; 0 evicted; 0s simulated"]


def test_wide_prints_no_repeat_of_its_whole_messages(
    capsys: pytest.CaptureFixture[str], manifests: Path
) -> None:
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", str(manifests), "-o", "wide", *NOW)
    assert code == EXIT_OK
    assert sum(FULL in line for line in out.splitlines()) == 5  # in the five rows only
