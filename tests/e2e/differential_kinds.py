"""The differential script's requests about the kinds served (`tests.e2e.differential_script`
runs them): invalid objects of every kind, the custom kinds' status subresources, the built-in
kinds' defaults and deletions, watches across a selector.
"""

from __future__ import annotations

from tests.e2e.differential import Step
from tests.e2e.differential_paths import (
    APPLY,
    BINDINGS,
    CLUSTERS,
    CM,
    DECISIONS,
    LEASES,
    LONG,
    MERGE,
    NODES,
    OCM,
    OCM_V1BETA2,
    PLACEMENTS,
    PODGROUPS,
    PODS,
    PRIORITY,
    QUOTAS,
    SCORES,
    SETS,
    SPEC,
    STRATEGIC,
    configmap,
    custom,
    placement,
    scheduling,
)

INVALID = [
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

MORE = [
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
    Step(
        "invalid managedclustersetbinding: no spec",
        "POST",
        BINDINGS,
        custom(OCM_V1BETA2, "ManagedClusterSetBinding", "b"),
    ),
    Step(
        "invalid managedclustersetbinding: empty clusterSet",
        "POST",
        BINDINGS,
        custom(OCM_V1BETA2, "ManagedClusterSetBinding", "b", spec={"clusterSet": ""}),
    ),
    Step(
        "managedclustersetbinding to another set",
        "POST",
        BINDINGS,
        custom(OCM_V1BETA2, "ManagedClusterSetBinding", "b", spec={"clusterSet": "other"}),
    ),
    Step(
        "invalid managedclusterset: selectorType",
        "POST",
        SETS,
        custom(
            OCM_V1BETA2,
            "ManagedClusterSet",
            "{name}-bad",
            spec={"clusterSelector": {"selectorType": "Everything"}},
        ),
    ),
    Step(
        "create addonplacementscore",
        "POST",
        SCORES,
        custom("cluster.open-cluster-management.io/v1alpha1", "AddOnPlacementScore", "s"),
    ),
    Step(
        "invalid addonplacementscore /status: score 101",
        "PATCH",
        SCORES + "/s/status",
        {"status": {"scores": [{"name": "cpu", "value": 101}]}},
        content_type=MERGE,
    ),
    Step(
        "invalid priorityclass: value too high",
        "POST",
        PRIORITY,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "{name}-high"},
            "value": 2_000_000_000,
        },
    ),
    Step(
        "invalid lease: duration 0",
        "POST",
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l0"},
            "spec": {"leaseDurationSeconds": 0},
        },
    ),
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
