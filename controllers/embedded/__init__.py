"""The embedded Kubernetes API server used by the demo and the tests (DESIGN §7)."""

from controllers.embedded.apiserver import EmbeddedApiServer, SnapshotError
from controllers.embedded.faults import Faults

__all__ = ["EmbeddedApiServer", "Faults", "SnapshotError"]
