"""NodePorts: kube's host-port conflict rule, the pod index kept in step, preemption's overlay,
preemption through the engine, a property over random pods, and `scheduler simulate`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.core import Pod
from controllers.cli.common import EXIT_OK
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.overlay import PodOverlay
from placement.pods.cluster.pod_index import HISTORY, PodIndex
from placement.pods.framework.events import BindPod, DeletePod, EmitEvent
from placement.pods.framework.interface import ClusterView, PodCode, PodCycle, PodInfo, WaitingPods
from plugins.pods import DEFAULT_PLUGINS, POD_PLUGINS
from plugins.pods.nodeports.node_ports import ERR_REASON, SUBSET, HostPort, NodePorts, host_ports
from tests.controllers.cli.samples import run
from tests.placement.pods.test_engine import T0, World, binds, make_node, make_pod, of
from tests.plugins.pods.builders import NOW, everything, names, node, snapshot

Port = tuple[int, str, str]  # (hostPort, hostIP, protocol); "" leaves the field out


def port_list(ports: Sequence[Port]) -> list[dict[str, Any]]:
    out = []
    for host_port, ip, protocol in ports:
        entry: dict[str, Any] = {"containerPort": 80, "hostPort": host_port}
        if ip:
            entry["hostIP"] = ip
        if protocol:
            entry["protocol"] = protocol
        out.append(entry)
    return out


def with_ports(name: str, *ports: Port, priority: int = 0, **spec: Any) -> PodInfo:
    body = {"containers": [{"name": "c", "ports": port_list(ports)}], **spec}
    pod = Pod.model_validate({"metadata": {"name": name, "namespace": "default"}, "spec": body})
    return PodInfo.of(pod, priority=priority)


@dataclass
class Counted:
    """The part of the engine's ClusterView NodePorts reads."""

    counted: PodIndex


def cycle_on(index: PodIndex) -> PodCycle:
    view = cast(ClusterView, Counted(index))
    return PodCycle(now=NOW, cluster=view, waiting=cast(WaitingPods, None))


def fits(
    plugin: NodePorts, index: PodIndex, pod: PodInfo, nodes: NodeSnapshot, candidates: Any = None
) -> list[str]:
    cycle = cycle_on(index)
    pre = plugin.pre_filter(cycle, pod, nodes)
    if pre.status.code == PodCode.SKIP:
        return list(nodes.names)
    mask = everything(nodes) if candidates is None else candidates
    result = plugin.filter(cycle, pod, nodes, mask)
    for reason in result.all_reasons():
        assert reason.message == ERR_REASON and reason.resolvable
        assert not (reason.rows & result.mask).any()
    return names(nodes, result.mask)


# --- kube's conflict table -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("held", "wanted", "conflict"),
    [
        ((8080, "127.0.0.1", "UDP"), (8080, "127.0.0.1", "UDP"), True),
        ((8080, "127.0.0.1", "TCP"), (8080, "127.0.0.1", "UDP"), False),  # other protocol
        ((8080, "127.0.0.1", "UDP"), (8080, "127.0.0.2", "UDP"), False),  # other address
        ((8080, "127.0.0.1", "TCP"), (8081, "127.0.0.1", "TCP"), False),  # other port
        ((8001, "0.0.0.0", "TCP"), (8001, "127.0.0.1", "TCP"), True),  # every address held
        ((8001, "127.0.0.1", "TCP"), (8001, "0.0.0.0", "TCP"), True),  # every address wanted
        ((8001, "0.0.0.0", "UDP"), (8001, "127.0.0.1", "TCP"), False),
        ((8001, "", ""), (8001, "10.1.1.1", "TCP"), True),  # defaults: 0.0.0.0 and TCP
        ((8001, "10.1.1.1", ""), (8001, "", "TCP"), True),
        ((8001, "", "SCTP"), (8001, "", ""), False),
        ((8001, "", "SCTP"), (8001, "", "SCTP"), True),
    ],
)
def test_conflicts_follow_kubes_host_port_rule(held: Port, wanted: Port, conflict: bool) -> None:
    nodes = snapshot([node("a", cpu=4), node("b", cpu=4)])
    index = PodIndex()
    index.add(with_ports("holder", held), "a")
    expected = ["b"] if conflict else ["a", "b"]
    assert fits(NodePorts(), index, with_ports("p", wanted), nodes) == expected


