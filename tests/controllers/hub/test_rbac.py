"""The RBAC of `config/rbac` is exactly what the controller uses, measured, not listed by hand.

The controller runs against the embedded API server through a scenario that takes every path
that sends a request: the cold start (list and watch of six kinds), PlacementDecisions created,
their decisions patched, relabelled and deleted, Placement status patches, events, a 409 on a
PlacementDecision and on a Placement (each answered by a GET of the object), and leader election
(the Lease read, created, renewed and released). The test changes the hub in-process (the
server's store), so the server's audit log holds the controller's requests and nothing else.

What was used must equal what `config/rbac` grants, verb for verb: the ClusterRole for
everything but the Lease, the namespaced leader-election Role for the Lease. A verb used and not
granted fails (the controller would get 403 on a real hub); a verb granted and never used fails
too (least privilege). One grant is not a request: an admission plugin's. A PlacementDecision
created with an ownerReference that has `blockOwnerDeletion: true` needs `update` on the owner's
`finalizers` subresource (OwnerReferencesPermissionEnforcement); it is derived here from the
owner references of the PlacementDecisions the controller wrote.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.cluster import ManagedCluster
from apis.core import Namespace
from apis.meta import KubeObject, ObjectMeta
from apis.placements import Placement, PlacementDecision
from controllers.embedded import AuditEntry, EmbeddedApiServer
from controllers.embedded.resources import Resource
from controllers.hub.manager import CONTROLLER_NAME, Manager
from controllers.runtime.leader import LeaderConfig
from placement.testing import addon, cluster, cluster_set, global_set, placement, score
from tests.controllers.embedded.hub import eventually
from tests.controllers.hub.controller_hub import Hub, hub

RBAC = Path(__file__).resolve().parents[3] / "config" / "rbac"
OCM = "cluster.open-cluster-management.io"
APPS = "apps"
CLUSTERS = [f"c{i:03d}" for i in range(150)]  # more than 100: two PlacementDecisions

BY_LOAD = {"mode": "Additive", "configurations": [addon("load", "free").to_wire()]}
CANARY = {
    "groupStrategy": {
        "decisionGroups": [
            {
                "groupName": "canary",
                "groupClusterSelector": {"labelSelector": {"matchLabels": {"team": "x"}}},
            }
        ]
    }
}

Grants = dict[tuple[str, str], set[str]]


# --- what config/rbac grants ---------------------------------------------------------------------


def rbac_objects(kind: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted(RBAC.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and doc.get("kind") == kind:
                found.append(doc)
    assert len(found) == 1, f"expected one {kind} in {RBAC}, found {len(found)}"
    return found


def granted(rules: list[dict[str, Any]]) -> Grants:
    """(apiGroup, resource[/subresource]) -> verbs, merged over rules."""
    out: Grants = {}
    for rule in rules:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                out.setdefault((group, resource), set()).update(rule.get("verbs", []))
    return out


CLUSTER_ROLE = rbac_objects("ClusterRole")[0]
LEASE_ROLE = rbac_objects("Role")[0]
LEASE_NAMESPACE = LEASE_ROLE["metadata"]["namespace"]


# --- changing the hub without a request ---------------------------------------------------------


def resource(server: EmbeddedApiServer, cls: type[KubeObject]) -> Resource:
    return next(r for r in server.resources if r.kind == cls.KIND)


def store(server: EmbeddedApiServer, objects: list[KubeObject]) -> None:
    server.add(objects)


def respec(server: EmbeddedApiServer, name: str, **fields: Any) -> None:
    """Set top-level spec fields (camelCase) of Placement `name`."""
    res = resource(server, Placement)
    doc = copy.deepcopy(server.store.get(res, APPS, name))
    doc.setdefault("spec", {}).update(fields)
    server.store.update(res, APPS, name, doc)


def stored(server: EmbeddedApiServer, cls: type[KubeObject], namespace: str) -> list[Any]:
    return list(server.store.list(resource(server, cls), namespace, None))


def decided(server: EmbeddedApiServer, name: str) -> list[str]:
    return sorted(
        d["clusterName"]
        for pd in stored(server, PlacementDecision, APPS)
        if pd["metadata"]["labels"].get(f"{OCM}/placement") == name
        for d in (pd.get("status") or {}).get("decisions") or []
    )


async def settled(manager: Manager) -> None:
    await manager.wait_idle()
    await manager.recorder.flush()


# --- the scenario -----------------------------------------------------------------------------


async def run_scenario(h: Hub) -> tuple[Counter[AuditEntry], list[dict[str, Any]]]:
    """Every request path of the controller, once at least; the audit of its requests and
    every PlacementDecision it wrote."""
    server = h.server
    store(
        server,
        [
            *(Namespace(metadata=ObjectMeta(name=n)) for n in (APPS, LEASE_NAMESPACE)),
            *(Namespace(metadata=ObjectMeta(name=c)) for c in CLUSTERS[:2]),
            *(cluster(name, labels={"team": "x"}) for name in CLUSTERS),
            *global_set(APPS),
            cluster_set("unused", {"matchLabels": {"team": "y"}}),
            score(CLUSTERS[0], "load", {"free": 90}),
            score(CLUSTERS[1], "load", {"free": 10}),
            placement(APPS, "wide"),
            placement(APPS, "small", number_of_clusters=2, prioritizer_policy=BY_LOAD),
        ],
    )
    pds: dict[str, dict[str, Any]] = {}

    def remember() -> None:
        for pd in stored(server, PlacementDecision, APPS):
            pds[pd["metadata"]["uid"]] = pd

    leader = LeaderConfig(name=CONTROLLER_NAME, namespace=LEASE_NAMESPACE, identity="replica-1")
    # Cold start: list and watch every kind; the Lease is read (404) and created; every
    # placement gets PlacementDecisions (created, decisions patched), a status patch, events.
    manager = await h.manager(leader=leader)
    await eventually(lambda: manager.leading)
    await settled(manager)
    assert len(decided(server, "wide")) == 150
    assert decided(server, "small") == ["c000", "c001"]
    remember()

    # The leader renews its Lease: read, then update.
    await h.clock.advance(leader.retry_period)

    # A 409 on a PlacementDecision's decisions: the writer reads it again (GET) and retries.
    server.faults.fail_next("patch", 409)
    res = resource(server, ManagedCluster)
    server.store.delete(res, "", CLUSTERS[-1])
    await eventually(lambda: len(decided(server, "wide")) == 149)
    await settled(manager)

    # A 409 on a Placement's status: the writer reads the Placement again (GET) and retries.
    server.faults.fail_next("patch", 409)
    respec(server, "small", prioritizerPolicy={**BY_LOAD, "mode": "Sideways"})
    await eventually(lambda: _condition(server, "small", "PlacementMisconfigured") == "True")
    await settled(manager)

    # Fewer clusters: the second PlacementDecision is deleted.
    respec(server, "wide", numberOfClusters=50)
    await eventually(lambda: len(stored(server, PlacementDecision, APPS)) == 2)
    await settled(manager)

    # A decision group: the first PlacementDecision is relabelled (a metadata patch).
    respec(server, "wide", decisionStrategy=CANARY)
    await eventually(lambda: _group(server, "wide-decision-1") == "canary")
    await settled(manager)
    remember()

    # A clean stop releases the Lease: read, then update.
    await h.stop(manager)
    return Counter(server.audit), list(pds.values())


def _condition(server: EmbeddedApiServer, name: str, kind: str) -> str:
    doc = server.store.get(resource(server, Placement), APPS, name)
    for condition in (doc.get("status") or {}).get("conditions") or []:
        if condition["type"] == kind:
            return str(condition["status"])
    return ""


def _group(server: EmbeddedApiServer, name: str) -> str:
    doc = server.store.get(resource(server, PlacementDecision), APPS, name)
    return str(doc["metadata"]["labels"].get(f"{OCM}/decision-group-name", ""))


def admission_needs(decisions: list[dict[str, Any]], server: EmbeddedApiServer) -> Grants:
    """What OwnerReferencesPermissionEnforcement asks of who writes these objects: `update`
    on `<owner>/finalizers` for each ownerReference that blocks its owner's deletion."""
    plural = {(r.api_version, r.kind): (r.group, r.plural) for r in server.resources}
    out: Grants = {}
    for pd in decisions:
        for ref in pd["metadata"].get("ownerReferences") or []:
            if ref.get("blockOwnerDeletion"):
                group, resource_name = plural[ref["apiVersion"], ref["kind"]]
                out.setdefault((group, f"{resource_name}/finalizers"), set()).add("update")
    return out


