"""The embedded Kubernetes API server used by the demo and the tests
(docs/architecture.md, 'Kubernetes gateway, embedded API server, cache and queue')."""

from controllers.embedded.apiserver import EmbeddedApiServer, SnapshotError
from controllers.embedded.audit import Audit, AuditEntry
from controllers.embedded.faults import Faults
from controllers.embedded.kubelet import Kubelet, KubeletOptions

__all__ = [
    "Audit",
    "AuditEntry",
    "EmbeddedApiServer",
    "Faults",
    "Kubelet",
    "KubeletOptions",
    "SnapshotError",
]
