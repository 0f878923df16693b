"""Handing a hub over from OCM's placement controller (docs/replacing-ocm.md): our controller
adopts the PlacementDecisions and Placement status OCM's wrote, and writes nothing when the
fleet has not changed.

The objects are written here the way OCM's scheduling controller writes them, from its code
(`pkg/placement/controllers/scheduling`), not from ours: PlacementDecision `<placement>-
decision-<k>` (k from 1), labels `cluster.open-cluster-management.io/placement`,
`.../decision-group-name` and `.../decision-group-index`, one controller ownerReference made by
`metav1.NewControllerRef` (controller and blockOwnerDeletion true), at most 100 decisions per
object, sorted by cluster name, each with `reason: ""`; the Placement status with
`numberOfSelectedClusters`, `decisionGroups` and the two conditions with OCM's reasons and
messages. The hub is changed in-process, so the server's audit log shows only the controller's
requests.
"""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Namespace
from apis.meta import ObjectMeta
from apis.placements import Placement, PlacementDecision
from apis.registry import parse_object
from controllers.embedded import AuditEntry, EmbeddedApiServer
from placement.testing import cluster, global_set, placement, predicate
from tests.controllers.hub.controller_hub import hub

pytestmark = pytest.mark.asyncio

OCM = "cluster.open-cluster-management.io"
APPS = "apps"
CLUSTERS = [f"c{i:03d}" for i in range(150)]
TRANSITION = "2026-11-01T08:00:00Z"


def ocm_decisions(server: EmbeddedApiServer, name: str, clusters: list[str]) -> list[Any]:
    """The PlacementDecisions OCM writes for placement `name` selecting `clusters` (one
    unnamed decision group)."""
    uid = next(
        p["metadata"]["uid"]
        for r in server.resources
        if r.kind == "Placement"
        for p in server.store.list(r, APPS, None)
        if p["metadata"]["name"] == name
    )
    ordered = sorted(clusters)
    pages = [ordered[i : i + 100] for i in range(0, len(ordered), 100)] or [[]]
    return [
        parse_object(
            {
                "apiVersion": f"{OCM}/v1beta1",
                "kind": "PlacementDecision",
                "metadata": {
                    "name": f"{name}-decision-{k}",
                    "namespace": APPS,
                    "labels": {
                        f"{OCM}/placement": name,
                        f"{OCM}/decision-group-name": "",
                        f"{OCM}/decision-group-index": "0",
                    },
                    "ownerReferences": [
                        {
                            "apiVersion": f"{OCM}/v1beta1",
                            "kind": "Placement",
                            "name": name,
                            "uid": uid,
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "status": {"decisions": [{"clusterName": c, "reason": ""} for c in page]},
            }
        )
        for k, page in enumerate(pages, start=1)
    ]


def ocm_status(name: str, clusters: list[str]) -> dict[str, Any]:
    pages = max(1, -(-len(clusters) // 100))
    return {
        "numberOfSelectedClusters": len(clusters),
        "decisionGroups": [
            {
                "decisionGroupIndex": 0,
                "decisionGroupName": "",
                "decisions": [f"{name}-decision-{k}" for k in range(1, pages + 1)],
                "clusterCount": len(clusters),
            }
        ],
        "conditions": [
            {
                "type": "PlacementMisconfigured",
                "status": "False",
                "reason": "Succeedconfigured",
                "message": "Placement configurations check pass",
                "lastTransitionTime": TRANSITION,
            },
            {
                "type": "PlacementSatisfied",
                "status": "True",
                "reason": "AllDecisionsScheduled",
                "message": "All cluster decisions scheduled",
                "lastTransitionTime": TRANSITION,
            },
        ],
    }


def with_status(obj: Placement, status: dict[str, Any]) -> Any:
    return parse_object({**obj.to_wire(), "status": status})


async def test_a_hub_scheduled_by_ocm_is_adopted_without_a_single_write() -> None:
    async with hub() as h:
        server = h.server
        wide = CLUSTERS  # every cluster: two PlacementDecisions
        gold = CLUSTERS[:3]
        server.add(
            [
                Namespace(metadata=ObjectMeta(name=APPS)),
                *(cluster(n, labels={"tier": "gold" if n in gold else "std"}) for n in CLUSTERS),
                *global_set(APPS),
            ]
        )
        every = placement(APPS, "every")
        golden = placement(APPS, "golden", predicates=[predicate(labels={"tier": "gold"})])
        server.add(
            [
                with_status(every, ocm_status("every", wide)),
                with_status(golden, ocm_status("golden", gold)),
            ]
        )
        server.add([*ocm_decisions(server, "every", wide), *ocm_decisions(server, "golden", gold)])
        before = {
            pd["metadata"]["name"]: (pd["metadata"]["uid"], pd["metadata"]["resourceVersion"])
            for r in server.resources
            if r.kind == "PlacementDecision"
            for pd in server.store.list(r, APPS, None)
        }
        revision = server.store.rv
        server.audit.clear()

        manager = await h.manager()
        await manager.wait_idle()
        await manager.recorder.flush()

        writes = {
            entry: count
            for entry, count in server.audit.items()
            if entry.verb not in ("get", "list", "watch")
        }
        assert writes == {}, f"the controller wrote on adoption: {writes}"
        assert server.store.rv == revision  # nothing at all changed on the server
        after = {
            pd["metadata"]["name"]: (pd["metadata"]["uid"], pd["metadata"]["resourceVersion"])
            for r in server.resources
            if r.kind == "PlacementDecision"
            for pd in server.store.list(r, APPS, None)
        }
        assert after == before
        assert sorted(before) == ["every-decision-1", "every-decision-2", "golden-decision-1"]
        assert manager.reconciler.history  # it did schedule: it found nothing to change
        assert AuditEntry("list", OCM, "placementdecisions", "", "") in server.audit


async def test_after_the_handover_a_fleet_change_moves_decisions_in_ocms_objects() -> None:
    async with hub() as h:
        server = h.server
        server.add(
            [
                Namespace(metadata=ObjectMeta(name=APPS)),
                *(cluster(name) for name in CLUSTERS[:5]),
                *global_set(APPS),
            ]
        )
        every = placement(APPS, "every")
        server.add([with_status(every, ocm_status("every", CLUSTERS[:5]))])
        (pd,) = ocm_decisions(server, "every", CLUSTERS[:5])
        server.add([pd])
        uid = next(
            d["metadata"]["uid"]
            for r in server.resources
            if r.kind == "PlacementDecision"
            for d in server.store.list(r, APPS, None)
        )
        manager = await h.manager()
        await manager.wait_idle()
        server.add([cluster("c999")])
        await manager.wait_idle()
        decisions = await h.gateway.list(PlacementDecision, APPS)
        (adopted,) = decisions.items
        assert adopted.metadata.uid == uid  # updated in place, never recreated
        assert adopted.status is not None
        assert [d.cluster_name for d in adopted.status.decisions] == [*CLUSTERS[:5], "c999"]