def used(audit: Counter[AuditEntry], *, leases: bool) -> Grants:
    out: Grants = {}
    for entry in audit:
        if (entry.resource == "leases") == leases:
            out.setdefault((entry.group, entry.rule_resource), set()).add(entry.verb)
    return out


def merged(*grants: Grants) -> Grants:
    out: Grants = {}
    for grant in grants:
        for key, verbs in grant.items():
            out.setdefault(key, set()).update(verbs)
    return out


def difference(left: Grants, right: Grants) -> list[str]:
    """`group resource verb` lines in `left` and not in `right`."""
    return sorted(
        f"{group or 'core'} {res} {verb}"
        for (group, res), verbs in left.items()
        for verb in verbs - right.get((group, res), set())
    )


@pytest.fixture(scope="module")
def scenario() -> tuple[Counter[AuditEntry], list[dict[str, Any]], Grants]:
    async def go() -> tuple[Counter[AuditEntry], list[dict[str, Any]], Grants]:
        async with hub() as h:
            audit, decisions = await run_scenario(h)
            return audit, decisions, admission_needs(decisions, h.server)

    return asyncio.run(go())


# --- the tests ------------------------------------------------------------------------------


def test_the_scenario_takes_every_path_that_sends_a_request(
    scenario: tuple[Counter[AuditEntry], list[dict[str, Any]], Grants],
) -> None:
    audit, decisions, _ = scenario
    verbs = used(audit, leases=False)
    for kind in (
        "managedclusters",
        "managedclustersets",
        "managedclustersetbindings",
        "addonplacementscores",
        "placements",
        "placementdecisions",
    ):
        assert {"list", "watch"} <= verbs[OCM, kind], kind
    assert {"create", "patch", "delete", "get"} <= verbs[OCM, "placementdecisions"]
    assert "patch" in verbs[OCM, "placementdecisions/status"]
    assert {"patch"} == verbs[OCM, "placements/status"]
    assert "get" in verbs[OCM, "placements"]  # after the 409 on its status
    assert verbs["events.k8s.io", "events"] == {"create"}
    lease = used(audit, leases=True)
    assert lease == {("coordination.k8s.io", "leases"): {"get", "create", "update"}}
    # Renewed and released: more than one update.
    assert audit[AuditEntry("update", "coordination.k8s.io", "leases", "", LEASE_NAMESPACE)] >= 2
    assert len(decisions) >= 3  # created on start, and again for the decision group


