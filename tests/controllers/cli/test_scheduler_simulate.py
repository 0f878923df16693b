"""`placement scheduler simulate`: the real engine and plugins over manifests on disk, its
output formats, its exit codes and its independence from the order of the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from controllers.cli.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from controllers.cli.main import main
from tests.controllers.cli.samples import run

NOW = ["--now", "2026-01-01T00:00:00Z"]

NODES = """
apiVersion: v1
kind: Node
metadata:
  name: od-1
  labels: {node.kubernetes.io/capacity: on-demand}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: spot-1
  labels: {node.kubernetes.io/capacity: spot}
spec:
  taints: [{key: spot, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
"""

PODS = """
apiVersion: v1
kind: Pod
metadata: {name: api, namespace: shop}
spec:
  schedulerName: ocm-pod-scheduler
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop}
spec:
  schedulerName: ocm-pod-scheduler
  nodeSelector: {node.kubernetes.io/capacity: spot}
  tolerations: [{key: spot, operator: Exists, effect: NoSchedule}]
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: shop}
spec:
  schedulerName: ocm-pod-scheduler
  containers: [{name: c, resources: {requests: {cpu: "16"}}}]
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
"""

HUGE_MESSAGE = (
    "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {spot: true}."
)


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    (tmp_path / "nodes.yaml").write_text(NODES)
    (tmp_path / "pods.yaml").write_text(PODS)
    return tmp_path


def test_json_lists_pods_with_nodes_and_conditions_then_events(
    capsys: pytest.CaptureFixture[str], manifests: Path
) -> None:
    code, out, err = run(capsys, "scheduler", "simulate", "-f", str(manifests), *NOW)
    assert (code, err) == (EXIT_OK, "")
    doc = json.loads(out)
    assert (doc["apiVersion"], doc["kind"]) == ("v1", "List")
    pods = {i["metadata"]["name"]: i for i in doc["items"] if i["kind"] == "Pod"}
    assert pods["api"]["spec"]["nodeName"] == "od-1"
    assert pods["batch"]["spec"]["nodeName"] == "spot-1"
    scheduled = pods["api"]["status"]["conditions"][0]
    assert (scheduled["type"], scheduled["status"]) == ("PodScheduled", "True")
    assert "nodeName" not in pods["huge"]["spec"]
    (failed,) = pods["huge"]["status"]["conditions"]
    assert (failed["status"], failed["reason"]) == ("False", "Unschedulable")
    assert failed["message"].startswith(HUGE_MESSAGE)
    events = [i for i in doc["items"] if i["kind"] == "Event"]
    reasons = {(e["involvedObject"]["name"], e["reason"]) for e in events}
    assert {("api", "Scheduled"), ("batch", "Scheduled"), ("huge", "FailedScheduling")} <= reasons
    assert all(e["source"]["component"] == "ocm-pod-scheduler" for e in events)


def test_table_has_one_row_per_pod_within_120_columns(
    capsys: pytest.CaptureFixture[str], manifests: Path
) -> None:
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", str(manifests), "-o", "table", *NOW)
    assert code == EXIT_OK
    lines = out.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "NODE", "STATUS", "REASON", "MESSAGE"]
    rows = {line.split()[1]: line.split()[:5] for line in lines[1:4]}
    assert rows["api"] == ["shop", "api", "od-1", "Running", "-"]
    assert rows["batch"] == ["shop", "batch", "spot-1", "Running", "-"]
    assert rows["huge"] == ["shop", "huge", "<none>", "Pending", "Unschedulable"]
    assert all(len(line) <= 120 for line in lines[:4])
    # the message the table cut, whole under it (issue 48)
    assert lines[4].startswith("shop/huge: Unschedulable: " + HUGE_MESSAGE)
    assert lines[5] == "3 pods: 2 bound, 1 pending; 0 evicted; 0s simulated"


def test_wide_shows_the_whole_message(capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", str(manifests), "-o", "wide", *NOW)
    assert code == EXIT_OK
    assert out.splitlines()[0].split()[5:] == ["PRIORITY", "NOMINATED", "MESSAGE"]
    assert HUGE_MESSAGE in out


def test_yaml_is_the_same_list(capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
    _, as_json, _ = run(capsys, "scheduler", "simulate", "-f", str(manifests), *NOW)
    _, as_yaml, _ = run(capsys, "scheduler", "simulate", "-f", str(manifests), "-o", "yaml", *NOW)
    assert yaml.safe_load(as_yaml) == json.loads(as_json)


def test_the_output_does_not_depend_on_the_order_of_the_files(
    capsys: pytest.CaptureFixture[str], manifests: Path
) -> None:
    nodes, pods = str(manifests / "nodes.yaml"), str(manifests / "pods.yaml")
    _, one, _ = run(capsys, "scheduler", "simulate", "-f", nodes, "-f", pods, *NOW)
    _, two, _ = run(capsys, "scheduler", "simulate", "-f", pods, "-f", nodes, *NOW)
    assert one == two


def test_a_config_file_renames_the_scheduler(
    capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.yml.txt"
    config.write_text("schedulerName: other-scheduler\n")
    code, out, _ = run(
        capsys,
        "scheduler",
        "simulate",
        "-f",
        str(manifests),
        "--config",
        str(config),
        "-o",
        "table",
        *NOW,
    )
    assert code == EXIT_OK
    assert "OtherScheduler" in out and "0 bound" in out


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            "plugins: {scoreWeights: {NodeAffinity: 0}}",
            "plugins.scoreWeights.NodeAffinity: must be between 1 and 100 (got 0)",
            id="weight",
        ),
        pytest.param(
            "plugins: {enabled: [{name: Gnag}]}",
            "plugins.enabled[0].name: unknown plugin 'Gnag'",
            id="unknown-plugin",
        ),
        pytest.param(
            "pluginArgs: {NodeResourcesFit: {bogus: 1}}",
            "pluginArgs.NodeResourcesFit.bogus: unknown field",
            id="plugin-args",
        ),
        pytest.param("plugins: [", "invalid YAML", id="yaml"),
    ],
)
def test_a_bad_config_is_one_error_naming_file_and_field(
    capsys: pytest.CaptureFixture[str],
    manifests: Path,
    tmp_path: Path,
    config: str,
    message: str,
) -> None:
    path = tmp_path / "config.txt"
    path.write_text(config)
    code, out, err = run(
        capsys, "scheduler", "simulate", "-f", str(manifests), "--config", str(path), *NOW
    )
    assert (code, out) == (EXIT_ERROR, "")
    assert err.startswith(f"{path}: {message}"), err


def test_a_missing_file_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "scheduler", "simulate", "-f", str(tmp_path / "nope"), *NOW)
    assert (code, out) == (EXIT_ERROR, "")
    assert err == f"{tmp_path / 'nope'}: no such file or directory\n"


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["scheduler"], id="no-subcommand"),
        pytest.param(["scheduler", "simulate"], id="no-file"),
        pytest.param(["scheduler", "simulate", "-f", "x", "-o", "bogus"], id="bad-output"),
        pytest.param(["scheduler", "simulate", "-f", "x", "--max-time", "0"], id="bad-max-time"),
        pytest.param(["scheduler", "run", "--http-addr", "nope"], id="bad-http-addr"),
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == EXIT_USAGE
    assert "usage: placement scheduler" in capsys.readouterr().err


def test_a_preemption_victim_is_listed_as_evicted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "nodes.yaml").write_text(NODES)
    (tmp_path / "pods.yaml").write_text(
        """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: shop}