def test_any_one_conflicting_port_of_many_rejects_the_node() -> None:
    nodes = snapshot([node("a"), node("b")])
    index = PodIndex()
    index.add(with_ports("x", (80, "", ""), (443, "10.0.0.1", "TCP")), "a")
    index.add(with_ports("y", (53, "", "UDP")), "b")
    plugin = NodePorts()
    assert fits(plugin, index, with_ports("p", (9000, "", ""), (443, "", "")), nodes) == ["b"]
    assert fits(plugin, index, with_ports("q", (53, "", "UDP"), (80, "", "")), nodes) == []
    assert fits(
        plugin, index, with_ports("r", (53, "", "TCP"), (80, "10.0.0.9", "UDP")), nodes
    ) == [
        "a",
        "b",
    ]


def test_pods_without_host_ports_skip_and_zero_host_ports_do_not_count() -> None:
    nodes = snapshot([node("a")])
    index = PodIndex()
    index.add(with_ports("holder", (80, "", "")), "a")
    plugin = NodePorts()
    only_container_port = with_ports("p", (0, "", ""))
    assert host_ports(only_container_port.pod) == ()
    result = plugin.pre_filter(cycle_on(index), only_container_port, nodes)
    assert result.status.code == PodCode.SKIP
    assert fits(plugin, index, with_ports("q", (80, "", "")), nodes) == []


def test_sidecars_hold_host_ports_and_plain_init_containers_do_not() -> None:
    init = [
        {"name": "setup", "ports": port_list([(80, "", "")])},
        {"name": "proxy", "restartPolicy": "Always", "ports": port_list([(81, "", "")])},
    ]
    pod = with_ports("p", (82, "", ""), initContainers=init)
    assert [p.port for p in host_ports(pod.pod)] == [81, 82]
    nodes = snapshot([node("a")])
    index = PodIndex()
    index.add(pod, "a")
    plugin = NodePorts()
    assert fits(plugin, index, with_ports("x", (80, "", "")), nodes) == ["a"]
    assert fits(plugin, index, with_ports("y", (81, "", "")), nodes) == []


def test_a_host_network_pod_takes_its_container_ports_as_the_api_server_defaults() -> None:
    pod = with_ports("p", (0, "", ""), hostNetwork=True)
    assert host_ports(pod.pod) == (HostPort("0.0.0.0", "TCP", 80),)
    explicit = with_ports("q", (8080, "", "UDP"), hostNetwork=True)
    assert host_ports(explicit.pod) == (HostPort("0.0.0.0", "UDP", 8080),)
    assert host_ports(with_ports("r", (0, "", ""), hostNetwork=False).pod) == ()


def test_only_candidate_rows_are_checked_and_reported() -> None:
    nodes = snapshot([node("a"), node("b"), node("c")])
    index = PodIndex()
    for where in ("a", "b"):
        index.add(with_ports(f"h-{where}", (80, "", "")), where)
    candidates = np.array([False, True, True])
    plugin = NodePorts()
    cycle = cycle_on(index)
    pod = with_ports("p", (80, "", ""))
    plugin.pre_filter(cycle, pod, nodes)
    result = plugin.filter(cycle, pod, nodes, candidates)
    assert names(nodes, result.mask) == ["c"]
    (reason,) = result.all_reasons()
    assert names(nodes, reason.rows) == ["b"]


# --- the index kept in step ------------------------------------------------------------------


def test_pods_counted_and_uncounted_between_cycles_are_seen() -> None:
    nodes = snapshot([node("a"), node("b")])
    index = PodIndex()
    plugin = NodePorts()
    pod = with_ports("p", (80, "", ""))
    assert fits(plugin, index, pod, nodes) == ["a", "b"]
    index.add(with_ports("h1", (80, "", "")), "a")
    index.add(with_ports("plain", (0, "", "")), "b")
    assert fits(plugin, index, pod, nodes) == ["b"]
    index.add(with_ports("h2", (80, "10.0.0.1", "")), "b")
    assert fits(plugin, index, pod, nodes) == []
    index.remove("default/h1")
    assert fits(plugin, index, pod, nodes) == ["a"]
    index.add(with_ports("h2", (8080, "", "")), "b")  # updated: its port moved
    assert fits(plugin, index, pod, nodes) == ["a", "b"]
    assert set(index.subset(SUBSET, lambda _: False)) == {"default/h2"}


