"""PodTopologySpread's Score checked by hand against kube's arithmetic (`count * log(domains
+ 2) + maxSkew - 1`, rounded, then `100 * (max + min - s) // max`), and the default
constraints: kube's system defaults with the selector from the pod's Services and controller,
the approximation for a controller the engine does not know, and `List` defaults."""

from __future__ import annotations

from typing import Any

import pytest

from apis.meta import KubeObject
from placement.pods.config.profiles import ConfigError
from plugins.pods.podtopologyspread.plugin import PodTopologySpread
from tests.placement.pods.test_profiles import HEAD, profiles
from tests.plugins.pods.builders import all_rows, by_name, everything, names
from tests.plugins.pods.spread_harness import (
    HOST,
    ZONE,
    constraint,
    four_nodes,
    labelled,
    world,
    zoned,
)


def scores(plugin: PodTopologySpread, cycle: Any, pod: Any, nodes: Any) -> dict[str, int]:
    rows = all_rows(nodes)
    return by_name(nodes, rows, plugin.score(cycle, pod, nodes, rows))


def on_nodes(counts: list[int]) -> list[Any]:
    return [
        (labelled(f"p{n}-{i}"), f"n{n}") for n, count in enumerate(counts) for i in range(count)
    ]


@pytest.mark.parametrize(
    ("counts", "max_skew", "expected"),
    [
        # log(4 + 2) = 1.79: raw 3.58, 1.79, 0, 5.38 -> 4, 2, 0, 5; (5 + 0 - s) * 100 // 5.
        ([2, 1, 0, 3], 1, [20, 60, 100, 0]),
        # + 1 each: 5, 3, 1, 6 -> (7 - s) * 100 // 6.
        ([2, 1, 0, 3], 2, [33, 66, 100, 16]),
        # 4 * 1.79 + 2 = 9.17 -> 9, 7.38 -> 7, 5.58 -> 6, 3.79 -> 4; (13 - s) * 100 // 9.
        ([4, 3, 2, 1], 3, [44, 66, 77, 100]),
    ],
)
def test_hostname_scores_follow_kube(counts: list[int], max_skew: int, expected: list[int]) -> None:
    nodes_ = [zoned(f"n{i}", "z") for i in range(4)]
    cycle, nodes = world(nodes_, on_nodes(counts))
    pod = labelled("mypod", spread=[constraint(HOST, max_skew=max_skew, hard=False)])
    assert list(scores(PodTopologySpread(), cycle, pod, nodes).values()) == expected


def test_zone_scores_count_per_domain_and_nodes_without_the_key_get_zero() -> None:
    # zoneA (node1, node2) has 3 matching pods, zoneB (node3, node4) 1; node5 has no zone.
    # log(2 + 2) = 1.386: zoneA 4.16 -> 4, zoneB 1.39 -> 1; (4 + 1 - s) * 100 // 4.
    placed = [(labelled("a1"), "node1"), (labelled("a2"), "node1"), (labelled("a3"), "node2")]
    placed += [(labelled("b1"), "node4")]
    cycle, nodes = world([*four_nodes(), zoned("node5", None)], placed)
    pod = labelled("mypod", spread=[constraint(ZONE, hard=False)])
    assert scores(PodTopologySpread(), cycle, pod, nodes) == {
        "node1": 25, "node2": 25, "node3": 100, "node4": 100, "node5": 0
    }  # fmt: skip


def test_the_normalizing_weight_counts_the_domains_of_the_scored_nodes_only() -> None:
    # Scoring node1 and node3 only: still two zones. Scoring node1 and node2 (one zone):
    # log(1 + 2) = 1.10, 3 pods -> 3.30 -> 3: every node the same -> (3 + 3 - 3)*100 // 3.
    placed = [(labelled("a1"), "node1"), (labelled("a2"), "node1"), (labelled("a3"), "node2")]
    cycle, nodes = world(four_nodes(), placed)
    pod = labelled("mypod", spread=[constraint(ZONE, hard=False)])
    rows = all_rows(nodes)[:2]
    assert list(PodTopologySpread().score(cycle, pod, nodes, rows)) == [100, 100]


def test_all_zero_scores_are_all_max() -> None:
    cycle, nodes = world(four_nodes())
    pod = labelled("mypod", spread=[constraint(HOST, hard=False)])
    assert set(scores(PodTopologySpread(), cycle, pod, nodes).values()) == {100}


def test_only_schedule_anyway_constraints_score() -> None:
    cycle, nodes = world(four_nodes(), on_nodes([0]))
    hard = labelled("mypod", spread=[constraint(HOST)])
    assert set(scores(PodTopologySpread(), cycle, hard, nodes).values()) == {0}


# --- default constraints -------------------------------------------------------------------


def obj(kind: str, name: str, spec: dict[str, Any], api: str = "apps/v1") -> KubeObject:
    return KubeObject.model_validate(
        {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "default"},
         "spec": spec}
    )  # fmt: skip


OWNED = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u",
         "controller": True}  # fmt: skip