spec:
  nodeName: od-1
  terminationGracePeriodSeconds: 10
  containers: [{name: c, resources: {requests: {cpu: "3"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: shop}
spec:
  schedulerName: ocm-pod-scheduler
  priorityClassName: high
  nodeSelector: {node.kubernetes.io/capacity: on-demand}
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
"""
    )
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", str(tmp_path), "-o", "table", *NOW)
    assert code == EXIT_OK
    rows = {line.split()[1]: line.split()[:5] for line in out.splitlines()[1:3]}
    assert rows["urgent"] == ["shop", "urgent", "od-1", "Running", "-"]
    assert rows["low"] == ["shop", "low", "od-1", "Evicted", "PreemptionByScheduler"]
    assert "1 evicted; 10s simulated" in out


def test_simulate_plays_the_spot_webhook_on_an_annotated_deployment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The sample Deployment of 10 with min-available 3: the webhook's rule, played at each
    pod's creation, sends 3 pods to on-demand nodes (required) and 7 to spot nodes (preferred,
    with the toleration of the spot taint)."""
    sample = Path(__file__).resolve().parents[3] / "config/samples/pods/spot/min-available.yaml"
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", str(sample), "-o", "json", *NOW)
    assert code == EXIT_OK
    docs = json.loads(out)["items"]
    capacity = {
        d["metadata"]["name"]: d["metadata"]["labels"]["node.kubernetes.io/capacity"]
        for d in yaml.safe_load_all(sample.read_text())
        if d and d["kind"] == "Node"
    }
    pods = [d for d in docs if d["kind"] == "Pod" and d["metadata"]["name"].startswith("checkout")]
    assert len(pods) == 10
    on_nodes = [capacity[p["spec"]["nodeName"]] for p in pods]
    assert on_nodes.count("on-demand") == 3
    assert on_nodes.count("spot") == 7
    for pod in pods:
        desired = pod["metadata"]["labels"]["distributed-scheduling/desired-capacity"]
        assert desired == capacity[pod["spec"]["nodeName"]]  # each where the webhook said
        annotations = pod["metadata"].get("annotations") or {}
        has_cost = "controller.kubernetes.io/pod-deletion-cost" in annotations
        assert has_cost == (desired == "on-demand")