def test_more_changes_than_the_history_rebuilds_from_the_subset() -> None:
    nodes = snapshot([node("a"), node("b")])
    index = PodIndex()
    plugin = NodePorts()
    pod = with_ports("p", (80, "", ""))
    index.add(with_ports("h1", (80, "", "")), "a")
    assert fits(plugin, index, pod, nodes) == ["b"]
    for i in range(HISTORY + 1):
        index.add(with_ports(f"plain{i}", (0, "", "")), "a")
    index.remove("default/h1")
    index.add(with_ports("h2", (80, "", "")), "b")
    assert index.changes_since(index.generation - HISTORY - 1) is None
    assert fits(plugin, index, pod, nodes) == ["a"]
    assert fits(plugin, PodIndex(), pod, nodes) == ["a", "b"]  # another index: rebuilt


# --- preemption's hypothetical clusters ------------------------------------------------------


def test_a_gone_holder_frees_its_port_and_an_added_pod_takes_one() -> None:
    nodes = snapshot([node("a"), node("b"), node("c")])
    index = PodIndex()
    low = with_ports("low", (80, "", ""), priority=1)
    high = with_ports("high", (80, "", ""), priority=100)
    index.add(low, "a")
    index.add(high, "b")
    plugin = NodePorts()
    pod = with_ports("p", (80, "", ""), priority=10)
    assert fits(plugin, index, pod, nodes) == ["c"]
    victims = replace(nodes, overlay=PodOverlay().removing(["default/low"]))
    assert fits(plugin, index, pod, victims) == ["a", "c"]
    below = np.full(nodes.size, 10, dtype=np.int64)
    emptied = replace(nodes, overlay=PodOverlay().below_priority(below))
    assert fits(plugin, index, pod, emptied) == ["a", "c"]
    nominated = with_ports("nominated", (80, "", "UDP"), (80, "10.0.0.1", ""))
    added = replace(nodes, overlay=PodOverlay().adding([(2, nominated)]))
    assert fits(plugin, index, pod, added) == []
    other = replace(nodes, overlay=PodOverlay().adding([(2, with_ports("n", (81, "", "")))]))
    assert fits(plugin, index, pod, other) == ["c"]


# --- through the engine ----------------------------------------------------------------------


def port_pod(name: str, port: int, *, ip: str = "", protocol: str = "", **kw: Any) -> Pod:
    """An engine test pod (1 cpu) whose container asks for one host port."""
    container = {
        "name": "c",
        "resources": {"requests": {"cpu": 1}},
        "ports": port_list([(port, ip, protocol)]),
    }
    return make_pod(name, containers=[container], **kw)


def test_nodeports_is_a_default_plugin_before_noderesourcesfit() -> None:
    assert DEFAULT_PLUGINS.index("NodePorts") == DEFAULT_PLUGINS.index("NodeAffinity") + 1
    assert DEFAULT_PLUGINS.index("NodePorts") < DEFAULT_PLUGINS.index("NodeResourcesFit")
    with pytest.raises(ValueError, match=r"^surprise: unknown field"):
        POD_PLUGINS["NodePorts"]({"surprise": True})


def test_the_engine_reports_kubes_reason_when_no_victim_helps() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=8))
    world.add_pods(port_pod("holder", 8080, priority=10, node="a", scheduler="other"))
    world.add_pods(port_pod("p", 8080, priority=10))
    [event] = of(world.engine.schedule(T0), EmitEvent)
    assert event.message == (
        f"0/1 nodes are available: 1 {ERR_REASON}. no new claims to deallocate, "
        f"preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )


def test_a_lower_priority_holder_is_the_victim_and_the_preemptor_then_binds() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=8), make_node("b", cpu=8))
    world.add_pods(
        port_pod("low", 8080, priority=1, node="a", scheduler="other"),
        make_pod("bystander", cpu=1, priority=1, node="a", scheduler="other"),
        port_pod("peer", 8080, priority=50, node="b", scheduler="other"),
    )
    world.add_pods(port_pod("vip", 8080, priority=10))
    actions = world.step()
    assert [a.key for a in of(actions, DeletePod)] == ["default/low"]
    assert world.engine.nominated() == {"default/vip": "a"}
    world.now = T0 + timedelta(seconds=2)
    assert binds(world.step()) == {"default/vip": "a"}
    assert "default/bystander" in world.pods


def test_a_nominated_pod_holds_its_port_against_lower_priority_pods() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=8))
    world.add_pods(port_pod("low", 8080, priority=1, node="a", scheduler="other"))
    world.add_pods(port_pod("vip", 8080, priority=10))
    world.step()  # low is deleted, vip nominated to a and backing off
    assert world.engine.nominated() == {"default/vip": "a"}
    world.add_pods(port_pod("late", 8080, priority=5))
    actions = world.step()
    assert "default/late" not in binds(actions)
    world.now = T0 + timedelta(seconds=2)
    world.run(until=T0 + timedelta(seconds=30))
    assert world.node_of("default/vip") == "a"
    assert world.node_of("default/late") is None


