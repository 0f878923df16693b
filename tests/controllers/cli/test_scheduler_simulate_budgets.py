"""`placement scheduler simulate` with PodDisruptionBudgets: accepted as input, their status
computed as kube's disruption controller computes it (and written in the output), and default
preemption keeping a budget's pods alive when another node works, the budget spent as the
simulation evicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controllers.cli.common import EXIT_OK
from tests.controllers.cli.samples import run

NOW = ["--now", "2026-01-01T00:00:00Z"]


def _node(name: str) -> str:
    return f"""
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status: {{allocatable: {{cpu: "2", memory: 8Gi, pods: "110"}}}}
"""


def _class(name: str, value: int) -> str:
    return f"""
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {name}}}
value: {value}
"""


def _pod(name: str, priority: str, node: str = "", labels: str = "{}") -> str:
    where = f"nodeName: {node}" if node else "schedulerName: ocm-pod-scheduler"
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: shop, labels: {labels}}}
spec:
  {where}
  priorityClassName: {priority}
  containers: [{{name: c, resources: {{requests: {{cpu: "2"}}}}}}]
"""


# web-1 and web-2 (priority 100) and report (500) fill three nodes; the budget lets one web
# pod go. Two urgent pods come: the first takes web-1 (the lowest priority, within budget);
# the budget is then spent, so the second takes report rather than web-2.
SCENARIO = "---".join(
    [
        *(_node(n) for n in ("node-a", "node-b", "node-c")),
        _class("low", 100),
        _class("batch", 500),
        _class("urgent", 1000),
        _pod("web-1", "low", "node-a", "{app: web}"),
        _pod("web-2", "low", "node-b", "{app: web}"),
        _pod("report", "batch", "node-c"),
        """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
""",
        _pod("checkout-1", "urgent"),
        _pod("checkout-2", "urgent"),
        """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      schedulerName: ocm-pod-scheduler
      priorityClassName: urgent
      containers: [{name: c, resources: {requests: {cpu: "0"}}}]
""",
        """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: api, namespace: shop}
spec:
  maxUnavailable: 34%
  selector: {matchLabels: {app: api}}
""",
    ]
)


def _node_of(items: dict[str, dict[str, Any]], name: str) -> str | None:
    node: str | None = items[f"Pod/{name}"]["spec"].get("nodeName")
    return node


def _evicted(items: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(
        i["metadata"]["name"]
        for k, i in items.items()
        if k.startswith("Pod/") and i["metadata"].get("deletionTimestamp")
    )


def _simulate(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, dict[str, Any]]:
    code, out, err = run(capsys, "scheduler", "simulate", "-f", str(path), *NOW)
    assert (code, err) == (EXIT_OK, "")
    return {f"{i['kind']}/{i['metadata']['name']}": i for i in json.loads(out)["items"]}


def test_a_budget_keeps_its_pods_when_another_node_works_and_is_spent_as_pods_go(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(SCENARIO)
    items = _simulate(capsys, path)
    assert _node_of(items, "checkout-1") == "node-a"
    assert _node_of(items, "checkout-2") == "node-c"
    assert _evicted(items) == ["report", "web-1"]
    web = items["PodDisruptionBudget/web"]["status"]
    assert web == {
        "disruptionsAllowed": 0,
        "currentHealthy": 1,
        "desiredHealthy": 1,
        "expectedPods": 1,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "False",
                "reason": "InsufficientPods",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    # the Deployment's scale is the expected count: 34% of 3 rounded up may go
    api = items["PodDisruptionBudget/api"]["status"]
    assert (api["expectedPods"], api["desiredHealthy"], api["currentHealthy"]) == (3, 1, 3)
    assert api["disruptionsAllowed"] == 2

    # without the budget, both urgent pods take the web pods (the lowest priority)
    path.write_text("---".join(d for d in SCENARIO.split("---") if "PodDisruptionBudget" not in d))
    assert _evicted(_simulate(capsys, path)) == ["web-1", "web-2"]
