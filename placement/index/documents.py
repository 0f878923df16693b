"""The whole ManagedCluster, kept small, for CEL: what a `DocumentRow` adds to a `ClusterRow`.

CEL sees the cluster as the API server sends it (`managedCluster.metadata.annotations`,
`status.version.kubernetes`, `status.conditions`...), as OCM's `ConvertObjectToUnstructured`
and `placement simulate` give it, not only the features a row keeps. Models or wire dicts of
every cluster would cost kilobytes each (the controller's RSS budget at 100,000 clusters is
512 MiB), so a row carries its object as JSON deflated against a preset dictionary of what
every ManagedCluster repeats: about a hundred bytes for a small cluster. It is inflated only
when an expression runs on the cluster, that is once per (selector, object version), since
results are cached by stamp.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from apis.cluster import ManagedCluster
from placement.cel.document import typed
from placement.rows import ClusterRow
from placement.rows import cluster_row as features

__all__ = ["DocumentRow", "document_row", "unpack"]

# What most ManagedClusters repeat, as JSON: deflate finds these strings in its window
# instead of writing them again.
_PRESET = (
    b'"caBundle":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSU"'
    b'"managedClusterClientConfigs":[{"url":"https://api.'
    b'"conditions":[{"type":"HubAcceptedManagedCluster","status":"True","lastTransitionTime":"'
    b'"reason":"HubClusterAdminAccepted","message":"Accepted by hub cluster admin"},'
    b'{"type":"ManagedClusterJoined","status":"True","reason":"ManagedClusterJoined",'
    b'"message":"Managed cluster joined"},{"type":"ManagedClusterConditionAvailable",'
    b'"reason":"ManagedClusterAvailable","message":"Managed cluster is available"},'
    b'{"type":"ManagedClusterConditionClockSynced","reason":"ManagedClusterClockSynced",'
    b'"message":"The clock of the managed cluster is synced with the hub."}],'
    b'"version":{"kubernetes":"v1.'
    b'"finalizers":["cluster.open-cluster-management.io/api-resource-cleanup"],'
    b'"annotations":{"open-cluster-management.io/'
    b'"id.k8s.io","platform.open-cluster-management.io","product.open-cluster-management.io"'
    b'"feature.open-cluster-management.io/addon-'
    b'"cluster.open-cluster-management.io/clusterset":"default"'
    b'"resourceVersion":"","uid":"","creationTimestamp":"20'
    b'{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster",'
    b'"metadata":{"name":"","labels":{"region":"","zone":"","env":"","provider":"'
    b'"spec":{"hubAcceptsClient":true,"leaseDurationSeconds":60,"taints":[{"key":"'
    b'"effect":"NoSelect","timeAdded":"'
    b'"status":{"capacity":{"cpu":"","memory":"Gi"},"allocatable":{"cpu":"","memory":"Gi"},'
    b'"clusterClaims":[{"name":"kubeversion.open-cluster-management.io","value":"v1.'
)
_WBITS = -15  # raw deflate: no header or checksum, the bytes never leave the process


@dataclass(frozen=True, slots=True)
class DocumentRow(ClusterRow):
    """A cluster row and its whole object (deflated JSON). Rows compare by their features
    only, as `ClusterRow`s do: an update that changes the object but no feature (an annotation,
    a condition) is not a change of the columns; the index restamps the cluster for CEL."""

    packed: bytes = field(default=b"", compare=False, repr=False)


def pack(cluster: ManagedCluster) -> bytes:
    """The cluster's wire form as deflated JSON, but for its resourceVersion (the row keeps
    it): an update changing nothing else packs the same bytes, so the index sees that the
    object CEL reads did not change. Packed on every cluster event, so kept to pydantic's own
    serializer; the Go shape CEL sees is made on `unpack`, which only the interpreter needs."""
    text = cluster.model_dump_json(
        by_alias=True, exclude_none=True, exclude={"metadata": {"resource_version"}}
    ).encode()
    deflate = zlib.compressobj(1, zlib.DEFLATED, _WBITS, 8, zlib.Z_DEFAULT_STRATEGY, _PRESET)
    return deflate.compress(text) + deflate.flush()


def unpack(row: DocumentRow) -> dict[str, Any]:
    """The cluster the row was made from, as `placement.snapshot.fleet_snapshot.unstructured` gives
    it (the typed document of `placement.cel.document`)."""
    inflate = zlib.decompressobj(_WBITS, _PRESET)
    wire = json.loads(inflate.decompress(row.packed) + inflate.flush())
    if row.resource_version:
        wire.setdefault("metadata", {})["resourceVersion"] = row.resource_version
    return typed(wire)


def document_row(cluster: ManagedCluster) -> DocumentRow:
    """The cluster's row and its packed object."""
    row = features(cluster)
    return DocumentRow(
        row.labels,
        row.claims,
        row.deleting,
        row.allocatable,
        row.capacity,
        row.taints,
        row.name,
        row.resource_version,
        row.annotations,
        pack(cluster),
    )
