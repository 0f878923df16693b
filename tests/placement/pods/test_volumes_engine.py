"""Volumes through the real engine on an injected clock: claims bound by PreBind before the pod,
a StatefulSet's claims each on their own local volume, ReadWriteOncePod claims freed by
preemption."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from apis.core import Node, Pod
from apis.meta import KubeObject
from apis.storage import PersistentVolume, PersistentVolumeClaim
from apis.workloads import StatefulSet
from placement.pods.framework.events import BindPod, BindVolumes, NodeEvent, ObjectEvent, PodEvent
from placement.pods.scheduler.engine import Engine
from placement.pods.simulator.simulation import SimulationResult, pods_by_key, simulate
from tests.placement.pods.test_engine import SCHEDULER, T0, default_profile, make_node, make_pod
from tests.plugins.pods.volume_builders import HOST, claim, local_pv, storage_class


def host(name: str) -> Node:
    return make_node(name, labels={HOST: name})


def volumes(*claims: str) -> list[dict[str, Any]]:
    return [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]


def run(objects: list[KubeObject]) -> SimulationResult:
    return simulate(objects, Engine(default_profile()), T0, scheduler_name=SCHEDULER)


def stored(result: SimulationResult, kind: type[KubeObject]) -> dict[str, Any]:
    return {o.key: o for o in result.objects if isinstance(o, kind)}


def test_prebind_binds_the_claim_before_the_pod_is_bound() -> None:
    engine = Engine(default_profile())
    for obj in (storage_class(), claim("data"), local_pv("pv-b", "b")):
        engine.handle(ObjectEvent("Added", obj), T0)
    for name in ("a", "b", "c"):
        engine.handle(NodeEvent("Added", host(name)), T0)
    engine.handle(PodEvent("Added", make_pod("p", volumes=volumes("data"))), T0)
    actions = [a for a in engine.schedule(T0) if isinstance(a, BindPod | BindVolumes)]
    assert actions == [
        BindVolumes("default/p", "uid-p", "b", (("default/data", "uid-data", "pv-b"),)),
        BindPod("default/p", "uid-p", "b"),
    ]


def test_a_statefulset_runs_each_member_where_its_local_volume_is() -> None:
    template = {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "resources": {"requests": {"storage": "5Gi"}},
        },
    }
    sts = StatefulSet.model_validate(
        {
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"schedulerName": SCHEDULER, "containers": [{"name": "c"}]},
                },
                "volumeClaimTemplates": [template],
            },
        }
    )
    pvs = [local_pv(f"pv-{n}", n, size="10Gi") for n in ("n1", "n2", "n3")]
    pvs.append(local_pv("pv-small", "n4", size="1Gi"))  # too small for any member
    result = run([sts, storage_class(), *pvs, *(host(n) for n in ("n1", "n2", "n3", "n4"))])
    claims = stored(result, PersistentVolumeClaim)
    bound_volumes = stored(result, PersistentVolume)
    pods = pods_by_key(result)
    used = set()
    for ordinal in range(3):
        pod = pods[f"default/db-{ordinal}"]
        pvc = claims[f"default/data-db-{ordinal}"]
        assert pvc.status.phase == "Bound"
        assert pvc.metadata.labels == {"app": "db"}
        pv = bound_volumes[pvc.spec.volume_name]
        assert pv.spec.claim_ref.name == f"data-db-{ordinal}" and pv.status.phase == "Bound"
        assert pod.spec.node_name == pv.name.removeprefix("pv-")
        source = pod.spec.volumes[0].persistent_volume_claim if pod.spec.volumes else None
        assert source is not None and source.claim_name == f"data-db-{ordinal}"
        used.add(pv.name)
    assert len(used) == 3
    assert bound_volumes["pv-small"].status.phase == "Available"


def test_pods_with_prebound_claims_go_to_the_volumes_node_and_the_rest_wait() -> None:
    objects: list[KubeObject] = [storage_class(), *(host(n) for n in ("a", "b", "c"))]
    objects += [claim("one", volume="pv-c"), local_pv("pv-c", "c", claim_ref="default/one")]
    objects += [claim("two"), claim("three"), local_pv("pv-a", "a")]
    pods = [make_pod(n, volumes=volumes(n)) for n in ("one", "two", "three")]
    result = run([*objects, *pods])
    placed = {k: p.spec.node_name for k, p in pods_by_key(result).items()}
    assert placed["default/one"] == "c"
    # "two" and "three" compete for pv-a: one of them gets it, the other waits with kube's words.
    winner = "default/two" if placed["default/two"] else "default/three"
    loser = "default/three" if winner == "default/two" else "default/two"
    assert placed[winner] == "a" and placed[loser] is None
    condition = pods_by_key(result)[loser].status.conditions[0]  # type: ignore[union-attr,index]
    assert condition["message"] == (
        "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
        " no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def rwop_world(preemptor_priority: int) -> list[KubeObject]:
    rwop = claim("db", modes=("ReadWriteOncePod",), volume="pv")
    pv = local_pv("pv", None, modes=("ReadWriteOncePod",), claim_ref="default/db")
    old = make_pod("old", priority=0, node="a", volumes=volumes("db"))
    new = make_pod(
        "new", priority=preemptor_priority, created=T0 + timedelta(seconds=1), volumes=volumes("db")
    )
    return [host("a"), host("b"), rwop, pv, old, new]


def test_a_read_write_once_pod_claim_is_freed_by_preempting_its_user() -> None:
    result = run(rwop_world(preemptor_priority=100))
    assert [p.name for p in result.evicted] == ["old"]
    new: Pod = pods_by_key(result)["default/new"]
    assert new.spec.node_name is not None


def test_an_equal_priority_pod_waits_for_the_claim() -> None:
    result = run(rwop_world(preemptor_priority=0))
    assert not result.evicted
    new = pods_by_key(result)["default/new"]
    assert new.spec.node_name is None
    condition = new.status.conditions[0]  # type: ignore[union-attr,index]
    assert condition["message"].startswith(
        "0/2 nodes are available: 2 node has pod using PersistentVolumeClaim with the same name"
        " and ReadWriteOncePod access mode."
    )


def test_a_pod_waiting_for_its_claim_is_retried_when_the_claim_appears() -> None:
    engine = Engine(default_profile())
    engine.handle(NodeEvent("Added", host("a")), T0)
    engine.handle(PodEvent("Added", make_pod("p", volumes=volumes("data"))), T0)
    assert not [a for a in engine.schedule(T0) if isinstance(a, BindPod)]
    assert engine.queue_sizes()["unschedulable"] == 1
    later = T0 + timedelta(seconds=30)  # far before the 5 minutes' flush of unschedulable pods
    engine.handle(ObjectEvent("Added", claim("data", volume="pv")), later)
    engine.handle(ObjectEvent("Added", local_pv("pv", "a", claim_ref="default/data")), later)
    assert engine.queue_sizes()["unschedulable"] == 0
    binds = [a for a in engine.schedule(later) if isinstance(a, BindPod)]
    assert binds == [BindPod("default/p", "uid-p", "a")]


def test_a_claim_naming_no_class_gets_the_default_one() -> None:
    default = storage_class("local")
    marked = default.to_wire()
    marked["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    objects: list[KubeObject] = [type(default).model_validate(marked), storage_class("other")]
    objects += [host("a"), host("b"), claim("data", cls=None), claim("plain", cls="")]
    objects += [local_pv("pv-b", "b"), local_pv("pv-a", "a", cls="")]
    objects += [make_pod("p", volumes=volumes("data")), make_pod("q", volumes=volumes("plain"))]
    result = run(objects)
    claims = stored(result, PersistentVolumeClaim)
    assert claims["default/data"].spec.storage_class_name == "local"
    assert claims["default/plain"].spec.storage_class_name == ""  # "" asks for no class
    placed = {k: p.spec.node_name for k, p in pods_by_key(result).items()}
    assert placed["default/p"] == "b"
    assert placed["default/q"] is None  # no class: binds Immediately, which nothing does here


def test_a_generic_ephemeral_volume_gets_its_claim_and_a_local_volume() -> None:
    template = {
        "metadata": {"labels": {"scratch": "yes"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    scratch = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}]
    objects: list[KubeObject] = [storage_class(), host("a"), host("b"), local_pv("pv-a", "a")]
    result = run([*objects, make_pod("job", volumes=scratch)])
    pvc = stored(result, PersistentVolumeClaim)["default/job-scratch"]
    assert pvc.status.phase == "Bound" and pvc.spec.volume_name == "pv-a"
    assert pvc.metadata.labels == {"scratch": "yes"}
    (owner,) = pvc.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Pod", "job", "uid-job", True)
    assert pods_by_key(result)["default/job"].spec.node_name == "a"
