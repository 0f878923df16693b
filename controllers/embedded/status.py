"""`metav1.Status`: how the embedded API server answers errors (and some successes), as the real
one does, so that clients and kubectl decode them into their usual errors."""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as _quoted
from typing import Any

__all__ = ["StatusError", "status_doc", "success_json"]

_REASONS = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


def status_doc(
    code: int, message: str, reason: str | None = None, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A Status object; `code` below 400 makes it a Success."""
    doc: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "code": code,
    }
    if code >= 400:
        doc["reason"] = reason or _REASONS.get(code, "Unknown")
    if details:
        doc["details"] = details
    return doc


def success_json(code: int, message: str) -> bytes:
    """`json.dumps(status_doc(code, message))` for a success (`code` below 400), written from
    its parts: the answer to every binding, one per pod scheduled."""
    if code >= 400:
        raise ValueError(f"{code} is no success")
    return (
        '{"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", '
        f'"message": {_quoted(message)}, "code": {int(code)}}}'
    ).encode()


class StatusError(Exception):
    """An error the server answers with a Status (the store and the handlers raise it)."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.doc = status_doc(code, message, reason, details)

    @classmethod
    def not_found(cls, group: str, plural: str, name: str) -> StatusError:
        resource = f"{plural}.{group}" if group else plural
        details = {"name": name, "group": group, "kind": plural}
        return cls(404, f'{resource} "{name}" not found', "NotFound", details)

    @classmethod
    def conflict(cls, group: str, plural: str, name: str, why: str) -> StatusError:
        resource = f"{plural}.{group}" if group else plural
        details = {"name": name, "group": group, "kind": plural}
        message = f'Operation cannot be fulfilled on {resource} "{name}": {why}'
        return cls(409, message, "Conflict", details)

    @classmethod
    def uid_mismatch(
        cls, group: str, kind: str, plural: str, name: str, sent: str, stored: str
    ) -> StatusError:
        """409 for a delete whose UID precondition is not the object's, in kube's words (which
        name the kind here, not the resource)."""
        what = f"{kind}.{group}" if group else kind
        details = {"name": name, "group": group, "kind": plural}
        message = (
            f'Operation cannot be fulfilled on {what} "{name}": the UID in the precondition '
            f"({sent}) does not match the UID in record ({stored}). The object might have been "
            "deleted and then recreated"
        )
        return cls(409, message, "Conflict", details)
