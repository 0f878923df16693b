"""NodeVolumeLimits counts the node's VolumeAttachments as kube v1.36 does: a volume still
attached after its pod left keeps its slot; one also used by a pod there counts once; a pod's
volume attached there already costs nothing; attachments of inline volumes, of PVs not found or
not CSI do not count; preemption's victims do not free an attached volume; the requeue hint of
an attachment deleted."""

from __future__ import annotations

from typing import Any, cast

from apis.meta import KubeObject
from apis.volumeattachment import VolumeAttachment
from placement.pods.cluster.overlay import PodOverlay
from placement.pods.framework.events import ObjectEvent
from placement.pods.framework.interface import ClusterView, PodInfo
from plugins.pods.nodevolumelimits.node_volume_limits import (
    ERR_REASON_MAX_VOLUME_COUNT,
    NodeVolumeLimits,
)
from tests.plugins.pods.builders import everything, names, pod
from tests.plugins.pods.nodevolumelimits.test_nodevolumelimits import (
    EBS,
    LIMITS,
    NODES,
    bound,
    csi_pv,
    csinode,
    fits,
    user,
)
from tests.plugins.pods.volume_builders import Cluster, cycle_on


def attachment(
    name: str, node: str, pv: str | None = None, attacher: str = EBS, **source: Any
) -> VolumeAttachment:
    src: dict[str, Any] = {"persistentVolumeName": pv} if pv else source
    spec = {"attacher": attacher, "nodeName": node, "source": src}
    return VolumeAttachment.model_validate({"metadata": {"name": name}, "spec": spec})


def test_a_volume_attached_after_its_pod_left_keeps_its_slot() -> None:
    # a allows 1 volume, b 2: vol-1 is still attached to a (its pod is gone), vol-2 to b.
    objects: list[KubeObject] = [*LIMITS, *bound("d1", "vol-1"), *bound("d2", "vol-2")]
    objects += [*bound("d3", "vol-3"), attachment("va-1", "a", "pv-d1")]
    assert fits(objects, user("new", "d3")) == ["b", "c"]
    objects.append(attachment("va-2", "b", "pv-d2"))
    assert fits(objects, user("new", "d3")) == ["b", "c"]  # b: 1 attached + 1 of 2
    objects += [*bound("d4", "vol-4")]
    assert fits(objects, user("new", "d3", "d4")) == ["c"]
    # The pod whose volume is attached to a may go back there: it costs nothing more.
    assert fits(objects, user("back", "d1")) == ["a", "b", "c"]


def test_an_attached_volume_also_used_by_a_pod_there_counts_once() -> None:
    objects: list[KubeObject] = [*LIMITS, *bound("d1", "vol-1"), *bound("d2", "vol-2")]
    objects += [*bound("d3", "vol-3"), attachment("va-1", "b", "pv-d1")]
    running = [(user("r1", "d1"), "b")]
    # b holds vol-1 once (its pod and its attachment): one slot of 2 left.
    assert fits(objects, user("new", "d2"), running) == ["a", "b", "c"]
    objects.append(attachment("va-2", "b", "pv-d2"))
    assert fits(objects, user("new", "d3"), running) == ["a", "c"]


def test_attachments_kube_does_not_count() -> None:
    objects: list[KubeObject] = [*LIMITS, *bound("d1", "vol-1"), *bound("d2", "vol-2")]
    in_tree = csi_pv("pv-tree", "", awsElasticBlockStore={"volumeID": "vol-9"})
    inline: dict[str, Any] = {"inlineVolumeSpec": {"csi": {"driver": EBS, "volumeHandle": "vol-8"}}}
    objects += [
        in_tree,
        attachment("no-pv", "a", "pv-missing"),  # the PV is not found
        attachment("tree", "a", "pv-tree"),  # not a CSI PV
        attachment("inline", "a", **inline),  # an inline volume
        attachment("no-attacher", "a", "pv-d1", attacher=""),
    ]
    assert fits(objects, user("new", "d2")) == ["a", "b", "c"]
    # Another driver's attachment does not take an EBS slot.
    pd = [*bound("g", "disk-1", "pd.csi.storage.gke.io")]
    gce = [*objects, *pd, attachment("pd", "a", "pv-g", attacher="pd.csi.storage.gke.io")]
    assert fits(gce, user("new", "d2")) == ["a", "b", "c"]


