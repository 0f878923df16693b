"""What the spot webhook accepts of an AdmissionReview before it acts on it.

The API server decodes a pod into its typed object before admission, so a real review carries a
well-formed pod. A review sent by anything else may not: `spec.affinity` a string, an annotation
nested 100,000 lists deep. The webhook must still answer such a review with a well-formed
AdmissionReview (allowed, no patch, a warning naming the problem), never a 500, which a
`failurePolicy: Ignore` turns into an unmutated pod and a drifting on-demand count.

* `parse_review(body)`: the JSON document, with any value nested deeper than MAX_DEPTH replaced
  by `null` (Python's decoder gives up with RecursionError around 1,000 levels), and whether
  that happened;
* `pod_problems(pod)`: the pod checked against the Pod model, its problems as `path: rule`;
* `with_identity(pod, request)`: the pod with the request's namespace (and name) filled in;
* `log_decision(...)`: the one line said per pod placed, left alone with a warning or abandoned.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from apis.core import Pod
from apis.errors import ObjectValidationError
from apis.registry import parse_as

__all__ = ["MAX_DEPTH", "log_decision", "parse_review", "pod_problems", "with_identity"]

MAX_DEPTH: Final = 100
"""Nesting kept (a pod is a dozen levels deep; Kubernetes' own decoders stop at 10,000)."""

_OPEN: Final = frozenset("[{")
_CLOSE: Final = frozenset("]}")


def parse_review(body: str) -> tuple[Any, bool]:
    """The document in `body` and True when parts nested deeper than MAX_DEPTH were dropped
    (replaced by null). Raises ValueError when `body` is not JSON."""
    try:
        return json.loads(body), False
    except RecursionError:
        return json.loads(_shallow(body, MAX_DEPTH)), True


def _shallow(text: str, limit: int) -> str:
    """`text` with every array or object that opens below depth `limit` replaced by null (one
    pass, strings skipped with their escapes; the result is valid JSON when `text` was)."""
    out: list[str] = []
    depth = 0
    skip_from = -1  # the depth at which the value being dropped opened; -1: not dropping
    in_string = escaped = False
    start = 0  # where the text not yet copied begins
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in _OPEN:
            depth += 1
            if depth > limit and skip_from < 0:
                out.append(text[start:i])
                out.append("null")
                skip_from = depth
        elif ch in _CLOSE:
            if skip_from == depth:
                skip_from = -1
                start = i + 1
            depth -= 1
    if skip_from < 0:
        out.append(text[start:])
    return "".join(out)


def pod_problems(pod: dict[str, Any]) -> list[str]:
    """The pod's breaches of the Pod model (wrong types where the scheduler and the webhook
    read: metadata, labels, annotations, owner references, spec, affinity, tolerations...),
    one `path: rule` each; empty when the pod is well-formed."""
    try:
        parse_as(Pod, pod)
    except ObjectValidationError as exc:
        return [str(problem) for problem in exc.problems]
    return []


def log_decision(
    log: logging.Logger, request: dict[str, Any], decision: str, warnings: list[str]
) -> None:
    """One line per pod placed (or left alone with a warning): which pod, where it goes."""
    found = request.get("object")
    pod: dict[str, Any] = found if isinstance(found, dict) else {}
    found = pod.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    name = meta.get("name") or f"{meta.get('generateName') or ''}*"
    namespace = request.get("namespace") or meta.get("namespace") or ""
    why = f" ({'; '.join(warnings)})" if warnings else ""
    log.info("pod %s/%s: %s%s", namespace, name, decision, why)


def with_identity(pod: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The pod with its namespace (and name, if the request has one) filled in: on CREATE the
    object often carries neither, the request does."""
    meta = pod.get("metadata") or {}
    if meta.get("namespace") and (meta.get("name") or not request.get("name")):
        return pod
    meta = {**meta, "namespace": meta.get("namespace") or request.get("namespace") or ""}
    if not meta.get("name") and request.get("name"):
        meta["name"] = request["name"]
    return {**pod, "metadata": meta}
