"""The scheduler_perf workloads of `perf.kube_workloads` at their smoke sizes (CI): each runs to
the end with every measured pod bound and its own check clean (anti-affinity: alone on a node
without a green pod; spread: zones within the skew; preemption: one eviction per preemptor at
most; gangs: whole or none), the objects the end to end runs create are the same workload, and
scheduler_perf's per-second throughput samples are computed as it does
(`perf.kube_throughput`). Figures come from `python -m perf`, never from here."""

from __future__ import annotations

import itertools

import pytest

from perf.kube_throughput import per_second, summary
from perf.kube_workloads import GANG_SMOKE, SMOKE, WORKLOADS, gangs, main, objects, run


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_workload_runs_clean_at_smoke_size(workload: str) -> None:
    nodes, running, pending = SMOKE[workload]
    out = run(workload, nodes, running, pending)
    assert out["problems"] == []
    assert out["bound"] == pending
    if workload == "PreemptionBasic":
        assert 0 < out["evicted"] <= pending  # the cluster is full: preemptors must evict


def test_command_line_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--smoke", "--only", "SchedulingBasic"]) == 0
    assert '"workload": "SchedulingBasic"' in capsys.readouterr().out


def test_gangs_through_the_engine_bind_whole_gangs_only() -> None:
    out = gangs(*GANG_SMOKE)  # 5 gangs of 4 members of 1 cpu on 4 nodes of 4 cpu: 4 fit
    assert out["problems"] == []
    assert out["fit"] == 4
    assert out["bound"] == 16 and out["whole_gangs"] == 4 and out["partial_gangs"] == 0


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_objects_are_the_workload_the_engine_runs(workload: str) -> None:
    nodes, running, pending = SMOKE[workload]
    cluster, before, measured = objects(workload, nodes, running, pending)
    per_node = nodes if workload == "PreemptionBasic" else 1
    assert len(cluster) == nodes and len(before) == running * per_node
    assert len(measured) == pending
    assert all(p.spec.node_name for p in before)  # running: bound by another scheduler
    assert not any(p.spec.node_name for p in measured)
    names = {n.metadata.name for n in cluster}
    assert {p.spec.node_name for p in before} <= names
    out = run(workload, nodes, running, pending)
    assert [n for _, n in out["timeline"]][-1] == pending  # the curve ends with every pod bound
    assert all(a <= b for (_, a), (_, b) in itertools.pairwise(out["timeline"]))


def test_per_second_samples_are_the_pods_bound_in_each_whole_second() -> None:
    # 300 pods bound in the first second, 100 in the second, 0 in the third, 50 in the fourth
    timeline = [(0.5, 200), (0.9, 300), (1.7, 400), (3.2, 420), (3.9, 450), (4.3, 460)]
    assert per_second(timeline) == [300, 100, 0, 50]
    assert per_second([(0.25, 100)]) == [400]  # shorter than a second: one sample
    assert per_second([]) == []
    stats = summary([300, 100, 0, 50])
    assert stats["Average"] == 112.5
    assert (stats["Perc50"], stats["Perc90"], stats["Perc99"]) == (50, 300, 300)
    assert summary([]) == {}


def test_creator_sends_the_gateways_bodies_and_stops_at_the_first_refusal() -> None:
    """`perf.kube_creator` creates what the gateway creates (the same path and JSON body), every
    object once over its 30 connections, and a refused create (409: the pod exists) is an
    error, never a silent miss."""
    import asyncio
    import json

    from apis.core import Namespace, Pod
    from apis.registry import parse_as
    from controllers.kube.gateway import collection_path
    from perf.kube_creator import CreateError, encode, post_all
    from tests.controllers.addons.cluster import server_process

    nodes, running, pending = SMOKE["SchedulingBasic"]
    *_, measured = objects("SchedulingBasic", nodes, running, pending)
    requests = encode(measured)
    for pod, request in zip(measured, requests, strict=True):
        assert request.path == collection_path(Pod, pod.metadata.namespace)
        assert json.loads(request.body) == pod.to_wire()
    spaces = sorted({str(p.metadata.namespace) for p in measured})

    async def scenario() -> tuple[int, list[Pod], str]:
        async with server_process() as (url, gateway):
            for ns in spaces:
                doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                await gateway.create(parse_as(Namespace, doc))
            created = await post_all(url, requests)
            listed = [p for ns in spaces for p in (await gateway.list(Pod, namespace=ns)).items]
            try:
                await post_all(url, requests[:3])
                refused = ""
            except CreateError as exc:
                refused = str(exc)
            return created, listed, refused

    created, listed, refused = asyncio.run(scenario())
    assert created == len(measured) == len(listed)
    sent = {(p.metadata.namespace, p.metadata.name): p for p in measured}
    for pod in listed:
        mine = sent.pop((pod.metadata.namespace, pod.metadata.name))
        assert pod.spec.containers == mine.spec.containers and pod.spec.node_name is None
        assert pod.metadata.labels == mine.metadata.labels
    assert not sent
    assert " 409 " in refused


def test_watch_decodes_only_the_lines_that_change_the_count() -> None:
    """The end to end run's watch counts a measured pod bound once, when a line gives it a
    node, and a deleted other pod as evicted; a line of a pod without a node is not decoded."""
    import json

    from perf.child_kube import BindWatch

    def line(kind: str, name: str, node: str | None) -> bytes:
        pod = {"metadata": {"namespace": "ns", "name": name}, "spec": {"nodeName": node}}
        return json.dumps({"type": kind, "object": pod}).encode()

    watch = BindWatch({"ns/a", "ns/b"})
    watch._line(line("ADDED", "a", None))
    watch._line(line("MODIFIED", "a", None))
    assert (watch.bound, watch.parsed) == ({}, 0)
    watch._line(line("MODIFIED", "a", "n1"))
    watch._line(line("MODIFIED", "a", "n2"))  # bound once: the first node stays
    watch._line(line("DELETED", "victim", "n1"))
    watch._line(line("DELETED", "b", None))  # a measured pod's deletion is no eviction
    assert watch.bound == {"ns/a": "n1"} and watch.deleted == 1
    assert (watch.lines, watch.parsed) == (6, 4)


def test_creator_reports_a_server_it_cannot_reach() -> None:
    import asyncio

    from perf.child_pods import _free_port
    from perf.kube_creator import CreateError, Request, post_all

    request = Request("/api/v1/namespaces/ns/pods", b"{}")
    with pytest.raises(CreateError, match="connect"):
        asyncio.run(post_all(f"http://127.0.0.1:{_free_port()}", [request] * 3))
    assert asyncio.run(post_all("http://127.0.0.1:1", [])) == 0  # nothing to send: no connection
