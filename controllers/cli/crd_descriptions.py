"""What `kubectl explain` says of each field of the CRDs we ship, as OCM's and
scheduler-plugins' CRDs say it: descriptions by model class and field (its wire name), merged
into the generated schemas by `controllers.cli.crds` where the model gives none (a class's
docstring describes the object; these describe the fields). A test checks that every field of
every CRD has one, so a new field without a description fails it.
"""

from __future__ import annotations

__all__ = ["FIELD_DESCRIPTIONS", "TYPE_META"]

TYPE_META = {
    "apiVersion": (
        "APIVersion defines the versioned schema of this representation of an object. Servers "
        "should convert recognized schemas to the latest internal value, and may reject "
        "unrecognized values."
    ),
    "kind": (
        "Kind is a string value representing the REST resource this object represents. "
        "Servers may infer this from the endpoint the client submits requests to. In CamelCase."
    ),
}

_CONDITIONS = "Conditions contain the different condition statuses of this object."
_LABEL_SELECTOR = (
    "A label query over a set of resources, by labels (matchLabels, matchExpressions)."
)
_CLAIM_SELECTOR = "A cluster claim query over a set of ManagedClusters, by their clusterClaims."
_SPEC = "Spec defines the attributes of the object (what the user wants)."
_STATUS = "Status represents the current status of the object (what the controllers observed)."

