"""`scheduler simulate` with dynamic resource allocation: the world plays kube-controller-manager's
resourceclaim controller (a claim per pod from its template, named in the pod's status) and
applies DynamicResources' PreBind writes (allocation and reservedFor), so GPUs published in
ResourceSlices go one per pod until none is left; a shared claim serves two pods; a claim's
last consumer going deallocates it and lets a waiting pod in."""

from __future__ import annotations

from datetime import timedelta

from apis.meta import KubeObject
from apis.resource import POD_CLAIM_NAME_ANNOTATION, ResourceClaim
from placement.pods.config.scheduler_config import build_profile, load_config
from placement.pods.framework.events import PodEvent
from placement.pods.scheduler.engine import Engine
from placement.pods.simulator.simulation import SimulationResult, pods_by_key, simulate
from placement.pods.simulator.world import World
from tests.placement.pods.test_engine import DEFAULTS, REGISTRY, SCHEDULER, T0
from tests.plugins.pods.dra_world import CLASS_AND_TEMPLATE, DRIVER, objects

WORLD = CLASS_AND_TEMPLATE


def _slice(node: str, gpus: int) -> str:
    devices = "\n".join(f"  - name: gpu-{i}" for i in range(gpus))
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {node}-gpus}}
spec:
  driver: {DRIVER}
  nodeName: {node}
  pool: {{name: {node}, generation: 1, resourceSliceCount: 1}}
  devices:
{devices}
"""


def _node(name: str) -> str:
    return f"""
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status:
  allocatable: {{cpu: "8", memory: 16Gi, pods: "110"}}
  capacity: {{cpu: "8", memory: 16Gi, pods: "110"}}
"""


def _pod(name: str, claim: dict[str, str], minute: int = 0) -> str:
    entry = ", ".join(f"{k}: {v}" for k, v in claim.items())
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  creationTimestamp: "2026-01-01T00:{minute:02d}:00Z"
spec:
  schedulerName: {SCHEDULER}
  resourceClaims: [{{{entry}}}]
  containers:
  - name: main
    image: busybox
    resources: {{claims: [{{name: gpu}}], requests: {{cpu: 100m}}}}
"""


def _engine() -> Engine:
    # The default profile: DynamicResources is one of its plugins, as in kube's.
    profile = build_profile(
        load_config({"schedulerName": SCHEDULER}),
        REGISTRY,
        defaults=DEFAULTS,
    )
    return Engine(profile)


def _run(objects: list[KubeObject]) -> SimulationResult:
    return simulate(objects, _engine(), T0, scheduler_name=SCHEDULER, max_time=timedelta(minutes=5))


def _claims(result: SimulationResult) -> dict[str, ResourceClaim]:
    return {o.key: o for o in result.objects if isinstance(o, ResourceClaim)}


def _waiting(result: SimulationResult, name: str) -> str:
    pod = pods_by_key(result)[f"default/{name}"]
    assert pod.spec.node_name is None
    assert pod.status is not None
    (condition,) = [c for c in pod.status.conditions or [] if c["type"] == "PodScheduled"]
    return str(condition["message"])


def test_each_pod_gets_its_own_gpu_and_the_one_too_many_waits_with_kubes_message() -> None:
    pods = [
        _pod(f"job-{i}", {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}, i)
        for i in range(5)
    ]
    result = _run(objects(WORLD, _node("n1"), _node("n2"), _slice("n1", 2), _slice("n2", 2), *pods))
    placed = {str(p.metadata.name): p.spec.node_name for p in result.pods if p.spec.node_name}
    assert sorted(placed) == ["job-0", "job-1", "job-2", "job-3"]
    assert sorted(str(n) for n in placed.values()) == ["n1", "n1", "n2", "n2"]
    claims = _claims(result)
    devices: set[tuple[str, str]] = set()
    for pod in result.pods:
        assert pod.status is not None
        (status,) = pod.status.resource_claim_statuses or []
        claim = claims[f"default/{status.resource_claim_name}"]
        assert claim.metadata.annotations == {POD_CLAIM_NAME_ANNOTATION: "gpu"}
        assert (status.resource_claim_name or "").startswith(f"{pod.metadata.name}-gpu-")
        owner = (claim.metadata.owner_references or [])[0]
        assert (owner.kind, owner.uid, owner.controller) == ("Pod", pod.metadata.uid, True)
        if pod.spec.node_name is None:
            assert claim.status is None or claim.status.allocation is None
            continue
        assert claim.status is not None and claim.status.allocation is not None
        (result_,) = claim.status.allocation.devices.results  # type: ignore[union-attr, misc]
        assert result_.pool == pod.spec.node_name  # a node's own slice
        devices.add((result_.pool, result_.device))
        ((consumer),) = claim.status.reserved_for or []
        assert (consumer.resource, consumer.name, consumer.uid) == (
            "pods",
            pod.metadata.name,
            pod.metadata.uid,
        )
    assert len(devices) == 4  # no GPU twice
    # The plugin's PostFilter runs before DefaultPreemption's, as in kube's default profile:
    # both answers follow the node counts, in profile order.
    assert _waiting(result, "job-4") == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


SHARED = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-gpu, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu}
"""


def test_a_shared_claim_serves_two_pods_on_the_node_of_its_device() -> None:
    pods = [
        _pod(f"sharer-{i}", {"name": "gpu", "resourceClaimName": "shared-gpu"}, i) for i in range(2)
    ]
    result = _run(objects(WORLD, SHARED, _node("n1"), _node("n2"), _slice("n2", 1), *pods))
    nodes = {p.metadata.name: p.spec.node_name for p in result.pods}
    assert nodes == {"sharer-0": "n2", "sharer-1": "n2"}
    claim = _claims(result)["default/shared-gpu"]
    assert claim.status is not None and claim.status.allocation is not None
    assert sorted(r.name for r in claim.status.reserved_for or []) == ["sharer-0", "sharer-1"]


def test_the_last_consumer_going_deallocates_its_claim_and_lets_a_waiting_pod_in() -> None:
    first = _pod("first", {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}, 0)
    second = _pod("second", {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}, 1)
    world = World(_engine(), T0, SCHEDULER)
    result = _run(objects(WORLD, _node("n1"), _slice("n1", 1), first, second))
    placed = [p.metadata.name for p in result.pods if p.spec.node_name]
    assert placed == ["first"]
    assert "cannot allocate all claims" in _waiting(result, "second")
    # Now play it on a world we drive: the first pod goes, the second takes its GPU.
    from placement.pods.simulator.simulation import _load

    _load(world, objects(WORLD, _node("n1"), _slice("n1", 1), first, second), T0)
    world.perform(world.engine.schedule(world.now))
    bound = {k: p.spec.node_name for k, p in world.pods.items()}
    assert bound == {"default/first": "n1", "default/second": None}
    gone = world.pods.pop("default/first")
    world.feed(PodEvent("Deleted", gone))
    from placement.pods.simulator.claims import release_claims

    release_claims(world, gone)
    assert not [
        k
        for (kind, k) in world.objects
        if kind == "ResourceClaim" and k.startswith("default/first-")
    ]
    world.now += timedelta(seconds=30)
    world.perform(world.engine.schedule(world.now))
    assert world.pods["default/second"].spec.node_name == "n1"
