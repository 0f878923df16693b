"""CapacityScheduling with DRA devices: a pod is charged the devices of the claims made for it
from its templates as `<class>.deviceclass.resource.k8s.io/devices`, counted as kube's
ResourceQuota evaluator counts a claim (the cases of kube's resource_claims_test.go), once per
pod; a claim named directly is not charged. Through `scheduler simulate`'s world: a quota of
max 2 GPUs keeps the third GPU pod Pending with the plugin's words, shows 2 used, and lets the
third in when one goes; a higher-priority GPU pod preempts within its own quota."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Pod
from apis.resource import ResourceClaim, ResourceClaimSpec, ResourceClaimTemplate
from placement.pods.framework.interface import PodInfo
from placement.pods.scheduler.engine import Engine
from plugins.pods.capacityscheduling.capacity_scheduling import CapacityScheduling
from plugins.pods.capacityscheduling.devices import DeviceCharges, claim_devices, pod_devices
from tests.plugins.pods.dra_world import (
    CLASS_AND_TEMPLATE,
    GPUS,
    arrive,
    bound,
    claims,
    delete,
    dra_profile,
    gpu_pod,
    node,
    objects,
    run,
    scheduled_message,
    world_of,
)

TPUS = "tpu.deviceclass.resource.k8s.io/devices"


def _exact(**fields: Any) -> dict[str, Any]:
    return {"name": "req-0", "exactly": {"deviceClassName": "gpu", **fields}}


def _first(*subs: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "req-0",
        "firstAvailable": [
            {"name": f"subreq-{i}", "deviceClassName": "gpu", **sub} for i, sub in enumerate(subs)
        ],
    }


def _spec(*requests: dict[str, Any]) -> ResourceClaimSpec:
    return ResourceClaimSpec.model_validate({"devices": {"requests": list(requests)}})


@pytest.mark.parametrize(
    ("requests", "charged"),
    [
        ([_exact(allocationMode="ExactCount", count=1)], {GPUS: 1}),  # simple
        ([_exact(count=1)] * 5, {GPUS: 5}),  # many-requests
        ([_exact(allocationMode="ExactCount", count=5)], {GPUS: 5}),  # count
        ([_exact()], {GPUS: 1}),  # kube's defaults: ExactCount, count 1
        ([_exact(allocationMode="All")], {GPUS: 32}),  # all
        ([_exact(allocationMode="future-mode")], {GPUS: 0}),  # unknown-count-mode
        ([_exact(count=1, adminAccess=True)], {GPUS: 1}),  # admin: not exempt
        ([_first({"count": 1})], {GPUS: 1}),  # prioritized-list
        ([_first({"count": 2}, {"count": 1})], {GPUS: 2}),  # multiple subrequests
        ([_first({"count": 1}, {"allocationMode": "All"})], {GPUS: 32}),
        (
            [_first({"count": 1}, {"deviceClassName": "tpu", "allocationMode": "All"})],
            {GPUS: 1, TPUS: 32},
        ),
    ],
    ids=[
        "simple",
        "many-requests",
        "count",
        "defaults",
        "all",
        "unknown-count-mode",
        "admin",
        "prioritized-list",
        "prioritized-list-multiple-subrequests",
        "prioritized-list-multiple-subrequests-allocation-mode-all",
        "prioritized-list-multiple-subrequests-different-device-classes",
    ],
)
def test_a_claim_is_charged_as_kubes_resourcequota_evaluator_counts_it(
    requests: list[dict[str, Any]], charged: dict[str, int]
) -> None:
    assert claim_devices(_spec(*requests)) == charged


def _template(name: str, count: int) -> ResourceClaimTemplate:
    return ResourceClaimTemplate.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"spec": {"devices": {"requests": [_exact(count=count)]}}},
        }
    )


def _claim(name: str, count: int) -> ResourceClaim:
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": [_exact(count=count)]}},
        }
    )


def _pod(
    entries: list[dict[str, str]], statuses: list[dict[str, str]] | None = None, uid: str = "p"
) -> PodInfo:
    return PodInfo.of(
        Pod.model_validate(
            {
                "metadata": {"name": "p", "namespace": "ns", "uid": uid},
                "spec": {"containers": [{"name": "c"}], "resourceClaims": entries},
                "status": {"resourceClaimStatuses": statuses} if statuses else {},
            }
        )
    )


def test_only_the_pods_own_claims_are_charged_the_claim_made_for_it_first() -> None:
    templates = {"ns/two": _template("two", 2), "ns/three": _template("three", 3)}
    made = {"ns/p-a-x": _claim("p-a-x", 4), "ns/shared": _claim("shared", 8)}
    pod = _pod(
        [
            {"name": "a", "resourceClaimTemplateName": "two"},  # made: its claim says 4
            {"name": "b", "resourceClaimTemplateName": "three"},  # not made yet: template
            {"name": "c", "resourceClaimName": "shared"},  # shared: not charged
            {"name": "d", "resourceClaimTemplateName": "two"},  # the controller made none
            {"name": "e", "resourceClaimTemplateName": "missing"},
        ],
        [{"name": "a", "resourceClaimName": "p-a-x"}, {"name": "d"}],
    )
    assert pod_devices(pod.pod, made, templates) == {GPUS: 4 + 3}


class _Cluster:
    def __init__(self, **kinds: dict[str, Any]) -> None:
        self.kinds = kinds

    def objects(self, kind: str) -> dict[str, Any]:
        return self.kinds.get(kind, {})


def test_the_charge_is_computed_once_per_pod_and_forgotten_when_it_goes() -> None:
    charges = DeviceCharges()
    pod = _pod([{"name": "a", "resourceClaimTemplateName": "two"}])
    cluster = _Cluster(ResourceClaimTemplate={"ns/two": _template("two", 2)})
    charges.learn(pod, cluster)  # type: ignore[arg-type]
    assert charges.charge(pod) == {**pod.requests, GPUS: 2}
    cluster.kinds["ResourceClaimTemplate"] = {"ns/two": _template("two", 5)}
    charges.learn(pod, cluster)  # type: ignore[arg-type]
    assert charges.devices(pod) == {GPUS: 2}  # stable for the pod's life
    charges.forget("p")
    charges.learn(pod, cluster)  # type: ignore[arg-type]
    assert charges.devices(pod) == {GPUS: 5}


QUOTA = f"""
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: ElasticQuota
metadata: {{name: gpus, namespace: default}}
spec:
  min: {{{GPUS}: "2"}}
  max: {{{GPUS}: "2"}}
