"""The script of the differential test (`tests.e2e.differential`): every request a client of
ours makes, in an order whose answers depend on the ones before (a stale update, a watch from a
remembered resourceVersion, a list continued).

`{ns}` is the script's namespace (the same name on both servers), `{name}` the prefix of its
cluster-scoped names. Steps are named `<what>`; the names key the known-differences table.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.differential import Memory, Step

__all__ = ["SCRIPT"]

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"

CM = "/api/v1/namespaces/{ns}/configmaps"
OCM = "/apis/cluster.open-cluster-management.io"
PLACEMENTS = OCM + "/v1beta1/namespaces/{ns}/placements"
DECISIONS = OCM + "/v1beta1/namespaces/{ns}/placementdecisions"
CLUSTERS = OCM + "/v1/managedclusters"
SCHED = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}"
PODGROUPS = SCHED + "/podgroups"
QUOTAS = SCHED + "/elasticquotas"
PODS = "/api/v1/namespaces/{ns}/pods"
NODES = "/api/v1/nodes"
LONG = "1" * 65  # a quantity of 65 characters: over the CRD's maxLength of 64


def configmap(name: str, data: dict[str, str], **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def placement(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "pl-a"},
        "spec": spec,
    }
    if status is not None:
        doc["status"] = status
    return doc


def stored_placement(memory: Memory, spec: dict[str, Any], status: dict[str, Any]) -> Any:
    doc = placement(spec, status)
    doc["metadata"]["resourceVersion"] = memory["pl"]
    return doc


def custom(group_version: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": group_version, "kind": kind, "metadata": {"name": name}, **fields}


def scheduling(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return custom("scheduling.x-k8s.io/v1alpha1", kind, name, spec=spec)


STATUS = {"numberOfSelectedClusters": 3}
SPEC = {"numberOfClusters": 2}

_CRUD = [
    Step("create", "POST", CM, configmap("cm-a", {"a": "1"}, app="x", tier="a"), remember="a1"),
    Step("create: name taken", "POST", CM, configmap("cm-a", {"a": "9"})),
    Step("get", "GET", CM + "/cm-a"),
    Step(
        "update (PUT)",
        "PUT",
        CM + "/cm-a",
        lambda m: {
            **configmap("cm-a", {"a": "2"}, app="x", tier="a"),
            "metadata": {
                "name": "cm-a",
                "labels": {"app": "x", "tier": "a"},
                "resourceVersion": m["a1"],
            },
        },
        remember="a2",
    ),
    Step(
        "update: stale resourceVersion",
        "PUT",
        CM + "/cm-a",
        lambda m: {
            **configmap("cm-a", {"a": "3"}),
            "metadata": {"name": "cm-a", "resourceVersion": m["a1"]},
        },
    ),
    Step(
        "update: no resourceVersion",
        "PUT",
        CM + "/cm-a",
        configmap("cm-a", {"a": "2", "z": "0"}, app="x", tier="a"),
    ),
    Step(
        "merge patch",
        "PATCH",
        CM + "/cm-a",
        {"data": {"b": "3", "z": None}, "metadata": {"labels": {"tier": "b"}}},
        content_type=MERGE,
    ),
    Step(
        "merge patch: stale resourceVersion",
        "PATCH",
        CM + "/cm-a",
        lambda m: {"metadata": {"resourceVersion": m["a1"]}, "data": {"q": "1"}},
        content_type=MERGE,
    ),
    Step(
        "strategic merge patch", "PATCH", CM + "/cm-a", {"data": {"c": "4"}}, content_type=STRATEGIC
    ),
    Step(
        "json patch",
        "PATCH",
        CM + "/cm-a",
        [{"op": "add", "path": "/data/d", "value": "5"}, {"op": "remove", "path": "/data/a"}],
        content_type=JSON_PATCH,
    ),
    Step(
        "json patch: failed test",
        "PATCH",
        CM + "/cm-a",
        [{"op": "test", "path": "/data/d", "value": "nope"}],
        content_type=JSON_PATCH,
    ),
    Step(
        "json patch: missing path",
        "PATCH",
        CM + "/cm-a",
        [{"op": "remove", "path": "/data/nothing"}],
        content_type=JSON_PATCH,
    ),
    Step("patch: missing object", "PATCH", CM + "/cm-none", {"data": {}}, content_type=MERGE),
    Step(
        "apply: create",
        "PATCH",
        CM + "/cm-b",
        configmap("cm-b", {"k": "v"}, app="x", tier="b"),
        query={"fieldManager": "differential"},
        content_type=APPLY,
    ),
    Step(
        "apply: update",
        "PATCH",
        CM + "/cm-b",
        configmap("cm-b", {"k": "w", "l": "m"}, app="x", tier="b"),
        query={"fieldManager": "differential"},
        content_type=APPLY,
    ),
    Step(
        "apply: no fieldManager",
        "PATCH",
        CM + "/cm-b",
        configmap("cm-b", {"k": "v"}),
        content_type=APPLY,
    ),
    Step(
        "create: dryRun=All", "POST", CM, configmap("cm-dry", {"x": "1"}), query={"dryRun": "All"}
    ),
    Step("get: nothing stored by the dry run", "GET", CM + "/cm-dry"),
    Step("delete: dryRun=All", "DELETE", CM + "/cm-b", query={"dryRun": "All"}),
    Step("get: still there after the dry delete", "GET", CM + "/cm-b"),
    Step(
        "update: dryRun=All",
        "PUT",
        CM + "/cm-b",
        configmap("cm-b", {"dry": "1"}),
        query={"dryRun": "All"},
    ),
    Step("create: third", "POST", CM, configmap("cm-c", {"c": "1"}, app="y")),
]

_STATUS = [
    Step("create: status ignored", "POST", PLACEMENTS, placement(SPEC, STATUS), remember="pl"),
    Step(
        "update /status: spec ignored",
        "PUT",
        PLACEMENTS + "/pl-a/status",
        lambda m: stored_placement(m, {"numberOfClusters": 5}, STATUS),
        remember="pl",
    ),
    Step(
        "update: status ignored",
        "PUT",
        PLACEMENTS + "/pl-a",
        lambda m: stored_placement(m, {"numberOfClusters": 4}, {"numberOfSelectedClusters": 9}),
    ),
    Step(
        "merge patch /status",
        "PATCH",
        PLACEMENTS + "/pl-a/status",
        {"status": {"numberOfSelectedClusters": 1}, "spec": {"numberOfClusters": 7}},
        content_type=MERGE,
    ),
    Step("get placement", "GET", PLACEMENTS + "/pl-a"),
]

_LISTS = [
    Step("list: limit=2", "GET", CM, query={"limit": "2", "labelSelector": "app"}, remember="page"),
    Step(
        "list: continue",
        "GET",
        CM,
        query=lambda m: {"limit": "2", "labelSelector": "app", "continue": m["page:continue"]},
    ),
    Step("list: limit=1 labelSelector", "GET", CM, query={"limit": "1", "labelSelector": "app=x"}),
    Step("list: labelSelector set", "GET", CM, query={"labelSelector": "tier in (a,b)"}),
    Step("list: labelSelector not", "GET", CM, query={"labelSelector": "app!=x"}),
    Step("list: labelSelector exists", "GET", CM, query={"labelSelector": "app,!tier"}),
    Step("list: fieldSelector name", "GET", CM, query={"fieldSelector": "metadata.name=cm-b"}),
    Step("list: fieldSelector unknown field", "GET", CM, query={"fieldSelector": "spec.x=1"}),
    Step("list: bad labelSelector", "GET", CM, query={"labelSelector": "a b"}),
    Step("list: bad continue token", "GET", CM, query={"limit": "1", "continue": "bogus"}),
]


_WATCH = [
    Step(
        "watch: from a resourceVersion",
        "GET",
        CM,
        query=lambda m: {"resourceVersion": m["a2"], "timeoutSeconds": "1"},
        watch=1.0,
    ),
    Step(
        "watch: bookmarks",
        "GET",
        CM,
        query=lambda m: {
            "resourceVersion": m["a2"],
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "3",
            "labelSelector": "app=y",
        },
        watch=3.0,
    ),
    Step(
        "watch: too old resourceVersion",
        "GET",
        PLACEMENTS,
        query={"resourceVersion": "1", "timeoutSeconds": "1"},
        watch=1.0,
    ),
]

_INVALID = [
    Step(
        "invalid placement",
        "POST",
        PLACEMENTS,
        {**placement({"numberOfClusters": -1, "clusterSets": "x"}), "metadata": {"name": "pl-bad"}},
    ),
    Step(
        "invalid placement: bad enum",
        "POST",
        PLACEMENTS,
        {**placement({"prioritizerPolicy": {"mode": "Sometimes"}}), "metadata": {"name": "pl-bad"}},
    ),
    Step(
        "invalid managedcluster",
        "POST",
        CLUSTERS,
        custom(
            "cluster.open-cluster-management.io/v1",
            "ManagedCluster",
            "{name}-mc",
            spec={"leaseDurationSeconds": -5, "taints": [{"key": "a b", "effect": "Never"}]},
        ),
    ),
    Step(
        "invalid placementdecision: name",
        "POST",
        DECISIONS,
        custom("cluster.open-cluster-management.io/v1beta1", "PlacementDecision", "Bad_Name"),
    ),
    Step(
        "invalid podgroup",
        "POST",
        PODGROUPS,
        scheduling("PodGroup", "pg-bad", {"minMember": 0, "minResources": {"cpu": "lots"}}),
    ),
    Step(
        "invalid elasticquota: min above max",
        "POST",
        QUOTAS,
        scheduling("ElasticQuota", "eq-bad", {"min": {"cpu": "2"}, "max": {"cpu": "1"}}),
    ),
    Step(
        "invalid elasticquota: 65-character quantity",
        "POST",
        QUOTAS,
        scheduling("ElasticQuota", "eq-long", {"max": {"cpu": LONG}}),
    ),
    Step(
        "valid elasticquota",
        "POST",
        QUOTAS,
        scheduling(
            "ElasticQuota", "eq-ok", {"min": {"cpu": "1"}, "max": {"cpu": "2", "memory": "1Gi"}}
        ),
    ),
    Step(
        "invalid pod: name",
        "POST",
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "Bad_Name"},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        },
    ),
    Step(
        "invalid node: name",
        "POST",
        NODES,
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "Bad_Name"}},
    ),
    Step("invalid configmap: name", "POST", CM, configmap("Bad_Name", {})),
    Step("invalid configmap: data key", "POST", CM, configmap("cm-key", {"a b": "1"})),
    Step(
        "create: namespace does not exist",
        "POST",
        "/api/v1/namespaces/{name}-none/configmaps",
        configmap("cm-x", {}),
    ),
    Step(
        "create placement: namespace does not exist",
        "POST",
        OCM + "/v1beta1/namespaces/{name}-none/placements",
        placement(SPEC),
    ),
    Step(
        "create: namespace mismatch",
        "POST",
        CM,
        {**configmap("cm-m", {}), "metadata": {"name": "cm-m", "namespace": "elsewhere"}},
    ),
    Step("create: kind mismatch", "POST", CM, {**configmap("cm-k", {}), "kind": "Secret"}),
]

_DELETE = [
    Step(
        "delete: uid precondition",
        "DELETE",
        CM + "/cm-a",
        {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-it"}},
    ),
    Step("delete", "DELETE", CM + "/cm-a"),
    Step("get: deleted", "GET", CM + "/cm-a"),
    Step("delete: gone already", "DELETE", CM + "/cm-a"),
    Step("delete custom object", "DELETE", PLACEMENTS + "/pl-a"),
    Step("list: after deletes", "GET", CM, query={"labelSelector": "app"}),
]

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
PRIORITY = "/apis/scheduling.k8s.io/v1/priorityclasses"
SETS = OCM + "/v1beta2/managedclustersets"
# Cluster-scoped objects the script creates (the test deletes them from the shared plane).
CLUSTER_SCOPED: tuple[str, ...] = (
    *(f"{CLUSTERS}/{{name}}-mc", f"{NODES}/{{name}}-node", f"{PRIORITY}/{{name}}-pc"),
    *(f"{SETS}/{{name}}-set", f"{NODES}/Bad_Name"),
)

_MORE = [
    Step("update: name mismatch", "PUT", CM + "/cm-c", configmap("cm-x", {})),
    Step("update: missing object", "PUT", CM + "/cm-none", configmap("cm-none", {})),
    Step("get: missing object", "GET", CM + "/cm-none"),
    Step("get: unknown resource", "GET", "/api/v1/namespaces/{ns}/foos"),
    Step("create: no name", "POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    Step(
        "patch /status of a kind without one",
        "PATCH",
        CM + "/cm-c/status",
        {"data": {}},
        content_type=MERGE,
    ),
    Step(
        "strategic merge patch of a custom object",
        "PATCH",
        PLACEMENTS + "/pl-a",
        {"spec": {"numberOfClusters": 3}},
        content_type=STRATEGIC,
    ),
    Step(
        "create podgroup",
        "POST",
        PODGROUPS,
        scheduling("PodGroup", "pg", {"minMember": 2, "scheduleTimeoutSeconds": 30}),
    ),
    Step(
        "update podgroup /status",
        "PATCH",
        PODGROUPS + "/pg/status",
        {"status": {"phase": "Scheduling", "scheduled": 1}},
        content_type=MERGE,
    ),
    Step(
        "create placementdecision: status ignored",
        "POST",
        DECISIONS,
        custom(
            "cluster.open-cluster-management.io/v1beta1",
            "PlacementDecision",
            "pd",
            status={"decisions": [{"clusterName": "c1", "reason": ""}]},
        ),
    ),
    Step(
        "patch placementdecision /status",
        "PATCH",
        DECISIONS + "/pd/status",
        {"status": {"decisions": [{"clusterName": "c2", "reason": "r"}]}},
        content_type=MERGE,
    ),
    Step(
        "patch placementdecision /status: missing reason",
        "PATCH",
        DECISIONS + "/pd/status",
        {"status": {"decisions": [{"clusterName": "c3"}]}},
        content_type=MERGE,
    ),
    Step(
        "apply: create managedclusterset",
        "PATCH",
        SETS + "/{name}-set",
        custom(
            "cluster.open-cluster-management.io/v1beta2",
            "ManagedClusterSet",
            "{name}-set",
            spec={"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}},
        ),
        query={"fieldManager": "differential"},
        content_type=APPLY,
    ),
    Step(
        "create lease",
        "POST",
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
        },
    ),
    Step(
        "create priorityclass",
        "POST",
        PRIORITY,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "{name}-pc"},
            "value": 1000,
        },
    ),
    Step(
        "create node",
        "POST",
        NODES,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "{name}-node", "labels": {"zone": "a"}},
            "spec": {"unschedulable": True},
        },
    ),
    Step(
        "create pod",
        "POST",
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "main", "image": "busybox:1.36"}],
                "nodeName": "{name}-node",
            },
        },
    ),
    Step("delete pod", "DELETE", PODS + "/p"),
    Step("delete collection", "DELETE", CM, query={"labelSelector": "app=y"}),
    Step(
        "merge patch: relabel",
        "PATCH",
        CM + "/cm-b",
        {"metadata": {"labels": {"app": "y"}}},
        content_type=MERGE,
    ),
    Step(
        "watch: leaving a selector",
        "GET",
        CM,
        query=lambda m: {
            "resourceVersion": m["a2"],
            "timeoutSeconds": "1",
            "labelSelector": "app=x",
        },
        watch=1.0,
    ),
]

SCRIPT: list[Step] = [*_CRUD, *_STATUS, *_LISTS, *_WATCH, *_INVALID, *_MORE, *_DELETE]
