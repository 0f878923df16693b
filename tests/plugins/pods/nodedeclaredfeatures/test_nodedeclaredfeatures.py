"""NodeDeclaredFeatures: kube v1.36's inference of a pod's required features, the Filter on the
nodes' `status.declaredFeatures`, its PreFilter skip and its requeue hints; through the engine."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Node
from placement.pods.framework.events import NodeEvent
from placement.pods.framework.interface import PodCode
from placement.pods.simulator.simulation import pods_by_key
from plugins.pods import DEFAULT_PLUGINS
from plugins.pods.nodedeclaredfeatures.node_declared_features import (
    ERR_REASON_UNSATISFIED,
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    NodeDeclaredFeatures,
    required_features,
)
from tests.placement.pods.test_engine import make_node, make_pod
from tests.placement.pods.test_volume_limits_engine import message
from tests.placement.pods.test_volumes_engine import run
from tests.plugins.pods.builders import cycle, everything, names, node, pod, snapshot

RESTART_ALL = [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]


def declaring(name: str, *features: str) -> Node:
    found = node(name)
    assert found.status is not None
    found.status.declared_features = list(features)
    return found


def fed(*nodes: Node) -> NodeDeclaredFeatures:
    plugin = NodeDeclaredFeatures()
    for one in nodes:
        plugin.on_event(NodeEvent("Added", one), _NO_CLUSTER)
    return plugin


_NO_CLUSTER: Any = None  # the plugin reads no cluster state


@pytest.mark.parametrize(
    ("spec", "needed"),
    [
        ({}, set()),
        (
            {"containers": [{"name": "c", "restartPolicyRules": RESTART_ALL}]},
            {RESTART_ALL_CONTAINERS},
        ),
        (
            {
                "containers": [{"name": "c"}],
                "initContainers": [{"name": "i", "restartPolicyRules": RESTART_ALL}],
            },
            {RESTART_ALL_CONTAINERS},
        ),
        (
            {"containers": [{"name": "c", "restartPolicyRules": [{"action": "Restart"}]}]},
            set(),
        ),
        ({"hostNetwork": True, "hostUsers": False}, {USER_NAMESPACES_HOST_NETWORK}),
        ({"hostNetwork": True}, set()),
        ({"hostUsers": False}, set()),
        ({"hostNetwork": True, "hostUsers": True}, set()),
    ],
)
def test_required_features_are_inferred_from_the_spec_as_kube_does(
    spec: dict[str, Any], needed: set[str]
) -> None:
    assert required_features(pod(**spec).pod) == needed


def test_a_node_not_declaring_a_required_feature_is_refused_unresolvably() -> None:
    cluster = [node("bare"), declaring("new", RESTART_ALL_CONTAINERS), declaring("other", "X")]
    nodes, plugin = snapshot(cluster), fed(*cluster)
    needing = pod(containers=[{"name": "c", "restartPolicyRules": RESTART_ALL}])
    assert plugin.pre_filter(cycle(), needing, nodes).status.ok
    result = plugin.filter(cycle(), needing, nodes, everything(nodes))
    assert names(nodes, result.mask) == ["new"]
    assert [(r.message, r.resolvable, names(nodes, r.rows)) for r in result.all_reasons()] == [
        (ERR_REASON_UNSATISFIED, False, ["bare", "other"])
    ]
    # Both features needed: a node declaring one of them only is refused too.
    both = pod(
        hostNetwork=True,
        hostUsers=False,
        containers=[{"name": "c", "restartPolicyRules": RESTART_ALL}],
    )
    assert names(nodes, plugin.filter(cycle(), both, nodes, everything(nodes)).mask) == []


def test_a_pod_requiring_nothing_is_skipped_and_passes_every_node() -> None:
    nodes = snapshot([node("bare"), declaring("new", RESTART_ALL_CONTAINERS)])
    plugin = fed(node("bare"), declaring("new", RESTART_ALL_CONTAINERS))
    plain = pod()
    assert plugin.pre_filter(cycle(), plain, nodes).status.code == PodCode.SKIP
    assert names(nodes, plugin.filter(cycle(), plain, nodes, everything(nodes)).mask) == [
        "bare",
        "new",
    ]


def test_requeue_on_a_node_added_or_its_declared_features_changed_only() -> None:
    plugin = NodeDeclaredFeatures()
    assert plugin.requeue_on == frozenset()  # freed room or other node updates help nobody
    assert plugin.on_event(NodeEvent("Added", node("a")), _NO_CLUSTER) is True
    relabelled = node("a", labels={"x": "y"})
    assert plugin.on_event(NodeEvent("Modified", relabelled), _NO_CLUSTER) is False
    now_declaring = declaring("a", RESTART_ALL_CONTAINERS)
    assert plugin.on_event(NodeEvent("Modified", now_declaring), _NO_CLUSTER) is True
    assert plugin.on_event(NodeEvent("Modified", now_declaring), _NO_CLUSTER) is False
    assert plugin.on_event(NodeEvent("Deleted", now_declaring), _NO_CLUSTER) is False


def test_it_is_the_last_of_kubes_default_filters() -> None:
    assert (
        DEFAULT_PLUGINS.index("NodeDeclaredFeatures") == DEFAULT_PLUGINS.index("ImageLocality") + 1
    )


def _declaring_node(name: str, *features: str) -> Node:
    found = make_node(name)
    assert found.status is not None
    found.status.declared_features = list(features)
    return found


def test_through_the_engine_a_pod_goes_only_where_its_feature_is_declared() -> None:
    rule = [{"name": "c", "restartPolicyRules": RESTART_ALL, "resources": {}}]
    result = run(
        [
            make_node("old"),
            _declaring_node("new", RESTART_ALL_CONTAINERS),
            make_pod("gang-member", containers=rule),
            make_pod("userns", hostNetwork=True, hostUsers=False),
            make_pod("plain"),
        ]
    )
    placed = {key: found.spec.node_name for key, found in pods_by_key(result).items()}
    assert placed["default/gang-member"] == "new"
    assert placed["default/userns"] is None
    assert placed["default/plain"] in ("old", "new")
    assert message(result, "default/userns").startswith(
        f"0/2 nodes are available: 2 {ERR_REASON_UNSATISFIED}."
    )
