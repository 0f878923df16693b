"""Events as a real API server serves them: one store, two APIs. An Event written through
events.k8s.io/v1 (as our controller and OCM's write them) is listed by core/v1 (`kubectl get
events`, `kubectl describe`), and the other way round, with the same name, uid and
resourceVersion; deleting it through either API deletes it from both.

The field mapping is Kubernetes' own conversion between the two versions:

| events.k8s.io/v1 | core/v1 |
|---|---|
| regarding | involvedObject |
| note | message |
| reportingController | reportingComponent |
| deprecatedSource | source |
| deprecatedFirstTimestamp | firstTimestamp |
| deprecatedLastTimestamp | lastTimestamp |
| deprecatedCount | count |

and `reason`, `type`, `action`, `eventTime`, `series`, `related`, `reportingInstance` as they are.
"""

from __future__ import annotations

from typing import Any

__all__ = ["to_core", "to_events"]

# events.k8s.io/v1 field -> core/v1 field, for the fields whose names differ.
_RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_BACK = {core: events for events, core in _RENAMED.items()}


def _converted(doc: dict[str, Any], api_version: str, names: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": api_version, "kind": "Event", "metadata": doc["metadata"]}
    for key, value in doc.items():
        if key in ("apiVersion", "kind", "metadata") or value is None:
            continue
        out[names.get(key, key)] = value
    return out


def to_core(doc: dict[str, Any]) -> dict[str, Any]:
    """The core/v1 view of an events.k8s.io/v1 Event (sharing its values: never mutated)."""
    return _converted(doc, "v1", _RENAMED)


def to_events(doc: dict[str, Any]) -> dict[str, Any]:
    """The events.k8s.io/v1 view of a core/v1 Event (sharing its values: never mutated)."""
    return _converted(doc, "events.k8s.io/v1", _BACK)