def system_scores(objects: dict[str, Any] | None, owner: Any, labels: dict[str, str]) -> Any:
    """Hostname and zone defaults: nodes n0 (z1), n1 (z1), n2 (z2); web pods 2 on n0, 1 on n2
    and a pod of another app on n1."""
    nodes_ = [zoned("n0", "z1"), zoned("n1", "z1"), zoned("n2", "z2")]
    web = {"app": "web", "pod-template-hash": "1"}
    placed = [(labelled("w1", web), "n0"), (labelled("w2", web), "n0"),
              (labelled("w3", web), "n2"), (labelled("x", {"app": "other"}), "n1")]  # fmt: skip
    cycle, nodes = world(nodes_, placed, objects)
    pod = labelled("mypod", labels, owner=owner)
    return scores(PodTopologySpread(), cycle, pod, nodes)


# Hostname (maxSkew 3, log(3 + 2) = 1.609): n0 2 -> 3.22 + 2, n1 0 -> 2, n2 1 -> 1.61 + 2.
# Zone (maxSkew 5, log(2 + 2) = 1.386): z1 2 -> 2.77 + 4, z2 1 -> 1.39 + 4.
# n0 = 5.22 + 6.77 = 11.99 -> 12; n1 = 2 + 6.77 = 8.77 -> 9; n2 = 3.61 + 5.39 = 9.0 -> 9.
# (12 + 9 - s) * 100 // 12: n0 75, n1 100, n2 100.
SPREAD = {"n0": 75, "n1": 100, "n2": 100}
WEB = {"app": "web", "pod-template-hash": "1"}


def test_system_defaults_take_the_selector_of_a_known_replica_set() -> None:
    rs = obj("ReplicaSet", "web-1", {"selector": {"matchLabels": WEB}})
    assert system_scores({"ReplicaSet": {"default/web-1": rs}}, OWNED, WEB) == SPREAD


def test_system_defaults_take_the_selector_of_a_service() -> None:
    svc = obj("Service", "web", {"selector": {"app": "web"}}, api="v1")
    assert system_scores({"Service": {"default/web": svc}}, None, WEB) == SPREAD
    # A Service that does not select the pod gives nothing: no selector, no scoring.
    other = obj("Service", "db", {"selector": {"app": "db"}}, api="v1")
    assert set(system_scores({"Service": {"default/db": other}}, None, WEB).values()) == {0}


def test_an_unknown_controller_gives_no_selector() -> None:
    # kube: a controller its informers do not hold adds nothing; no Service either, so the
    # pod gets no default constraint and the plugin scores nothing.
    assert set(system_scores(None, OWNED, WEB).values()) == {0}
    # A pod with neither a controller nor a Service: kube derives no selector.
    assert set(system_scores(None, None, WEB).values()) == {0}


def test_a_pod_with_its_own_constraints_gets_no_defaults() -> None:
    nodes_ = [zoned("n0", "z1"), zoned("n1", "z2")]
    cycle, nodes = world(nodes_, [(labelled("w1", WEB), "n0")])
    pod = labelled(
        "mypod",
        WEB,
        owner=OWNED,
        spread=[constraint(ZONE, selector={"matchLabels": {"none": "x"}})],
    )
    assert set(scores(PodTopologySpread(), cycle, pod, nodes).values()) == {0}


def test_list_defaults_can_filter() -> None:
    plugin = PodTopologySpread.from_args(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
            ],
        }
    )
    placed = [(labelled("w1", WEB), "node1"), (labelled("w2", WEB), "node2")]
    rs = obj("ReplicaSet", "web-1", {"selector": {"matchLabels": WEB}})
    cycle, nodes = world(four_nodes(), placed, {"ReplicaSet": {"default/web-1": rs}})
    pod = labelled("mypod", WEB, owner=OWNED)
    assert plugin.pre_filter(cycle, pod, nodes).status.ok
    assert names(nodes, plugin.filter(cycle, pod, nodes, everything(nodes)).mask) == [
        "node3", "node4"
    ]  # fmt: skip
    # The system defaults never filter.
    assert PodTopologySpread().pre_filter(cycle, pod, nodes).status.code.name == "SKIP"


def test_a_kube_scheduler_configuration_sets_list_defaults_and_refuses_bad_ones() -> None:
    args = (
        "  pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n"
        "      defaultConstraints:\n      - {maxSkew: 2, topologyKey: zone, "
        "whenUnsatisfiable: DoNotSchedule}\n"
    )
    (profile,) = profiles(HEAD + "profiles:\n- schedulerName: a\n" + args)
    [plugin] = [p for p in profile.filters if isinstance(p, PodTopologySpread)]
    assert not plugin.system_defaulted
    assert [(c.max_skew, c.topology_key) for c in plugin.defaults] == [(2, "zone")]
    with pytest.raises(
        ConfigError, match=r'defaultingType: Invalid value: "System": when \.defaultConstraints'
    ):
        profiles(HEAD + "profiles:\n- schedulerName: a\n" + args.replace("List", "System"))