"""


def _capacity(engine: Engine) -> CapacityScheduling:
    (found,) = [p for p in engine.profile.pre_filters if isinstance(p, CapacityScheduling)]
    return found


def test_a_quota_of_two_gpus_keeps_the_third_pending_until_one_goes() -> None:
    engine = Engine(dra_profile())
    docs = [CLASS_AND_TEMPLATE, QUOTA, node("n1", 4), *(gpu_pod(f"job-{i}", i) for i in range(3))]
    world = world_of(engine, objects(*docs))
    run(world, 30)
    assert bound(world) == {"job-0": "n1", "job-1": "n1"}  # two of the node's four GPUs
    # The plugin's words; DynamicResources' PostFilter (its PreFilter ran first and found the
    # claim) and DefaultPreemption (no lower-priority pod) follow, as in kube's chain.
    assert scheduled_message(world, "job-2") == (
        "0/1 nodes are available: Pod default/job-2 is rejected in PreFilter because "
        "ElasticQuota default is more than Max. still not schedulable, preemption: 0/1 nodes "
        "are available: 1 No preemption victims found for incoming pod."
    )
    quota = _capacity(engine).quota("default")
    assert quota is not None
    assert quota.used == {GPUS: 2, "cpu": 200}
    [line] = [r for r in engine.simulation_report() if r.startswith("ElasticQuota")]
    assert line == (
        f"ElasticQuota default/gpus: min {GPUS}=2; max {GPUS}=2; used {GPUS}=2; borrowed -"
    )
    # Only the made claims of the bound pods are allocated; the third's stays free.
    assert sorted(k for k, c in claims(world).items() if c.status and c.status.allocation) == [
        k for k in sorted(claims(world)) if not k.startswith("default/job-2-")
    ]
    delete(world, "job-0")
    assert quota.used[GPUS] == 1  # taken back exactly as added
    run(world, 60)
    assert bound(world) == {"job-1": "n1", "job-2": "n1"}
    assert quota.used[GPUS] == 2


HIGH = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def test_a_higher_priority_gpu_pod_preempts_one_gpu_pod_of_its_own_quota() -> None:
    """Above its min, the quota may only take lower-priority pods of its own namespace (the
    KEP's rule); one GPU pod frees the one GPU the preemptor is charged, so one goes."""
    engine = Engine(dra_profile())
    docs = [
        CLASS_AND_TEMPLATE,
        QUOTA,
        HIGH,
        node("n1", 4),
        gpu_pod("low-0", 0),
        gpu_pod("low-1", 1),
    ]
    world = world_of(engine, objects(*docs))
    run(world, 10)
    assert bound(world) == {"low-0": "n1", "low-1": "n1"}
    arrive(world, gpu_pod("urgent", 10, priority="high"))
    run(world, 120)
    [victim] = [str(p.metadata.name) for p in world.evicted]  # one GPU frees the one it needs
    kept = "low-1" if victim == "low-0" else "low-0"
    assert bound(world) == {kept: "n1", "urgent": "n1"}
    [preemption] = [r for r in engine.simulation_report() if r.startswith("preemption:")]
    assert preemption == (
        f"preemption: default/urgent on n1 evicted default/{victim} (ElasticQuota default "
        "above its min: lower-priority pods of default only)"
    )
    quota = _capacity(engine).quota("default")
    assert quota is not None and quota.used[GPUS] == 2
    # The victim's claim went with it: only the two bound pods' claims are left, allocated.
    left = claims(world)
    assert sorted(k.split("-gpu-")[0] for k in left) == [f"default/{kept}", "default/urgent"]
    assert all(c.status and c.status.allocation for c in left.values())
