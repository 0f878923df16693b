"""The registry and defaults, PrioritySort's order, NodeName, UnsupportedFeatures."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from placement.pods.framework.interface import PodCode
from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS
from plugins.pods.nodename.node_name import NodeName
from plugins.pods.queuesort.priority_sort import PrioritySort
from plugins.pods.unsupportedfeatures.unsupported_features import UnsupportedFeatures
from tests.plugins.pods.builders import NOW, cycle, everything, names, node, pod, snapshot


def test_every_plugin_is_registered_under_its_kube_name() -> None:
    for name, factory in POD_PLUGINS.items():
        plugin: Any = factory({})
        assert plugin.name == name
    assert set(DEFAULT_PLUGINS) <= set(POD_PLUGINS)
    assert DEFAULT_PLUGINS[0] == "PrioritySort"
    assert dict(DEFAULT_SCORE_WEIGHTS) == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "NodeResourcesBalancedAllocation": 1,
        "VolumeBinding": 1,
        "PodTopologySpread": 2,
        "ImageLocality": 1,
        "InterPodAffinity": 2,
    }


@pytest.mark.parametrize(
    "name",
    ["PrioritySort", "NodeName", "NodeUnschedulable", "TaintToleration", "UnsupportedFeatures"],
)
def test_plugins_without_args_refuse_unknown_fields(name: str) -> None:
    with pytest.raises(ValueError, match=r"^surprise: unknown field"):
        POD_PLUGINS[name]({"surprise": True})


def test_priority_sort_orders_by_priority_then_queue_time_then_key() -> None:
    sort = PrioritySort()
    later = NOW + timedelta(seconds=1)
    queue = [
        (pod("b", priority=0), NOW),
        (pod("a", priority=0), NOW),
        (pod("early", priority=0), NOW - timedelta(seconds=1)),
        (pod("urgent", priority=10), later),
        (pod("a", namespace="z", priority=0), NOW),
    ]
    ordered = sorted(queue, key=lambda item: sort.sort_key(*item))
    assert [p.key for p, _ in ordered] == [
        "default/urgent",
        "default/early",
        "default/a",
        "default/b",
        "z/a",
    ]


def test_node_name_narrows_to_its_node_and_filters_the_rest_unresolvably() -> None:
    nodes = snapshot([node("a"), node("b"), node("c")])
    pinned = pod(nodeName="b")
    pre = NodeName().pre_filter(cycle(), pinned, nodes)
    assert pre.status.ok and pre.nodes is not None and names(nodes, pre.nodes) == ["b"]
    result = NodeName().filter(cycle(), pinned, nodes, everything(nodes))
    assert names(nodes, result.mask) == ["b"]
    assert [(r.message, r.resolvable, names(nodes, r.rows)) for r in result.all_reasons()] == [
        ("node(s) didn't match the requested node name", False, ["a", "c"])
    ]
    assert NodeName().pre_filter(cycle(), pod(), nodes).status.code == PodCode.SKIP
    missing = NodeName().pre_filter(cycle(), pod(nodeName="zz"), nodes)
    assert missing.status.code == PodCode.UNRESOLVABLE


TERM = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}


def test_unsupported_features_no_longer_refuses_resource_claims_and_is_out_of_the_default() -> None:
    spec: dict[str, Any] = {
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    }
    assert UnsupportedFeatures().pre_filter(cycle(), pod(**spec), snapshot([node("a")])).status.ok
    assert "UnsupportedFeatures" not in DEFAULT_PLUGINS
    assert (
        DEFAULT_PLUGINS.index("DynamicResources") == DEFAULT_PLUGINS.index("InterPodAffinity") + 1
    )


def test_supported_pods_pass_unsupported_features() -> None:
    spec: dict[str, Any] = {
        "affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]},
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": TERM}
                ]
            },
        },
        "volumes": [
            {"name": "cfg", "configMap": {"name": "c"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "d"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        ],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    assert UnsupportedFeatures().pre_filter(cycle(), pod(**spec), snapshot([node("a")])).status.ok
