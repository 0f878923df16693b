"""The errors of the Kubernetes seam: one tree, built from the HTTP status and the
`metav1.Status` body the API server answers with.

Every module above `controllers/kube/` catches these, never the client library's exceptions, so
that swapping or upgrading the client touches one package only.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AlreadyExistsError",
    "ApiError",
    "BadRequestError",
    "ConflictError",
    "ForbiddenError",
    "GoneError",
    "InvalidError",
    "NotFoundError",
    "ServerError",
    "StatusCause",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "error_from_status",
]


@dataclass(frozen=True)
class StatusCause:
    """One `details.causes` entry of a Status: which field broke which rule."""

    field: str
    message: str
    reason: str = ""


class ApiError(Exception):
    """An API request that failed; `code` is the HTTP status (0 when no response arrived)."""

    def __init__(
        self,
        message: str,
        *,
        code: int = 0,
        reason: str = "",
        causes: tuple[StatusCause, ...] = (),
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.causes = causes
        self.retry_after = retry_after


class BadRequestError(ApiError):
    """400: the request itself is malformed (bad selector, mismatched namespace)."""


class UnauthorizedError(ApiError):
    """401: no or bad credentials."""


class ForbiddenError(ApiError):
    """403: authenticated but not allowed."""


class NotFoundError(ApiError):
    """404: the object (or its namespace, or the resource) does not exist."""


class ConflictError(ApiError):
    """409: a write raced another one (stale resourceVersion) or the state forbids it."""


class AlreadyExistsError(ConflictError):
    """409 with reason AlreadyExistsError: a create of a name that is taken."""


class GoneError(ApiError):
    """410: the resourceVersion asked for is compacted; relist and watch from the new one."""


class InvalidError(ApiError):
    """422: the object breaks its kind's validation rules; `causes` name the fields."""


class TooManyRequestsError(ApiError):
    """429: throttled (or an eviction refused by a disruption budget); retry later."""


class ServerError(ApiError):
    """5xx: the server failed; a read may be retried, a write is not retried blindly."""


class TransportError(ServerError):
    """No HTTP answer at all (connection refused or reset, timeout)."""


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
}


def _causes(details: Any) -> tuple[StatusCause, ...]:
    raw = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(raw, list):
        return ()
    return tuple(
        StatusCause(
            str(cause.get("field", "")), str(cause.get("message", "")), str(cause.get("reason", ""))
        )
        for cause in raw
        if isinstance(cause, dict)
    )


def error_from_status(
    code: int, body: str | bytes | dict[str, Any] | None, retry_after: str | None = None
) -> ApiError:
    """The ApiError for an HTTP status and its body (a metav1.Status, or anything else)."""
    status: Any = body
    if isinstance(body, bytes | str):
        try:
            status = json.loads(body) if body else None
        except ValueError:
            status = None
    if not isinstance(status, dict):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        status = {"message": str(text or "").strip()}
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or reason or f"HTTP {code}")
    if isinstance(status.get("code"), int) and status["code"] >= 400:
        code = status["code"]  # a watch ERROR event carries its code only in the body
    cls: type[ApiError]
    if code == 409 and reason == "AlreadyExists":
        cls = AlreadyExistsError
    elif code in _BY_CODE:
        cls = _BY_CODE[code]
    elif code >= 500 or code == 0:
        cls = ServerError
    else:
        cls = ApiError
    delay: float | None = None
    details = status.get("details")
    if isinstance(details, dict) and isinstance(details.get("retryAfterSeconds"), int):
        delay = float(details["retryAfterSeconds"])
    if retry_after:
        with contextlib.suppress(ValueError):
            delay = float(retry_after)
    return cls(message, code=code, reason=reason, causes=_causes(details), retry_after=delay)
