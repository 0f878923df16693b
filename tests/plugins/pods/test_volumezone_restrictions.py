"""VolumeZone (a bound volume's zone and region labels against the node's) and
VolumeRestrictions (a ReadWriteOncePod claim used by one pod, preemption seen through the
snapshot's overlay)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from placement.pods.cluster.overlay import PodOverlay
from placement.pods.framework.interface import PodCode, PodInfo
from plugins.pods.volumerestrictions.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from plugins.pods.volumezone.volume_zone import ERR_REASON_CONFLICT, VolumeZone
from tests.plugins.pods.builders import everything, names, node, pod, snapshot
from tests.plugins.pods.volume_builders import (
    Cluster,
    claim,
    cycle_on,
    local_pv,
    storage_class,
    with_claims,
)

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
ZONED = snapshot(
    [
        node("a", labels={ZONE: "z1", REGION: "r1"}),
        node("b", labels={ZONE: "z2", REGION: "r1"}),
        node("c", labels={BETA_ZONE: "z3"}),
        node("d"),  # no topology label: kube lets it pass
    ]
)


def zone_filter(pv_labels: dict[str, str]) -> list[str]:
    cluster = Cluster([claim("data", volume="pv"), local_pv("pv", None, labels=pv_labels)])
    cycle, info = cycle_on(cluster), with_claims("p", "data")
    plugin = VolumeZone()
    assert plugin.pre_filter(cycle, info, ZONED).status.ok
    result = plugin.filter(cycle, info, ZONED, everything(ZONED))
    for reason in result.reasons:
        assert reason.message == ERR_REASON_CONFLICT and not reason.resolvable
    return names(ZONED, result.mask)


@pytest.mark.parametrize(
    ("labels", "fits"),
    [
        ({ZONE: "z2"}, ["b", "d"]),
        ({ZONE: "z1__z3"}, ["a", "d"]),  # node c has only the beta key: no GA zone to match
        ({BETA_ZONE: "z3"}, ["c", "d"]),
        ({BETA_ZONE: "z1"}, ["a", "d"]),  # the beta key on the volume matches the GA one
        ({REGION: "r1"}, ["a", "b", "d"]),
        ({ZONE: "z1", REGION: "r2"}, ["d"]),
    ],
)
def test_volume_zone_keeps_the_nodes_of_the_volumes_zone(
    labels: dict[str, str], fits: list[str]
) -> None:
    assert zone_filter(labels) == fits


def test_volume_zone_skips_unlabelled_volumes_and_unbound_delayed_claims() -> None:
    cluster = Cluster(
        [storage_class(), claim("late"), claim("data", volume="pv"), local_pv("pv", None)]
    )
    status = (
        VolumeZone().pre_filter(cycle_on(cluster), with_claims("p", "late", "data"), ZONED).status
    )
    assert status.code == PodCode.SKIP


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ([], 'persistentvolumeclaim "data" not found'),
        ([claim("data", cls=None)], "PersistentVolumeClaim had no pv name and storageClass name"),
        ([claim("data", cls="x")], 'storageclass.storage.k8s.io "x" not found'),
        ([claim("data"), storage_class(mode="Immediate")], "PersistentVolume had no name"),
        ([claim("data", volume="pv")], 'persistentvolume "pv" not found'),
    ],
)
def test_volume_zone_messages(objects: list[object], message: str) -> None:
    cycle = cycle_on(Cluster(objects))  # type: ignore[arg-type]
    status = VolumeZone().pre_filter(cycle, with_claims("p", "data"), ZONED).status
    assert (status.code, status.message) == (PodCode.UNRESOLVABLE, message)


# --- VolumeRestrictions ------------------------------------------------------------------------

NODES = snapshot([node("a"), node("b"), node("c")])
RWOP = ("ReadWriteOncePod",)


def restricted(cluster: Cluster, overlay: PodOverlay | None = None) -> tuple[list[str], object]:
    plugin, cycle, info = VolumeRestrictions(), cycle_on(cluster), with_claims("new", "db")
    pre = plugin.pre_filter(cycle, info, NODES)
    if pre.status.code == PodCode.SKIP:
        return ["a", "b", "c"], None
    assert pre.status.ok
    nodes = dataclasses.replace(NODES, overlay=overlay) if overlay else NODES
    result = plugin.filter(cycle, info, nodes, everything(NODES))
    return names(NODES, result.mask), result


def test_a_read_write_once_pod_claim_in_use_fails_every_node_resolvably() -> None:
    user = with_claims("old", "db", priority=0)
    fits, result = restricted(Cluster([claim("db", modes=RWOP)], [(user, "b")]))
    assert fits == []
    (reason,) = result.reasons  # type: ignore[attr-defined]
    assert reason.message == ERR_REASON_RWOP_CONFLICT and reason.resolvable
    assert ERR_REASON_RWOP_CONFLICT == (
        "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod"
        " access mode"
    )


def test_other_access_modes_and_unused_claims_do_not_restrict() -> None:
    user = with_claims("old", "db")
    assert restricted(Cluster([claim("db")], [(user, "b")]))[0] == ["a", "b", "c"]
    assert restricted(Cluster([claim("db", modes=RWOP)]))[0] == ["a", "b", "c"]
    other_ns = with_claims("old", "db", namespace="elsewhere")
    assert restricted(Cluster([claim("db", modes=RWOP)], [(other_ns, "b")]))[0] == ["a", "b", "c"]


def test_a_missing_claim_is_unresolvable() -> None:
    status = (
        VolumeRestrictions().pre_filter(cycle_on(Cluster([])), with_claims("p", "db"), NODES).status
    )
    assert (status.code, status.message) == (
        PodCode.UNRESOLVABLE,
        'persistentvolumeclaim "db" not found',
    )


def test_preemption_overlay_frees_the_claim_only_on_the_users_node() -> None:
    user = with_claims("old", "db", priority=0)
    cluster = Cluster([claim("db", modes=RWOP)], [(user, "b")])
    below = np.full(3, np.iinfo(np.int64).min, dtype=np.int64)
    below[:] = 10  # every pod below priority 10 gone from each hypothetical node
    assert restricted(cluster, PodOverlay().below_priority(below))[0] == ["b"]
    assert restricted(cluster, PodOverlay(removed=frozenset({user.key})))[0] == ["a", "b", "c"]
    nominated = with_claims("nominee", "db")
    overlay = PodOverlay(removed=frozenset({user.key})).adding([(2, nominated)])
    assert restricted(cluster, overlay)[0] == ["a", "b"]


def with_disk(name: str, source: dict[str, object], **spec: Any) -> PodInfo:
    return pod(name, volumes=[{"name": "disk", **source}], **spec)


@pytest.mark.parametrize(
    ("mine", "theirs", "conflicts"),
    [
        ({"gcePersistentDisk": {"pdName": "d"}}, {"gcePersistentDisk": {"pdName": "d"}}, True),
        (
            {"gcePersistentDisk": {"pdName": "d", "readOnly": True}},
            {"gcePersistentDisk": {"pdName": "d", "readOnly": True}},
            False,
        ),
        ({"gcePersistentDisk": {"pdName": "d"}}, {"gcePersistentDisk": {"pdName": "e"}}, False),
        (
            {"awsElasticBlockStore": {"volumeID": "v", "readOnly": True}},
            {"awsElasticBlockStore": {"volumeID": "v", "readOnly": True}},
            True,
        ),
        (
            {"iscsi": {"iqn": "q", "targetPortal": "t", "lun": 0, "readOnly": True}},
            {"iscsi": {"iqn": "q", "targetPortal": "t", "lun": 0}},
            True,
        ),
        (
            {"rbd": {"monitors": ["m1", "m2"], "image": "i"}},
            {"rbd": {"monitors": ["m2"], "image": "i", "pool": "rbd"}},
            True,
        ),
        (
            {"rbd": {"monitors": ["m1"], "image": "i"}},
            {"rbd": {"monitors": ["m2"], "image": "i"}},
            False,
        ),
    ],
    ids=["gce", "gce-read-only", "gce-other", "ebs", "iscsi", "rbd", "rbd-other-monitors"],
)
def test_inline_disks_conflict_on_the_node_that_runs_them(
    mine: dict[str, object], theirs: dict[str, object], conflicts: bool
) -> None:
    other = with_disk("old", theirs, priority=0)
    cluster = Cluster([], [(other, "b")])
    plugin, cycle, info = VolumeRestrictions(), cycle_on(cluster), with_disk("new", mine)
    assert plugin.pre_filter(cycle, info, NODES).status.ok
    result = plugin.filter(cycle, info, NODES, everything(NODES))
    assert names(NODES, result.mask) == (["a", "c"] if conflicts else ["a", "b", "c"])
    if conflicts:
        (reason,) = result.reasons
        assert (reason.message, reason.resolvable) == (ERR_REASON_DISK_CONFLICT, True)
        assert ERR_REASON_DISK_CONFLICT == "node(s) had no available disk"
        below = np.full(3, 10, dtype=np.int64)  # preemption: the user gone from its node
        gone = dataclasses.replace(NODES, overlay=PodOverlay().below_priority(below))
        freed = plugin.filter(cycle, info, gone, everything(NODES))
        assert names(NODES, freed.mask) == ["a", "b", "c"]
