"""NodeResourcesBalancedAllocation: kube's std-deviation formula on worked examples from
kube's balanced_allocation_test.go (as data), plain requests, best-effort pods skipped."""

from __future__ import annotations

import pytest

from plugins.pods import POD_PLUGINS
from plugins.pods.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from tests.plugins.pods.builders import all_rows, by_name, cycle, node, pod, snapshot


def test_kube_worked_example_differently_sized_nodes() -> None:
    # Pod 3 cpu / 5000 bytes. machine1 4 cpu / 10000: fractions .75 and .5, std .125 -> 87;
    # machine2 6 cpu / 10000: .5 and .5 -> 100.
    nodes = snapshot(
        [node("machine1", cpu="4", memory=10000), node("machine2", cpu="6", memory=10000)]
    )
    rows = all_rows(nodes)
    p = pod(requests=[{"cpu": "1", "memory": 2000}, {"cpu": "2", "memory": 3000}])
    scores = NodeResourcesBalancedAllocation().score(cycle(), p, nodes, rows)
    assert by_name(nodes, rows, scores) == {"machine1": 87, "machine2": 100}


def test_counts_running_pods_requests_and_caps_fractions_at_one() -> None:
    running = pod("r", requests=[{"cpu": "3"}])  # no memory request: counts 0 here, not 200Mi
    nodes = snapshot([node("a", cpu="4", memory=10000)], [(running, "a")])
    p = pod(requests=[{"cpu": "2", "memory": 5000}])
    # cpu (3 + 2) / 4 capped to 1, memory .5: std .25 -> 75.
    assert NodeResourcesBalancedAllocation().score(cycle(), p, nodes, all_rows(nodes)).tolist() == [
        75
    ]


def test_three_resources_use_the_population_standard_deviation() -> None:
    plugin = POD_PLUGINS["NodeResourcesBalancedAllocation"](
        {
            "resources": [
                {"name": "cpu", "weight": 1},
                {"name": "memory", "weight": 1},
                {"name": "nvidia.com/gpu", "weight": 1},
            ]
        }
    )
    assert isinstance(plugin, NodeResourcesBalancedAllocation)
    nodes = snapshot([node("a", cpu="4", memory=1000, extra={"nvidia.com/gpu": 4})])
    p = pod(requests=[{"cpu": "1", "memory": 500, "nvidia.com/gpu": 4}])
    # fractions .25, .5, 1: mean 7/12,
    # std sqrt(((-4/12)^2 + (-1/12)^2 + (5/12)^2) / 3) = .3118 -> 68
    assert plugin.score(cycle(), p, nodes, all_rows(nodes)).tolist() == [68]


def test_best_effort_pod_gets_no_preference() -> None:
    nodes = snapshot([node("a", cpu="4", memory=1000), node("b", cpu="8", memory=1000)])
    assert NodeResourcesBalancedAllocation().score(
        cycle(), pod(), nodes, all_rows(nodes)
    ).tolist() == [0, 0]


def test_bad_resources_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"^resources\[0\]\.weight: "):
        POD_PLUGINS["NodeResourcesBalancedAllocation"](
            {"resources": [{"name": "cpu", "weight": 101}]}
        )