# --- property: no two bound pods ever share a conflicting port on a node ----------------------

port_specs = st.lists(
    st.tuples(
        st.sampled_from([80, 81]),
        st.sampled_from(["", "10.0.0.1", "10.0.0.2"]),
        st.sampled_from(["", "UDP"]),
        st.sampled_from([0, 5, 10]),  # priority
    ),
    min_size=1,
    max_size=14,
)


def clash(held: HostPort, wanted: HostPort) -> bool:
    """kube's rule, written out: same protocol and port, and one address covers the other."""
    same = (held.protocol, held.port) == (wanted.protocol, wanted.port)
    return same and (held.ip == wanted.ip or "0.0.0.0" in (held.ip, wanted.ip))


def check_no_port_bound_twice(world: World) -> None:
    held: dict[str, list[HostPort]] = {}
    for pod in world.pods.values():
        where = pod.spec.node_name
        if not where:
            continue
        mine = host_ports(pod)
        for other in held.get(where, []):
            assert not any(clash(other, w) for w in mine), (pod.metadata.name, where)
        held.setdefault(where, []).extend(mine)


@settings(max_examples=40, deadline=None)
@given(port_specs, st.integers(1, 3))
def test_no_node_ever_binds_a_conflicting_host_port_twice(specs: Sequence[Any], nodes: int) -> None:
    world = World.of()
    world.add_nodes(*(make_node(f"n{i}", cpu=64) for i in range(nodes)))
    for i, (port, ip, protocol, priority) in enumerate(specs):
        world.add_pods(port_pod(f"p{i}", port, priority=priority, ip=ip, protocol=protocol))
    for _ in range(40):
        actions = world.step()
        check_no_port_bound_twice(world)
        wake = world.engine.next_wake()
        if any(isinstance(a, BindPod | DeletePod) for a in actions):
            continue
        if wake is None:
            break
        world.now = max(world.now, wake)
    check_no_port_bound_twice(world)
    # Every pod left pending really had no node: each node holds a conflicting port.
    assert all(
        world.node_of(f"default/p{i}") is not None or _blocked_everywhere(world, f"p{i}")
        for i in range(len(specs))
    )


def _blocked_everywhere(world: World, name: str) -> bool:
    pod = world.pods.get(f"default/{name}")
    if pod is None:
        return True  # preempted
    wanted = host_ports(pod)
    for node_name in world.engine.nodes().names:
        bound = [p for p in world.pods.values() if p.spec.node_name == node_name]
        held = [h for p in bound for h in host_ports(p)]
        if not any(clash(h, w) for h in held for w in wanted):
            return False
    return True


# --- scheduler simulate ----------------------------------------------------------------------

SIMULATED = """
apiVersion: v1
kind: Node
metadata: {name: edge-1}
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: ingress-a, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  schedulerName: ocm-pod-scheduler
  containers:
  - name: c
    resources: {requests: {cpu: "1"}}
    ports: [{containerPort: 80, hostPort: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: ingress-b, namespace: default, creationTimestamp: "2026-01-01T00:00:01Z"}
spec:
  schedulerName: ocm-pod-scheduler
  containers:
  - name: c
    resources: {requests: {cpu: "1"}}
    ports: [{containerPort: 80, hostPort: 80, hostIP: 10.0.0.7}]
---
apiVersion: v1
kind: Pod
metadata: {name: dns, namespace: default, creationTimestamp: "2026-01-01T00:00:02Z"}
spec:
  schedulerName: ocm-pod-scheduler
  containers:
  - name: c
    resources: {requests: {cpu: "1"}}
    ports: [{containerPort: 53, hostPort: 80, protocol: UDP}]
"""


def test_scheduler_simulate_shows_the_free_ports_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "cluster.yaml").write_text(SIMULATED)
    now = ["--now", "2026-01-01T00:00:10Z"]
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", str(tmp_path), "-o", "wide", *now)
    assert code == EXIT_OK
    rows = {line.split()[1]: line for line in out.splitlines()[1:4]}
    assert rows["ingress-a"].split()[2] == "edge-1"
    assert rows["dns"].split()[2] == "edge-1"  # UDP: another protocol, no conflict
    assert rows["ingress-b"].split()[2] == "<none>"
    assert f"0/1 nodes are available: 1 {ERR_REASON}." in rows["ingress-b"]
