"""How one request reaches the API server and what comes back, under the gateway's typed verbs:
the HTTP call, its failures as our `ApiError` tree, the JSON body, and the retry policy of reads.

Requests go to the kubernetes-asyncio client's own aiohttp session (its connection pool, TLS
settings, proxy and credentials, the bearer token read through the client's refresh hook on each
request), so one code path serves every kind of `apis.registry` (custom or core) without
generated per-kind clients. They skip `ApiClient.call_api`, whose walk of every body and header
(`sanitize_for_serialization`) and request bookkeeping cost more than the HTTP exchange itself at
thousands of requests a second: 14% of a controller's cold start (the pod scheduler took this
path first). Idempotent reads are retried with exponential backoff; writes never are, because a
write that timed out may have been applied. Which request is a read is the gateway's call: it
wraps reads in `retry_read`.

kubernetes-asyncio opens its aiohttp session with `trust_env=True`, which makes every request
look up `~/.netrc` and the proxy variables in a worker thread (two thread hops per request, a
third of a controller's cold start against a local server). `read_env_once` reads the proxy
variables once instead, when the gateway is created, as client-go does (`ProxyFromEnvironment`,
and no netrc), and turns the per-request lookups off.

Each request can be reported to a `RequestObserver` as (HTTP method, status code), the code
`<error>` when no answer came: what client-go's `rest_client_requests_total` counts.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlencode

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from controllers.kube.errors import (
    ApiError,
    ServerError,
    TooManyRequestsError,
    TransportError,
    error_from_status,
)

if TYPE_CHECKING:
    from kubernetes_asyncio import client

__all__ = [
    "NO_RESPONSE_CODE",
    "InvalidResponseError",
    "RequestObserver",
    "open_response",
    "read_env_once",
    "read_json",
    "retry_read",
]

log = logging.getLogger(__name__)

R = TypeVar("R")

_BEARER = "BearerToken"
_AUTH = [_BEARER]

# The status code reported for a request that got no HTTP answer (client-go's "<error>").
NO_RESPONSE_CODE: Final = "<error>"
# Hears (method, status code) of every request sent; must be cheap and must not raise.
RequestObserver = Callable[[str, str], None]


class InvalidResponseError(ApiError):
    """The server answered with an object our models reject (or with no JSON at all)."""


def read_env_once(api_client: client.ApiClient) -> None:
    """Resolve the proxy variables for the client's host now, then stop aiohttp from reading
    the environment (netrc, proxy variables) on every request; see the module docstring."""
    rest: Any = getattr(api_client, "rest_client", None)
    session = getattr(rest, "pool_manager", None)
    if not isinstance(session, aiohttp.ClientSession) or not session.trust_env:
        return
    if not rest.proxy:
        host = getattr(api_client.configuration, "host", "") or ""
        try:
            proxy, auth = get_env_proxy_for_url(URL(host))
        except (LookupError, ValueError):
            pass  # no proxy for this host
        else:
            rest.proxy = str(proxy)
            if auth is not None and not rest.proxy_headers:
                rest.proxy_headers = {"Proxy-Authorization": auth.encode()}
    session._trust_env = False


# Request bodies as client-go's encoder writes them: compact, and without the encoder's check
# for circular references (a body is built from JSON-shaped dicts and lists, never a cycle):
# a quarter less time per body than `json.dumps`, on every write.
_encode_body = json.JSONEncoder(check_circular=False, separators=(",", ":")).encode


@functools.lru_cache(maxsize=16)
def _total(seconds: float) -> aiohttp.ClientTimeout:
    """One (frozen) timeout object per value, not one per request."""
    return aiohttp.ClientTimeout(total=seconds)


async def open_response(
    api_client: client.ApiClient,
    method: str,
    path: str,
    *,
    query: Mapping[str, str] | None,
    body: Any,
    content_type: str,
    timeout: aiohttp.ClientTimeout | float,
    observe: RequestObserver | None = None,
) -> aiohttp.ClientResponse:
    """The server's response with its body unread (the caller releases it), or the ApiError
    for a failed request: no answer at all, or an HTTP status of 400 and above. `observe`
    hears how the request ended. `body` is JSON-encoded unless it is bytes or str already."""
    api: Any = api_client
    rest = api.rest_client
    headers = {**api.default_headers, "Content-Type": content_type}
    headers["Accept"] = "application/json"
    if api.cookie:
        headers["Cookie"] = api.cookie
    auth_query: list[tuple[str, str]] = []
    configuration = api.configuration
    if _BEARER in configuration.api_key:
        # Only a configured token is ever sent (its refresh hook runs first): without one,
        # the client's auth settings are empty and the call would only cost its await.
        await api.update_params_for_auth(headers, auth_query, _AUTH)
    url = configuration.host + path
    params = [*(query or {}).items(), *auth_query] if query or auth_query else None
    if params:
        url += "?" + urlencode(params)
    if body is not None and not isinstance(body, bytes | str):
        body = _encode_body(body).encode()
    wait = timeout if isinstance(timeout, aiohttp.ClientTimeout) else _total(timeout)
    extra: dict[str, Any] = {}
    if rest.proxy:
        extra["proxy"] = rest.proxy
    if rest.proxy_headers:
        extra["proxy_headers"] = rest.proxy_headers
    if rest.server_hostname:
        extra["server_hostname"] = rest.server_hostname
    try:
        response: aiohttp.ClientResponse = await rest.pool_manager.request(
            method, url, data=body, headers=headers, timeout=wait, **extra
        )
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        if observe is not None:
            observe(method, NO_RESPONSE_CODE)
        raise TransportError(f"{method} {path}: {exc or type(exc).__name__}") from exc
    if observe is not None:
        observe(method, str(response.status))
    if response.status >= 400:
        try:
            body_bytes = await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(f"{method} {path}: {exc}") from exc
        finally:
            response.release()
        raise error_from_status(response.status, body_bytes, response.headers.get("Retry-After"))
    return response


async def read_json(response: aiohttp.ClientResponse, method: str, path: str) -> Any:
    """The decoded JSON body of `response` (None when empty), which is released either way."""
    try:
        data = await response.read()
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise TransportError(f"{method} {path}: {exc}") from exc
    finally:
        response.release()
    try:
        return json.loads(data) if data else None
    except ValueError as exc:
        raise InvalidResponseError(f"{method} {path}: response is not JSON") from exc


async def retry_read(
    read: Callable[[], Awaitable[R]], *, attempts: int, backoff: float, max_backoff: float
) -> R:
    """Run an idempotent read, retrying server errors and throttling with backoff (the
    server's Retry-After when it gives one, never more than `max_backoff`)."""
    delay = backoff
    for attempt in range(1, attempts + 1):
        try:
            return await read()
        except (ServerError, TooManyRequestsError) as exc:
            if attempt == attempts:
                raise
            wait = exc.retry_after if exc.retry_after is not None else delay
            log.debug("read failed (%s), retry %d in %.2fs", exc, attempt, wait)
            await asyncio.sleep(min(wait, max_backoff))
            delay = min(delay * 2, max_backoff)
    raise AssertionError("unreachable")  # pragma: no cover