def test_the_cluster_role_grants_exactly_what_the_controller_uses(
    scenario: tuple[Counter[AuditEntry], list[dict[str, Any]], Grants],
) -> None:
    audit, _, admission = scenario
    needed = merged(used(audit, leases=False), admission)
    grants = granted(CLUSTER_ROLE["rules"])
    missing, unused = difference(needed, grants), difference(grants, needed)
    assert (missing, unused) == ([], []), (
        f"used but not granted by config/rbac/cluster_role.yaml: {missing}; "
        f"granted but never used: {unused}"
    )


def test_the_finalizers_grant_comes_from_the_owner_references_the_controller_writes(
    scenario: tuple[Counter[AuditEntry], list[dict[str, Any]], Grants],
) -> None:
    _, _, admission = scenario
    assert admission == {(OCM, "placements/finalizers"): {"update"}}


def test_the_lease_is_used_only_in_the_role_namespace_and_under_the_role_name(
    scenario: tuple[Counter[AuditEntry], list[dict[str, Any]], Grants],
) -> None:
    audit, _, _ = scenario
    lease_requests = [entry for entry in audit if entry.resource == "leases"]
    assert {entry.namespace for entry in lease_requests} == {LEASE_NAMESPACE}
    grants = granted(LEASE_ROLE["rules"])
    needed = used(audit, leases=True)
    assert (difference(needed, grants), difference(grants, needed)) == ([], [])
    # get and update name the Lease; `placement run` contends for CONTROLLER_NAME.
    by_verb = {v: rule.get("resourceNames") for rule in LEASE_ROLE["rules"] for v in rule["verbs"]}
    assert by_verb["get"] == by_verb["update"] == [CONTROLLER_NAME]
    # Nothing else the controller does is namespaced to the Lease's namespace only.
    assert not [e for e in audit if e.resource != "leases" and e.namespace == LEASE_NAMESPACE]
