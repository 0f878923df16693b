"""The embedded server's audit log: how many requests it served per (verb, API group, resource,
subresource, namespace), in Kubernetes' RBAC vocabulary, so that a test can run a controller
against the server and compare what it did with what its ClusterRole grants.

Verbs are those RBAC checks: GET on an object is `get`, on a collection `list` (`watch` with
`?watch=1`); POST is `create` (also on `pods/binding` and `pods/eviction`); PUT `update`; PATCH
`patch`; DELETE on an object `delete`, on a collection `deletecollection`. Discovery, OpenAPI
and health URLs are not resources and are not recorded. Every resource request is recorded as it
arrives, whatever its answer (a denied request still needed the verb). Recording is one Counter
increment of a tuple, cheap next to the request itself.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

__all__ = ["Audit", "AuditEntry"]


class AuditEntry(NamedTuple):
    """What one request did, as RBAC sees it. `group` is "" for the core group, `namespace`
    "" for cluster-scoped resources and for requests across all namespaces."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str

    @property
    def rule_resource(self) -> str:
        """The resource as an RBAC rule names it: `placements` or `placements/status`."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


class Audit(Counter[AuditEntry]):
    """Requests served, counted per `AuditEntry`; `clear()` forgets them."""

    def verbs(self) -> dict[tuple[str, str], set[str]]:
        """The verbs used per (group, resource[/subresource]), as RBAC rules are written."""
        out: dict[tuple[str, str], set[str]] = {}
        for entry in self:
            out.setdefault((entry.group, entry.rule_resource), set()).add(entry.verb)
        return out
