"""DynamicResources' points one by one, with kube v1.36's words: PreEnqueue and PreFilter's
claim lookup, PreFilter's refusals, PostFilter's answers, Reserve/PreBind/Unreserve's
bookkeeping of the devices in flight, and the events that end it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from apis.core import Pod
from apis.resource import ResourceClaim
from placement.pods.framework.events import AllocateClaims, ObjectEvent
from placement.pods.framework.interface import PodCode, PodCycle, PodInfo
from placement.pods.framework.results import Diagnosis
from plugins.pods.dynamicresources.dynamicresources import DynamicResources
from tests.placement.pods.test_engine import make_node

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Cluster:
    def __init__(self, **kinds: dict[str, Any]) -> None:
        self.kinds = kinds

    def objects(self, kind: str) -> dict[str, Any]:
        return self.kinds.get(kind, {})


def _claim(name: str, owner: str | None = None, **status: Any) -> ResourceClaim:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": owner, "controller": True}
        ]
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
    return ResourceClaim.model_validate({"metadata": meta, "spec": spec, "status": status or None})


def _pod(entry: dict[str, str], statuses: list[dict[str, str]] | None = None) -> PodInfo:
    pod = Pod.model_validate(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "p"},
            "spec": {"containers": [{"name": "c"}], "resourceClaims": [{"name": "gpu", **entry}]},
            "status": {"resourceClaimStatuses": statuses} if statuses else {},
        }
    )
    return PodInfo.of(pod)


class Backend:
    """Every node fits; allocation hands out `dev-<claim>`."""

    def __init__(self) -> None:
        self.slices: list[str] = []

    def update_slice(self, name: str, slice: Any) -> None:
        self.slices.append(name)

    def update_class(self, name: str, cls: Any) -> None:
        pass

    def prepare(self, claims: Any) -> Any:
        return list(claims)

    def feasible(self, prepared: Any, nodes: Any, candidates: Any, in_use: Any) -> Any:
        free = not any(f"dev-{c.metadata.name}" in in_use for c in prepared)
        return (candidates & free), {}

    def allocate(self, prepared: Any, node: str, labels: Any, in_use: Any) -> Any:
        return [
            {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "d",
                            "pool": node,
                            "device": f"dev-{c.metadata.name}",
                        }
                    ]
                }
            }
            for c in prepared
        ]

    def allocated_devices(self, claim: ResourceClaim) -> set[Any]:
        alloc = claim.status.allocation if claim.status else None
        results = (alloc.devices.results if alloc and alloc.devices else None) or []
        return {r.device for r in results}


def _cycle(cluster: Cluster) -> PodCycle:
    return PodCycle(T0, cluster, None)  # type: ignore[arg-type]


GPU_CLASS = {"gpu": object()}


@pytest.mark.parametrize(
    ("entry", "statuses", "claims", "message"),
    [
        (
            {"resourceClaimTemplateName": "t"},
            None,
            {},
            'pod "default/p": ResourceClaim not created yet',
        ),
        ({"resourceClaimName": "c"}, None, {}, 'could not find ResourceClaim "default/c"'),
        (
            {"resourceClaimTemplateName": "t"},
            [{"name": "gpu", "resourceClaimName": "c"}],
            {"default/c": _claim("c", owner="other")},
            "ResourceClaim default/c was not created for pod default/p (pod is not owner)",
        ),
        (
            {},
            None,
            {},
            'pod "default/p", spec.resourceClaim "gpu": none of the supported fields are set',
        ),
    ],
)
def test_pre_enqueue_and_pre_filter_hold_a_pod_whose_claim_is_not_there(
    entry: dict[str, str], statuses: Any, claims: dict[str, Any], message: str
) -> None:
    plugin = DynamicResources(None, Backend())
    cluster = Cluster(ResourceClaim=claims, DeviceClass=GPU_CLASS)
    pod = _pod(entry, statuses)
    assert plugin.pre_enqueue(pod, cluster) == message  # type: ignore[arg-type]
    result = plugin.pre_filter(_cycle(cluster), pod, _nodes())
    assert (result.status.code, result.status.message) == (PodCode.UNRESOLVABLE, message)


def _nodes() -> Any:
    from placement.pods.cluster.nodes import NodeTable

    table = NodeTable()
    for name in ("n1", "n2"):
        table.put_node(make_node(name))
    return table.snapshot()


def test_a_claim_made_for_no_one_is_skipped_and_a_missing_class_waits() -> None:
    plugin = DynamicResources(None, Backend())
    cluster = Cluster(ResourceClaim={"default/c": _claim("c")})
    pod = _pod({"resourceClaimName": "c"})
    result = plugin.pre_filter(_cycle(cluster), pod, _nodes())
    assert result.status.message == "request gpu: device class gpu does not exist"
    assert result.status.code == PodCode.UNRESOLVABLE
    skipped = _pod({"resourceClaimTemplateName": "t"}, [{"name": "gpu"}])
    assert plugin.pre_enqueue(skipped, cluster) is None  # type: ignore[arg-type]
    assert plugin.pre_filter(_cycle(cluster), skipped, _nodes()).status.code == PodCode.SKIP


def test_post_filter_says_what_kube_says() -> None:
    plugin = DynamicResources(None, Backend())
    nodes = _nodes()
    diagnosis = Diagnosis(total_nodes=2, counts={}, resolvable=np.zeros(2, dtype=bool))
    cycle = _cycle(Cluster())
    pod = _pod({"resourceClaimName": "c"})
    assert plugin.post_filter(cycle, pod, nodes, diagnosis).status.message == "not found"
    plain = PodInfo.of(Pod.model_validate({"metadata": {"name": "q"}, "spec": {"containers": []}}))
    plugin.pre_filter(cycle, plain, nodes)
    answer = plugin.post_filter(cycle, plain, nodes, diagnosis).status
    assert (answer.code, answer.message) == (PodCode.UNSCHEDULABLE, "no new claims to deallocate")


def test_reserve_keeps_the_devices_in_flight_until_the_claim_is_seen_allocated() -> None:
    backend = Backend()
    plugin = DynamicResources(None, backend)
    claim = _claim("c")
    cluster = Cluster(ResourceClaim={"default/c": claim}, DeviceClass=GPU_CLASS)
    pod = _pod({"resourceClaimName": "c"})
    nodes = _nodes()
    cycle = _cycle(cluster)
    assert plugin.pre_filter(cycle, pod, nodes).status.ok
    fits = plugin.filter(cycle, pod, nodes, np.ones(2, dtype=bool))
    assert fits.mask.tolist() == [True, True]
    assert plugin.reserve(cycle, pod, "n2").ok
    assert plugin.in_use() == {"dev-c"} and plugin.in_flight() == {"default/c": "default/p"}
    (action,) = plugin.pre_bind(cycle, pod, "n2").actions
    assert isinstance(action, AllocateClaims) and action.node == "n2"
    (write,) = action.claims
    assert (write.key, write.uid) == ("default/c", "uid-c")
    assert write.allocation is not None
    # Another pod of the same claim waits while the allocation is in flight.
    other = PodInfo.of(
        _pod({"resourceClaimName": "c"}).pod.model_copy(
            update={"metadata": _pod({}).pod.metadata.model_copy(update={"name": "o", "uid": "o"})}
        )
    )
    refused = plugin.pre_filter(_cycle(cluster), other, nodes).status
    assert refused.message == "resource claim default/c is in the process of being allocated"
    allocated = _claim(
        "c",
        allocation=write.allocation,
        reservedFor=[{"resource": "pods", "name": "p", "uid": "p"}],
    )
    assert plugin.on_event(ObjectEvent("Modified", allocated), cluster) is True  # type: ignore[arg-type]
    assert plugin.in_flight() == {} and plugin.in_use() == {"dev-c"}
    plugin.unreserve(cycle, pod, "n2")  # nothing left to forget
    deallocated = _claim("c")
    assert plugin.on_event(ObjectEvent("Modified", deallocated), cluster) is True  # type: ignore[arg-type]
    assert plugin.in_use() == frozenset()


def test_unreserve_forgets_the_flight() -> None:
    plugin = DynamicResources(None, Backend())
    cluster = Cluster(ResourceClaim={"default/c": _claim("c")}, DeviceClass=GPU_CLASS)
    pod = _pod({"resourceClaimName": "c"})
    cycle = _cycle(cluster)
    plugin.pre_filter(cycle, pod, _nodes())
    plugin.reserve(cycle, pod, "n1")
    plugin.unreserve(cycle, pod, "n1")
    assert plugin.in_use() == frozenset() and plugin.in_flight() == {}
