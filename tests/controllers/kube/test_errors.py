"""The translation of HTTP statuses and metav1.Status bodies into our ApiError tree."""

from __future__ import annotations

import json

import pytest

from controllers.kube.errors import (
    AlreadyExistsError,
    ApiError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    NotFoundError,
    ServerError,
    StatusCause,
    TooManyRequestsError,
    UnauthorizedError,
    error_from_status,
)


def _status(code: int, reason: str, **extra: object) -> bytes:
    doc = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    doc.update(reason=reason, message=f"{reason} happened", **extra)
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        pytest.param(400, "BadRequest", BadRequestError, id="400"),
        pytest.param(401, "Unauthorized", UnauthorizedError, id="401"),
        pytest.param(403, "Forbidden", ForbiddenError, id="403"),
        pytest.param(404, "NotFound", NotFoundError, id="404"),
        pytest.param(409, "Conflict", ConflictError, id="409"),
        pytest.param(409, "AlreadyExists", AlreadyExistsError, id="409-already-exists"),
        pytest.param(410, "Expired", GoneError, id="410"),
        pytest.param(422, "Invalid", InvalidError, id="422"),
        pytest.param(429, "TooManyRequests", TooManyRequestsError, id="429"),
        pytest.param(500, "InternalError", ServerError, id="500"),
        pytest.param(503, "ServiceUnavailable", ServerError, id="503"),
        pytest.param(418, "Teapot", ApiError, id="other"),
    ],
)
def test_status_code_picks_the_error_class(code: int, reason: str, cls: type[ApiError]) -> None:
    error = error_from_status(code, _status(code, reason))
    assert type(error) is cls
    assert (error.code, error.reason, error.message) == (code, reason, f"{reason} happened")


def test_invalid_error_carries_the_causes() -> None:
    details = {"causes": [{"field": "spec.x", "message": "bad", "reason": "FieldValueInvalid"}]}
    error = error_from_status(422, _status(422, "Invalid", details=details))
    assert error.causes == (StatusCause("spec.x", "bad", "FieldValueInvalid"),)


def test_retry_after_comes_from_the_header_or_the_details() -> None:
    details = {"retryAfterSeconds": 3}
    assert error_from_status(429, _status(429, "TooManyRequests", details=details)).retry_after == 3
    assert error_from_status(429, b"", retry_after="2").retry_after == 2


def test_a_body_that_is_not_a_status_still_gives_an_error() -> None:
    error = error_from_status(502, b"<html>bad gateway</html>")
    assert isinstance(error, ServerError)
    assert error.message == "<html>bad gateway</html>"


def test_the_code_inside_a_watch_error_event_wins() -> None:
    assert isinstance(error_from_status(200, {"code": 410, "reason": "Expired"}), GoneError)
