"""NodeResourcesFit against kube-scheduler's fitsRequest and its scoring strategies (worked
examples from kube's least_allocated_test.go / most_allocated_test.go as data)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from plugins.pods import POD_PLUGINS
from plugins.pods.noderesources.fit import NodeResourcesFit
from tests.plugins.pods.builders import (
    all_rows,
    by_name,
    cycle,
    everything,
    names,
    node,
    pod,
    snapshot,
)


def fit(args: dict[str, Any] | None = None) -> NodeResourcesFit:
    plugin = POD_PLUGINS["NodeResourcesFit"](args or {})
    assert isinstance(plugin, NodeResourcesFit)
    return plugin


def run_filter(plugin: NodeResourcesFit, nodes: Any, p: Any) -> Any:
    c = cycle()
    plugin.pre_filter(c, p, nodes)
    return plugin.filter(c, p, nodes, everything(nodes))


def test_filter_keeps_nodes_with_enough_free_and_names_each_missing_resource() -> None:
    busy = pod("busy", requests=[{"cpu": "3", "memory": "1Gi"}])
    nodes = snapshot(
        [
            node("a", cpu=4, memory="4Gi"),  # 1 cpu free after busy
            node("b", cpu=4, memory="4Gi"),
            node("c", cpu=1, memory="1Gi"),
        ],
        [(busy, "a")],
    )
    result = run_filter(fit(), nodes, pod(requests=[{"cpu": "2", "memory": "2Gi"}]))
    assert names(nodes, result.mask) == ["b"]
    reasons = {(r.message, r.resolvable): names(nodes, r.rows) for r in result.all_reasons()}
    assert reasons == {
        ("Insufficient cpu", True): ["a"],  # preemption of busy would make room
        ("Insufficient cpu", False): ["c"],  # 2 cpu > the node's whole 1 cpu
        ("Insufficient memory", False): ["c"],
    }


def test_full_node_fails_with_too_many_pods_even_for_a_pod_requesting_nothing() -> None:
    nodes = snapshot([node("a", cpu=4, pods=1), node("b", cpu=4, pods=2)], [(pod("x"), "a")])
    result = run_filter(fit(), nodes, pod())
    assert names(nodes, result.mask) == ["b"]
    assert [(r.message, r.resolvable, names(nodes, r.rows)) for r in result.all_reasons()] == [
        ("Too many pods", True, ["a"])
    ]


def test_an_overcommitted_resource_the_pod_does_not_request_does_not_block_it() -> None:
    hog = pod("hog", requests=[{"memory": "8Gi"}])
    nodes = snapshot([node("a", cpu=4, memory="4Gi")], [(hog, "a")])
    assert names(nodes, run_filter(fit(), nodes, pod(requests=[{"cpu": "1"}])).mask) == ["a"]


def test_extended_resource_no_node_has_fails_every_node_unresolvably() -> None:
    nodes = snapshot([node("a", cpu=4), node("b", cpu=4)])
    result = run_filter(fit(), nodes, pod(requests=[{"nvidia.com/gpu": 1}]))
    assert not result.mask.any()
    assert [(r.message, r.resolvable, names(nodes, r.rows)) for r in result.all_reasons()] == [
        ("Insufficient nvidia.com/gpu", False, ["a", "b"])
    ]


def test_extended_resource_counts_against_what_running_pods_hold() -> None:
    gpu = {"nvidia.com/gpu": 1}
    nodes = snapshot(
        [
            node("a", cpu=4, extra={"nvidia.com/gpu": 1}),
            node("b", cpu=4, extra={"nvidia.com/gpu": 2}),
        ],
        [(pod("holder", requests=[gpu]), "a")],
    )
    result = run_filter(fit(), nodes, pod(requests=[gpu]))
    assert names(nodes, result.mask) == ["b"]
    assert [(r.message, r.resolvable) for r in result.all_reasons()] == [
        ("Insufficient nvidia.com/gpu", True)
    ]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"ignoredResources": ["example.com/foo"]}, id="by-name"),
        pytest.param({"ignoredResourceGroups": ["example.com"]}, id="by-group"),
    ],
)
def test_ignored_extended_resources_are_not_checked(args: dict[str, Any]) -> None:
    nodes = snapshot([node("a", cpu=4)])
    result = run_filter(fit(args), nodes, pod(requests=[{"example.com/foo": 1}]))
    assert names(nodes, result.mask) == ["a"]


def test_reasons_cover_only_candidate_rows() -> None:
    nodes = snapshot([node("a", cpu=1), node("b", cpu=1)])
    c = cycle()
    p = pod(requests=[{"cpu": "2"}])
    plugin = fit()
    plugin.pre_filter(c, p, nodes)
    result = plugin.filter(c, p, nodes, np.array([False, True]))
    assert [names(nodes, r.rows) for r in result.all_reasons()] == [["b"]]


# --- scores -------------------------------------------------------------------------------------

# kube's "nothing scheduled, resources requested, differently sized nodes": a pod of 3 cpu and
# 5000 bytes on nodes of 4 cpu / 10000 and 6 cpu / 10000.
SIZED = [node("machine1", cpu="4", memory=10000), node("machine2", cpu="6", memory=10000)]
REQUEST = [{"cpu": "1", "memory": 2000}, {"cpu": "2", "memory": 3000}]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        pytest.param("LeastAllocated", {"machine1": 37, "machine2": 50}, id="least"),
        pytest.param("MostAllocated", {"machine1": 62, "machine2": 50}, id="most"),
    ],
)
def test_allocation_scores_match_kube_worked_example(
    strategy: str, expected: dict[str, int]
) -> None:
    nodes = snapshot(SIZED)
    plugin = fit({"scoringStrategy": {"type": strategy}})
    rows = all_rows(nodes)
    assert (
        by_name(nodes, rows, plugin.score(cycle(), pod(requests=REQUEST), nodes, rows)) == expected
    )


def test_least_allocated_counts_running_pods_and_the_default_non_zero_requests() -> None:
    # A pod without requests counts 100m / 200Mi: memory 200Mi > 10000 bytes scores 0, cpu
    # (4000 - 100 - 1000) * 100 / 4000 = 72 with 1 cpu running, so (72 + 0) / 2 = 36.
    running = pod("r", requests=[{"cpu": "1", "memory": 1}])
    nodes = snapshot([node("machine1", cpu="4", memory=10000)], [(running, "machine1")])
    rows = all_rows(nodes)
    assert fit().score(cycle(), pod(), nodes, rows).tolist() == [36]


def test_weights_and_a_resource_a_node_lacks_count_per_node() -> None:
    # cpu weight 3, gpu weight 1: node a has no gpu, so only cpu counts there (and its weight).
    args = {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 3}, {"name": "nvidia.com/gpu", "weight": 1}],
        }
    }
    nodes = snapshot([node("a", cpu=4), node("b", cpu=4, extra={"nvidia.com/gpu": 4})])
    rows = all_rows(nodes)
    scores = fit(args).score(
        cycle(), pod(requests=[{"cpu": "1", "nvidia.com/gpu": 1}]), nodes, rows
    )
    # a: cpu alone, 75; b: (cpu 75 * 3 + gpu 75 * 1) / 4 = 75.
    assert scores.tolist() == [75, 75]
    scores = fit(args).score(
        cycle(), pod(requests=[{"cpu": "2", "nvidia.com/gpu": 4}]), nodes, rows
    )
    assert scores.tolist() == [50, (50 * 3 + 0) // 4]


def test_requested_to_capacity_ratio_interpolates_with_go_truncation_and_rounds() -> None:
    shape = {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}
    plugin = fit(
        {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": shape}}
    )
    nodes = snapshot(SIZED)
    rows = all_rows(nodes)
    # machine1: cpu 75% -> 25, memory 50% -> 50, mean 37.5 rounds to 38 (LeastAllocated: 37).
    assert plugin.score(cycle(), pod(requests=REQUEST), nodes, rows).tolist() == [38, 50]
    steep = {"shape": [{"utilization": 0, "score": 10}, {"utilization": 30, "score": 0}]}
    plugin = fit(
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 1}],
                "requestedToCapacityRatio": steep,
            }
        }
    )
    nodes = snapshot([node("a", cpu="10")])
    # 10% of the way down a slope of -100 over 30: 100 - 33.3 truncates toward zero to 67.
    assert plugin.score(cycle(), pod(requests=[{"cpu": "1"}]), nodes, all_rows(nodes)).tolist() == [
        67
    ]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        pytest.param({"scoringStrategy": {"type": "Fancy"}}, "scoringStrategy.type", id="type"),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 101}],
                }
            },
            "scoringStrategy.resources[0].weight",
            id="weight",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu"}, {"name": "cpu"}],
                }
            },
            "scoringStrategy.resources[1].name",
            id="duplicate",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio",
            id="shape-missing",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            id="shape-order",
        ),
        pytest.param({"ignoredResourceGroups": ["a/b"]}, "ignoredResourceGroups[0]", id="group"),
        pytest.param({"scoringstrategy": {}}, "scoringstrategy", id="unknown"),
    ],
)
def test_bad_args_name_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=r": ") as raised:
        fit(args)
    assert str(raised.value).startswith(f"{field}: ")