FIELD_DESCRIPTIONS: dict[str, dict[str, str]] = {
    # --- the objects themselves ------------------------------------------------------------------
    **{
        kind: {"spec": _SPEC, "status": _STATUS}
        for kind in (
            "ManagedCluster",
            "ManagedClusterSet",
            "ManagedClusterSetBinding",
            "Placement",
            "PlacementDecision",
            "AddOnPlacementScore",
            "PodGroup",
            "ElasticQuota",
        )
    },
    # --- shared -----------------------------------------------------------------------------
    "Condition": {
        "type": "Type of the condition, in CamelCase (for example PlacementSatisfied).",
        "status": "Status of the condition: True, False or Unknown.",
        "reason": "A programmatic identifier of the reason for the last transition, in CamelCase.",
        "message": "A human readable message about the transition. May be empty.",
        "lastTransitionTime": "When the condition last changed from one status to another.",
        "observedGeneration": (
            "The .metadata.generation the condition was set upon: if it is older than the "
            "object's, the condition is out of date."
        ),
    },
    "LabelSelector": {
        "matchLabels": (
            "A map of {key,value} pairs; each is equivalent to a matchExpressions element whose "
            "key is the key, operator In and values the one value. The requirements are ANDed."
        ),
        "matchExpressions": "A list of label selector requirements. The requirements are ANDed.",
    },
    "LabelSelectorRequirement": {
        "key": "The label (or claim) key the selector applies to.",
        "operator": "The key's relationship to the values: In, NotIn, Exists or DoesNotExist.",
        "values": (
            "An array of string values: non-empty for In and NotIn, empty for Exists and "
            "DoesNotExist."
        ),
    },
    # --- cluster.open-cluster-management.io: clusters and sets ----------------------------------
    "ManagedClusterSpec": {
        "hubAcceptsClient": (
            "Whether the hub accepts the klusterlet's join request; the hub denies access to a "
            "cluster whose value is false."
        ),
        "leaseDurationSeconds": (
            "How often (seconds) the klusterlet renews its lease; the cluster is unknown when the "
            "lease is not renewed for five times this long (default 60)."
        ),
        "taints": (
            "Taints of the cluster: a placement does not select a cluster whose taints it does "
            "not tolerate."
        ),
    },
    "ManagedClusterStatus": {
        "conditions": _CONDITIONS,
        "capacity": "The total resources of the cluster, by name (cpu, memory, ...).",
        "allocatable": "The resources of the cluster available for scheduling, by name.",
        "clusterClaims": "The claims the cluster reports about itself (id.k8s.io, platform, ...).",
    },
    "ClusterClaim": {
        "name": "The name of the claim.",
        "value": "The value of the claim.",
    },
    "Taint": {
        "key": "The taint key applied to a cluster (a qualified name, for example gpu).",
        "value": "The taint value corresponding to the key.",
        "effect": (
            "What happens to placements that do not tolerate the taint: NoSelect (not selected), "
            "NoSelectIfNew (not selected unless already selected), PreferNoSelect (selected only "
            "if no better cluster)."
        ),
        "timeAdded": "When the taint was added (tolerationSeconds count from it).",
    },
    "ManagedClusterSetSpec": {
        "clusterSelector": "Which ManagedClusters belong to the set.",
    },
    "ManagedClusterSetSelector": {
        "selectorType": (
            "ExclusiveClusterSetLabel (the default: clusters labelled "
            "cluster.open-cluster-management.io/clusterset=<set name>) or LabelSelector."
        ),
        "labelSelector": "The clusters of the set, when selectorType is LabelSelector.",
    },
    "ManagedClusterSetBindingSpec": {
        "clusterSet": (
            "The name of the ManagedClusterSet bound to this namespace; it must be the binding's "
            "own name."
        ),
    },
    "_ConditionsStatus": {"conditions": _CONDITIONS},
    # --- Placement ------------------------------------------------------------------------------
    "PlacementSpec": {
        "clusterSets": (
            "The ManagedClusterSets to select clusters from (each bound to the placement's "
            "namespace); empty: every set bound to it."
        ),
        "numberOfClusters": (
            "How many clusters to select; unset: every cluster that passes the predicates; 0: none."
        ),
        "predicates": (
            "Cluster predicates: a cluster is selected if it satisfies any of them (ORed); each "
            "is a requiredClusterSelector."
        ),
        "prioritizerPolicy": "How clusters are scored to pick numberOfClusters of them.",
        "tolerations": "The taints the placement tolerates.",
        "decisionStrategy": "How the selected clusters are divided into decision groups.",
        "spreadPolicy": "How the selected clusters are spread across topologies.",
        "sortBy": "The order of the decisions: ClusterName or Score.",
        "scoreRateLimit": "The shortest interval between two rescorings on add-on score changes.",
    },
    "ClusterPredicate": {
        "requiredClusterSelector": (
            "A cluster must match every selector in it (label, claim and CEL selectors ANDed)."
        ),
    },
    "ClusterSelector": {
        "labelSelector": _LABEL_SELECTOR,
        "claimSelector": _CLAIM_SELECTOR,
        "celSelector": "CEL expressions over the ManagedCluster; a cluster must satisfy all.",
    },
    "ClaimSelector": {
        "matchExpressions": "A list of cluster claim selector requirements, ANDed.",
    },
    "CelSelector": {
        "celExpressions": (
            "CEL expressions evaluated against each cluster (as `managedCluster`), ANDed; a "
            "placement whose expression does not compile is Misconfigured."
        ),
    },
    "PrioritizerPolicy": {
        "mode": (
            "Additive (the default): the configurations are added to the default prioritizers "
            "(Balance, Steady); Exact: only the configured prioritizers are used."
        ),
        "configurations": "The prioritizers and their weights.",
    },
    "PrioritizerConfig": {
        "scoreCoordinate": "Where the score comes from: a built-in prioritizer or an add-on.",
        "weight": (
            "The weight of the prioritizer's score in the total, -10 to 10 (default 1); 0 "
            "disables it, a negative weight prefers the clusters it scores low."
        ),
    },
    "ScoreCoordinate": {
        "type": "BuiltIn (the default) or AddOn.",
        "builtIn": (
            "The built-in prioritizer when type is BuiltIn: Balance, Steady, "
            "ResourceAllocatableCPU, ResourceAllocatableMemory, ResourceRatioCPU, "
            "ResourceRatioMemory, TaintToleration, or Spread (the spread selector's weight)."
        ),
        "addOn": "The AddOnPlacementScore and score to use when type is AddOn.",
    },
    "AddOnScoreCoordinate": {
        "resourceName": "The name of the AddOnPlacementScore in each cluster's namespace.",
        "scoreName": "The name of the score inside it.",
    },
    "Toleration": {
        "key": "The taint key the toleration applies to; empty with Exists: every taint.",
        "operator": (
            "Exists (any value) or Equal (the default: the taint's value must equal value)."
        ),
        "value": "The taint value the toleration matches (empty with Exists).",
        "effect": "The taint effect to match; empty matches every effect.",
        "tolerationSeconds": (
            "How long the taint is tolerated after its timeAdded; unset: for ever."
        ),
    },
    "DecisionStrategy": {
        "groupStrategy": "How the selected clusters are split into decision groups.",
    },
    "GroupStrategy": {
        "decisionGroups": (
            "Named groups of the selected clusters, each by a label or claim selector; the "
            "clusters in none of them are split by clustersPerDecisionGroup."
        ),
        "clustersPerDecisionGroup": (
            "The most clusters in one decision group: a number or a percentage of the selected "
            "clusters (default 100%)."
        ),
    },
    "DecisionGroup": {
        "groupName": "The name of the decision group (in the PlacementDecisions' labels).",
        "groupClusterSelector": "The selected clusters that belong to this group.",
    },
    "GroupClusterSelector": {
        "labelSelector": _LABEL_SELECTOR,
        "claimSelector": _CLAIM_SELECTOR,
    },
    "SpreadPolicy": {
        "spreadConstraints": (
            "Up to 8 terms, each a topology (label or claim key) the selected clusters are "
            "spread across; a later term spreads within the domains of the earlier ones."
        ),
    },
    "SpreadConstraintsTerm": {
        "topologyKey": "The label or claim key whose values are the topology's domains.",
        "topologyKeyType": "Label or Claim.",
        "maxSkew": (
            "For DoNotSchedule: the largest allowed difference in selected clusters between a "
            "domain and its least selected sibling (default 1)."
        ),
        "whenUnsatisfiable": (
            "DoNotSchedule (never exceed maxSkew, selecting fewer clusters if need be) or "
            "ScheduleAnyway (the default: prefer less selected domains)."
        ),
    },
    "PlacementStatus": {
        "numberOfSelectedClusters": "How many clusters are selected.",
        "decisionGroups": "The decision groups, with their PlacementDecisions and cluster counts.",
        "conditions": _CONDITIONS,
        "lastScoreUpdateTime": "When the add-on scores were last read.",
    },
    "DecisionGroupStatus": {
        "decisionGroupIndex": "The index of the group (0 first).",
        "decisionGroupName": "The name of the group, empty for groups made by size.",
        "decisions": "The names of the PlacementDecisions holding the group's clusters.",
        "clusterCount": "How many clusters are in the group.",
    },
    # --- PlacementDecision and AddOnPlacementScore --------------------------------------------
    "PlacementDecisionStatus": {
        "decisions": "The selected clusters, at most 100 per PlacementDecision.",
    },
    "ClusterDecision": {
        "clusterName": "The name of the selected ManagedCluster.",
        "reason": "Why the cluster was selected (may be empty).",
        "score": "The cluster's total score, when the placement sorts by score.",
    },
    "AddOnPlacementScoreStatus": {
        "conditions": _CONDITIONS,
        "scores": "The scores the add-on agent reports for its cluster, -100 to 100 each.",
        "validUntil": "When the scores expire; expired scores count as 0.",
    },
    "AddOnPlacementScoreItem": {
        "name": "The name of the score.",
        "value": "The score, -100 to 100.",
    },
    # --- scheduling.x-k8s.io: PodGroup and ElasticQuota -----------------------------------------
    "PodGroupSpec": {
        "minMember": "The fewest member pods that must be scheduled together (the gang's size).",
        "minResources": "The least total resources the gang needs before any member is bound.",
        "scheduleTimeoutSeconds": (
            "How long the members wait at Permit for the rest of the gang before they are "
            "rejected and retried."
        ),
    },
    "PodGroupStatus": {
        "phase": "Pending, PreScheduling, Scheduling, Scheduled, Running, Finished or Failed.",
        "occupiedBy": "The workload (owner) that the group's pods belong to.",
        "scheduled": "How many member pods are scheduled.",
        "running": "How many member pods are running.",
        "succeeded": "How many member pods succeeded.",
        "failed": "How many member pods failed.",
        "scheduleStartTime": "When the group's scheduling began.",
    },
    "ElasticQuotaSpec": {
        "min": (
            "The resources guaranteed to the namespace; a resource missing here is 0. Pods "
            "within min are never preempted by other quotas' borrowing."
        ),
        "max": (
            "The most resources the namespace may use, borrowing beyond min when others do not "
            "use theirs; a resource missing here is unbounded."
        ),
    },
    "ElasticQuotaStatus": {
        "used": "The resources used by the namespace's bound pods that have not finished.",
        "conditions": _CONDITIONS,
    },
}
