"""NodeVolumeLimits through `scheduler simulate`'s world and the default profile: the attach
limits sample, kube's documented behaviour (a node's CSINode count per driver, one volume shared
by pods counted once), and a property: after any sequence of schedules no node holds more
distinct volumes of a driver than its CSINode allows."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apis.csinode import CSINode, attach_limits
from apis.meta import KubeObject
from apis.registry import parse_object
from apis.storage import PersistentVolume, PersistentVolumeClaim
from controllers.cli.crds import SAMPLES_DIR
from controllers.cli.manifests import load_paths
from placement.pods.scheduler.engine import Engine
from placement.pods.simulator.simulation import SimulationResult, pods_by_key, simulate
from tests.placement.pods.test_engine import SCHEDULER, T0, default_profile

SAMPLE = SAMPLES_DIR / "pods" / "volumes" / "attach-limits.yaml"
DRIVERS = ("ebs.csi.aws.com", "pd.csi.storage.gke.io")


def run(objects: list[KubeObject]) -> SimulationResult:
    return simulate(objects, Engine(default_profile()), T0, scheduler_name=SCHEDULER)


def message(result: SimulationResult, key: str) -> str:
    found = pods_by_key(result)[key].to_wire()
    conditions = (found.get("status") or {}).get("conditions") or []
    return str(next(c.get("message", "") for c in conditions if c["type"] == "PodScheduled"))


def test_the_attach_limits_sample_fills_each_node_to_its_count() -> None:
    result = run([o.obj for o in load_paths([SAMPLE]).objects])
    placed = {k: p.spec.node_name for k, p in pods_by_key(result).items()}
    assert placed == {
        "attach/app-0": "attach-1",
        "attach/app-1": "attach-2",
        "attach/app-2": "attach-1",
        "attach/app-3": None,
        "attach/backup": "attach-1",  # app-0's volume is attached there already
    }
    assert message(result, "attach/app-3").startswith(
        "0/2 nodes are available: 2 node(s) exceed max volume count. no new claims to deallocate, "
        "preemption: "
    )


def obj(api: str, kind: str, name: str, namespace: str | None = None, **body: Any) -> KubeObject:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return parse_object({"apiVersion": api, "kind": kind, "metadata": meta, **body})


World = tuple[list[dict[int, int]], list[tuple[int, int]], list[list[int]]]


def world_objects(world: World) -> list[KubeObject]:
    """Nodes n0.. with CSINodes of the limits (driver index -> count; {}: no CSINode), claims
    c0.. bound to CSI volumes (driver index, handle index: two claims may share a handle), pods
    p0.. using claims."""
    limits, volumes, pods = world
    objects: list[KubeObject] = []
    room = {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"}}
    for i, counts in enumerate(limits):
        objects.append(obj("v1", "Node", f"n{i}", status=room))
        drivers = [
            {"name": DRIVERS[d], "nodeID": f"n{i}", "allocatable": {"count": c}}
            for d, c in counts.items()
        ]
        if drivers:
            objects.append(obj("storage.k8s.io/v1", "CSINode", f"n{i}", spec={"drivers": drivers}))
    for j, (driver, handle) in enumerate(volumes):
        pv: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"]}
        pv["csi"] = {"driver": DRIVERS[driver], "volumeHandle": f"h{handle}"}
        pv["claimRef"] = {"namespace": "default", "name": f"c{j}"}
        objects.append(obj("v1", "PersistentVolume", f"pv{j}", spec=pv))
        claim: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "volumeName": f"pv{j}"}
        claim |= {"storageClassName": "", "resources": {"requests": {"storage": "1Gi"}}}
        objects.append(obj("v1", "PersistentVolumeClaim", f"c{j}", "default", spec=claim))
    for k, claims in enumerate(pods):
        sources = [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": f"c{c}"}}
            for i, c in enumerate(claims)
        ]
        spec = {"schedulerName": SCHEDULER, "containers": [{"name": "c"}], "volumes": sources}
        objects.append(obj("v1", "Pod", f"p{k}", "default", spec=spec))
    return objects


@st.composite
def worlds(draw: st.DrawFn) -> World:
    count = st.integers(0, 3)
    limit = st.dictionaries(st.integers(0, 1), count, max_size=2)
    limits = draw(st.lists(limit, min_size=1, max_size=4))
    volumes = draw(
        st.lists(st.tuples(st.integers(0, 1), st.integers(0, 5)), min_size=1, max_size=8)
    )
    claim = st.integers(0, len(volumes) - 1)
    pods = draw(st.lists(st.lists(claim, min_size=1, max_size=3), min_size=1, max_size=10))
    return limits, volumes, pods


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_no_node_ends_over_its_attach_limit(world: World) -> None:
    given_objects = world_objects(world)
    result = run(given_objects)
    objects = {(o.KIND, o.key): o for o in (*given_objects, *result.objects)}
    used: dict[str, set[tuple[str, str]]] = {f"n{i}": set() for i in range(len(world[0]))}
    pending: list[tuple[str, set[tuple[str, str]]]] = []
    for found in pods_by_key(result).values():
        wants = set()
        for source in found.spec.volumes or ():
            assert source.persistent_volume_claim is not None
            name = source.persistent_volume_claim.claim_name
            claim = objects[("PersistentVolumeClaim", f"default/{name}")]
            assert isinstance(claim, PersistentVolumeClaim) and claim.spec is not None
            pv = objects[("PersistentVolume", claim.spec.volume_name or "")]
            assert isinstance(pv, PersistentVolume) and pv.spec is not None
            csi = (pv.spec.model_extra or {})["csi"]
            wants.add((csi["driver"], csi["volumeHandle"]))
        if found.spec.node_name:
            used[found.spec.node_name] |= wants
        else:
            pending.append((found.key, wants))

    def over(name: str, volumes: set[tuple[str, str]]) -> bool:
        csinode = objects.get(("CSINode", name))
        limits = attach_limits(csinode if isinstance(csinode, CSINode) else None)
        return any(sum(1 for d, _ in volumes if d == k) > n for k, n in limits.items())

    for name, volumes in used.items():
        assert not over(name, volumes), (name, volumes)
    # A pod left Pending fits nowhere, for its volumes only (nothing else stops a pod here).
    for key, wants in pending:
        assert all(over(name, volumes | wants) for name, volumes in used.items()), key
        assert "exceed max volume count" in message(result, key)
