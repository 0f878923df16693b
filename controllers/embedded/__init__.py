"""The embedded Kubernetes API server used by the demo and the tests (DESIGN §7)."""

from controllers.embedded.apiserver import EmbeddedApiServer, SnapshotError
from controllers.embedded.audit import Audit, AuditEntry
from controllers.embedded.faults import Faults

__all__ = ["Audit", "AuditEntry", "EmbeddedApiServer", "Faults", "SnapshotError"]
