"""NodeVolumeLimits: CSINode attach limits per driver, the distinct volumes of a node's pods
counted once, unbound claims counted by their class's provisioner, in-tree volumes counted as
the CSI driver they migrate to, no CSINode no limit; preemption's overlay; requeue hints."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np

from apis.csinode import CSINode
from apis.meta import KubeObject
from apis.storage import PersistentVolume
from placement.pods.cluster.overlay import PodOverlay
from placement.pods.framework.events import ASSIGNED_POD_DELETE, NODE_ADD_OR_UPDATE, ObjectEvent
from placement.pods.framework.interface import ClusterView, PodCode, PodInfo
from plugins.pods.nodevolumelimits.node_volume_limits import (
    ERR_REASON_MAX_VOLUME_COUNT,
    NodeVolumeLimits,
)
from tests.plugins.pods.builders import everything, names, node, pod, snapshot
from tests.plugins.pods.volume_builders import Cluster, claim, cycle_on, storage_class

EBS = "ebs.csi.aws.com"
NODES = snapshot([node("a"), node("b"), node("c")])


def csinode(name: str, **limits: int | None) -> CSINode:
    """`limits`: driver (dots as `_`) -> count (None: the driver without a count)."""
    drivers = []
    for driver, count in limits.items():
        entry: dict[str, Any] = {"name": driver.replace("_", "."), "nodeID": f"id-{name}"}
        if count is not None:
            entry["allocatable"] = {"count": count}
        drivers.append(entry)
    return CSINode.model_validate({"metadata": {"name": name}, "spec": {"drivers": drivers}})


def csi_pv(name: str, handle: str, driver: str = EBS, **source: Any) -> PersistentVolume:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
    spec |= source or {"csi": {"driver": driver, "volumeHandle": handle}}
    return PersistentVolume.model_validate({"metadata": {"name": name}, "spec": spec})


def bound(name: str, handle: str, driver: str = EBS) -> list[KubeObject]:
    """A claim `name` bound to a CSI volume `pv-<name>` of `handle`."""
    return [claim(name, cls="ebs", volume=f"pv-{name}"), csi_pv(f"pv-{name}", handle, driver)]


def user(name: str, *claims: str, **spec: Any) -> PodInfo:
    volumes = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return pod(name, volumes=volumes, **spec)


def fits(
    objects: list[KubeObject],
    incoming: PodInfo,
    running: list[tuple[PodInfo, str]] = (),  # type: ignore[assignment]
    overlay: PodOverlay | None = None,
) -> list[str]:
    cluster = Cluster(objects, running)
    plugin, cycle = NodeVolumeLimits(), cycle_on(cluster)
    pre = plugin.pre_filter(cycle, incoming, NODES)
    if pre.status.code == PodCode.SKIP:
        return ["a", "b", "c"]
    assert pre.status.ok
    nodes = dataclasses.replace(NODES, overlay=overlay) if overlay else NODES
    result = plugin.filter(cycle, incoming, nodes, everything(NODES))
    for reason in result.reasons:
        assert reason.resolvable
        assert reason.message in (ERR_REASON_MAX_VOLUME_COUNT,)
    return names(NODES, result.mask)


LIMITS: list[KubeObject] = [csinode("a", ebs_csi_aws_com=1), csinode("b", ebs_csi_aws_com=2)]


def test_a_node_at_its_attach_limit_refuses_one_more_volume_of_the_driver() -> None:
    objects = [*LIMITS, *bound("d1", "vol-1"), *bound("d2", "vol-2"), *bound("d3", "vol-3")]
    running = [(user("r1", "d1"), "a"), (user("r2", "d2"), "b")]
    # a holds 1 of 1, b 1 of 2, c has no CSINode: no limit there.
    assert fits(objects, user("new", "d3"), running) == ["b", "c"]
    # Two new volumes: b would hold 3 of 2.
    objects += bound("d4", "vol-4")
    assert fits(objects, user("new", "d3", "d4"), running) == ["c"]
    assert ERR_REASON_MAX_VOLUME_COUNT == "node(s) exceed max volume count"


def test_a_volume_shared_with_a_pod_on_the_node_costs_no_slot() -> None:
    objects = [*LIMITS, *bound("d1", "vol-1")]
    running = [(user("r1", "d1"), "a")]
    assert fits(objects, user("reader", "d1"), running) == ["a", "b", "c"]
    # Two claims of one volume handle are one volume; the same claim twice in a pod too.
    objects += [claim("alias", cls="ebs", volume="pv-alias"), csi_pv("pv-alias", "vol-1")]
    assert fits(objects, user("reader", "alias", "alias"), running) == ["a", "b", "c"]


def test_an_unbound_claim_counts_as_a_volume_of_its_class_provisioner() -> None:
    ebs = storage_class("ebs", provisioner=EBS)
    objects = [*LIMITS, ebs, claim("pending-1", cls="ebs"), claim("pending-2", cls="ebs")]
    running = [(user("r1", "pending-1"), "a")]
    assert fits(objects, user("new", "pending-2"), running) == ["b", "c"]
    # The same unbound claim is one volume wherever it is counted.
    assert fits(objects, user("twin", "pending-1"), running) == ["a", "b", "c"]
    # Without a class, or of a class not found, a claim is not counted (kube: it must bind
    # before scheduling); a class of another driver counts against that driver only.
    others = [*LIMITS, claim("bare", cls=None), claim("lost", cls="gone")]
    assert fits(others, user("new", "bare", "lost"), [(user("r1", "bare"), "a")]) == ["a", "b", "c"]
    nfs = [*LIMITS, storage_class("nfs", provisioner="nfs.csi.k8s.io"), claim("n", cls="nfs")]
    assert fits(nfs, user("new", "n"), [(user("r1", "n"), "a")]) == ["a", "b", "c"]


def test_no_csinode_or_no_count_for_the_driver_means_no_limit() -> None:
    objects: list[KubeObject] = [
        csinode("a", ebs_csi_aws_com=None),  # the driver registered, no count
        csinode("b", pd_csi_storage_gke_io=0),  # a count for another driver
        *bound("d1", "vol-1"),
        *bound("d2", "vol-2"),
    ]
    running = [(user("r1", "d1"), n) for n in ("a", "b", "c")]
    assert fits(objects, user("new", "d2"), running) == ["a", "b", "c"]
    # A count of 0 refuses every volume of its driver.
    gce = [csinode("b", pd_csi_storage_gke_io=0), *bound("g", "disk-1", "pd.csi.storage.gke.io")]
    assert fits(gce, user("new", "g")) == ["a", "c"]


def test_in_tree_volumes_count_as_the_csi_driver_they_migrate_to() -> None:
    ebs_pv = csi_pv("pv-tree", "", awsElasticBlockStore={"volumeID": "aws://eu-west-1a/vol-9"})
    objects = [*LIMITS, claim("tree", cls="", volume="pv-tree"), ebs_pv]
    assert fits(objects, user("new", "tree"), [(user("r1", "tree"), "a")]) == ["a", "b", "c"]
    # The same disk written inline, by its bare id: one volume with the PV's.
    inline = pod("inline", volumes=[{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-9"}}])
    assert fits(objects, inline, [(user("r1", "tree"), "a")]) == ["a", "b", "c"]
    other = pod("other", volumes=[{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-8"}}])
    assert fits(objects, other, [(user("r1", "tree"), "a")]) == ["b", "c"]
    # An in-tree provisioner counts as its CSI driver; azure-file is translated, not counted.
    classes = [storage_class("gp2", provisioner="kubernetes.io/aws-ebs")]
    classes += [storage_class("files", provisioner="kubernetes.io/azure-file")]
    objects = [
        *LIMITS,
        *classes,
        claim("x", cls="gp2"),
        claim("y", cls="gp2"),
        claim("f", cls="files"),
    ]
    assert fits(objects, user("new", "y"), [(user("r1", "x"), "a")]) == ["b", "c"]
    assert fits(objects, user("new", "f"), [(user("r1", "x"), "a")]) == ["a", "b", "c"]


def test_a_pod_without_countable_volumes_skips_and_a_missing_claim_is_unresolvable() -> None:
    plugin, cycle = NodeVolumeLimits(), cycle_on(Cluster(LIMITS))
    for plain in (pod("bare"), pod("cm", volumes=[{"name": "c", "configMap": {"name": "x"}}])):
        assert plugin.pre_filter(cycle, plain, NODES).status.code == PodCode.SKIP
    inline_csi = pod("i", volumes=[{"name": "c", "csi": {"driver": EBS}}])  # kube: not counted
    assert plugin.pre_filter(cycle, inline_csi, NODES).status.code == PodCode.SKIP
    missing = user("new", "nope")
    assert plugin.pre_filter(cycle, missing, NODES).status.ok
    result = plugin.filter(cycle, missing, NODES, everything(NODES))
    assert names(NODES, result.mask) == []
    (reason,) = result.reasons
    assert not reason.resolvable
    assert reason.message == 'looking up PVC default/nope: persistentvolumeclaim "nope" not found'


def test_preemption_victims_free_their_volumes_and_nominated_pods_hold_theirs() -> None:
    objects = [*LIMITS, *bound("d1", "vol-1"), *bound("d2", "vol-2"), *bound("d3", "vol-3")]
    victim = user("victim", "d1")
    running = [(victim, "a")]
    assert fits(objects, user("new", "d2"), running) == ["b", "c"]
    gone = PodOverlay(removed=frozenset({victim.key}))
    assert fits(objects, user("new", "d2"), running, gone) == ["a", "b", "c"]
    # A nominated pod on b takes b's second slot; one on a adds nothing new for d1's sharer.
    nominated = PodOverlay().adding([(1, user("nominee", "d3"))])
    assert fits(objects, user("new", "d2"), [(user("r", "d1"), "b")], nominated) == ["a", "c"]


def test_requeue_hints_follow_kubes_registered_events() -> None:
    plugin = NodeVolumeLimits()
    assert plugin.requeue_on == {ASSIGNED_POD_DELETE}
    assert NODE_ADD_OR_UPDATE not in plugin.requeue_on
    cluster = cast(ClusterView, Cluster(()))
    assert plugin.on_event(ObjectEvent("Added", csinode("a", ebs_csi_aws_com=1)), cluster)
    raised = ObjectEvent("Modified", csinode("a", ebs_csi_aws_com=3))
    assert plugin.on_event(raised, cluster)
    lowered = ObjectEvent("Modified", csinode("a", ebs_csi_aws_com=2))
    assert not plugin.on_event(lowered, cluster)
    dropped = ObjectEvent("Modified", csinode("a", ebs_csi_aws_com=None))
    assert plugin.on_event(dropped, cluster)  # no count: no limit any more
    assert not plugin.on_event(ObjectEvent("Deleted", csinode("a")), cluster)
    assert not plugin.on_event(ObjectEvent("Modified", claim("c")), cluster)
    # A claim added moves only the refused pods that use it (kube's isSchedulableAfterPVCAdded).
    assert not plugin.on_event(ObjectEvent("Added", claim("c")), cluster)
    full = Cluster(
        [*LIMITS, *bound("d1", "vol-1"), *bound("d2", "vol-2")], [(user("r", "d1"), "a")]
    )
    cycle, waiting = cycle_on(full), user("waiting", "d2", "later")
    objects = cast(dict[str, KubeObject], full.objects("PersistentVolumeClaim"))
    objects["default/later"] = claim("later", cls="ebs", volume="pv-d2")
    only_a = np.array([True, False, False])
    assert plugin.pre_filter(cycle, waiting, NODES).status.ok
    assert not plugin.filter(cycle, waiting, NODES, only_a).mask.any()
    assert not plugin.on_event(ObjectEvent("Added", claim("other")), cluster)
    assert plugin.on_event(ObjectEvent("Added", claim("later")), cluster) == {waiting.key}


def test_the_attached_counts_follow_pods_counted_and_uncounted() -> None:
    objects = [*LIMITS, *bound("d1", "vol-1"), *bound("d2", "vol-2"), *bound("d3", "vol-3")]
    first, shared = user("r1", "d1"), user("r2", "d1")
    cluster = Cluster(objects, [(first, "a"), (shared, "a")])
    plugin, cycle, incoming = NodeVolumeLimits(), cycle_on(cluster), user("new", "d2")
    assert plugin.pre_filter(cycle, incoming, NODES).status.ok

    def fitting() -> list[str]:
        cycle.scratch.clear()
        return names(NODES, plugin.filter(cycle, incoming, NODES, everything(NODES)).mask)

    assert fitting() == ["b", "c"]
    cluster.counted.remove(first.key)  # vol-1 still used by r2 on a
    assert fitting() == ["b", "c"]
    cluster.counted.remove(shared.key)  # a has no volume left
    assert fitting() == ["a", "b", "c"]
    cluster.counted.add(user("r3", "d3"), "b")
    cluster.counted.add(user("r4", "d1"), "b")  # b: 2 of 2
    assert fitting() == ["a", "c"]
    # A claim event makes the index resolve every pod again: d1 now names vol-3, one volume.
    moved = claim("d1", cls="ebs", volume="pv-d3")
    cast(dict[str, KubeObject], cluster.objects("PersistentVolumeClaim"))["default/d1"] = moved
    plugin.on_event(ObjectEvent("Modified", moved), cast(ClusterView, cluster))
    assert fitting() == ["a", "b", "c"]