def test_preemption_victims_do_not_free_an_attached_volume() -> None:
    objects: list[KubeObject] = [*LIMITS, *bound("d1", "vol-1"), *bound("d2", "vol-2")]
    running = [(user("victim", "d1"), "a")]
    gone = PodOverlay(removed=frozenset({"default/victim"}))
    assert fits(objects, user("new", "d2"), running, gone) == ["a", "b", "c"]
    objects.append(attachment("va-1", "a", "pv-d1"))
    assert fits(objects, user("new", "d2"), running, gone) == ["b", "c"]


def test_attachments_heard_as_events_are_kept_until_one_changes() -> None:
    objects: list[KubeObject] = [csinode("a", ebs_csi_aws_com=1), *bound("d1", "vol-1")]
    objects += [*bound("d2", "vol-2")]
    cluster = Cluster([*objects, attachment("va-1", "a", "pv-d1")])
    plugin, cycle, incoming = NodeVolumeLimits(), cycle_on(cluster), user("new", "d2")
    view = cast(ClusterView, cluster)
    plugin.on_event(ObjectEvent("Added", attachment("va-1", "a", "pv-d1")), view)

    def placed() -> list[str]:
        assert plugin.pre_filter(cycle, incoming, NODES).status.ok
        result = plugin.filter(cycle, incoming, NODES, everything(NODES))
        assert all(r.message == ERR_REASON_MAX_VOLUME_COUNT for r in result.reasons)
        return names(NODES, result.mask)

    assert placed() == ["b", "c"]
    held = cast(dict[str, KubeObject], cluster.objects("VolumeAttachment"))
    gone = held.pop("va-1")
    plugin.on_event(ObjectEvent("Deleted", gone), view)
    assert placed() == ["a", "b", "c"]


def test_an_attachment_deleted_requeues_the_refused_pods_kube_names() -> None:
    plugin = NodeVolumeLimits()
    limits = csinode("a", ebs_csi_aws_com=0, pd_csi_storage_gke_io=0)
    cluster = Cluster([limits, *bound("d1", "vol-1")])
    cycle, view = cycle_on(cluster), cast(ClusterView, cluster)
    gce = {"name": "g", "gcePersistentDisk": {"pdName": "disk"}}
    waiting: list[PodInfo] = [
        user("claimer", "d1"),
        pod("gce", volumes=[gce]),
        pod("ephemeral", volumes=[{"name": "e", "ephemeral": {"volumeClaimTemplate": {}}}]),
    ]
    for info in waiting:
        if plugin.pre_filter(cycle, info, NODES).status.ok:
            assert plugin.filter(cycle, info, NODES, everything(NODES)).reasons
    by_pv = attachment("va", "x", "pv-other", attacher="any")
    # A claim may be the one detached (kube does not look further); the others wait.
    assert plugin.on_event(ObjectEvent("Deleted", by_pv), view) == {"default/claimer"}
    assert plugin.on_event(ObjectEvent("Deleted", by_pv), view) == set()
    ebs: dict[str, Any] = {"inlineVolumeSpec": {"csi": {"driver": EBS}}}
    assert plugin.on_event(ObjectEvent("Deleted", attachment("e", "x", **ebs)), view) == set()
    pd: dict[str, Any] = {"inlineVolumeSpec": {"csi": {"driver": "pd.csi.storage.gke.io"}}}
    assert plugin.on_event(ObjectEvent("Deleted", attachment("p", "x", **pd)), view) == {
        "default/gce"
    }
    assert not plugin.on_event(ObjectEvent("Added", by_pv), view)
