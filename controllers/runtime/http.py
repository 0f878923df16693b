"""The controller's HTTP endpoint (aiohttp): probes, Prometheus metrics and OCM's debug API.

* `GET /healthz` — liveness: the process serves requests.
* `GET /readyz` — readiness, from the manager's `ready()` callback (503 while not ready).
* `GET /metrics` — `Metrics.exposition()` in the Prometheus text format.
* `GET /debug/placements/<namespace>/<name>` — OCM's debugger document (`placement.explain`)
  for a stored placement; `POST /debug/placements/` with a Placement JSON body (≤ 1 MiB) — the
  same for a placement that is not stored (a dry run). Nothing is written either way. Errors
  come as OCM's debugger sends them: a JSON object with an `error` message.

The server itself is stateless: what it reports comes from callbacks, so it serves a leader and
a standby alike, and a callback that fails costs one 500, not the server.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from controllers.runtime.metrics import Metrics

__all__ = [
    "DEBUG_PATH",
    "MAX_BODY_BYTES",
    "DryRun",
    "Explain",
    "HttpServer",
    "Readiness",
    "parse_address",
]

log = logging.getLogger(__name__)

DEBUG_PATH: Final = "/debug/placements/"
MAX_BODY_BYTES: Final = 1024 * 1024  # OCM's debugger limit for a posted Placement

# (ready, detail): detail says why, e.g. (True, "leader"), (False, "caches not synced").
Readiness = Callable[[], tuple[bool, str]]
# The explain document of the stored placement namespace/name; None when there is none.
Explain = Callable[[str, str], dict[str, Any] | None]
# The explain document of a posted Placement; ValueError (naming the field) on a bad one.
DryRun = Callable[[dict[str, Any]], dict[str, Any]]

_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def parse_address(address: str) -> tuple[str | None, int]:
    """`host:port`, `:port` (every interface: host None) or `[ipv6]:port` as (host, port)."""
    problem = "expected host:port, :port or [ipv6]:port"
    host, sep, port_text = address.rpartition(":")
    if not sep:
        raise ValueError(f"invalid listen address {address!r}: {problem}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"invalid listen address {address!r}: {host!r} is not IPv6") from None
    elif host and not _HOST.fullmatch(host):
        raise ValueError(f"invalid listen address {address!r}: {problem}")
    if not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"invalid listen address {address!r}: port must be 0-65535")
    return host or None, int(port_text)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


class HttpServer:
    """`await start()` (the bound "host:port" back), `await stop()`."""

    def __init__(
        self,
        *,
        address: str = "127.0.0.1:8080",
        metrics: Metrics,
        ready: Readiness,
        explain: Explain,
        dry_run: DryRun | None = None,
    ) -> None:
        self.host, self.port = parse_address(address)
        self.metrics = metrics
        self._ready = ready
        self._explain = explain
        self._dry_run = dry_run
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        """Listen; port 0 picks a free port. Returns the address bound."""
        if self._runner is not None:
            raise RuntimeError("the HTTP server is already started")
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[self._guard])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_route("*", DEBUG_PATH.rstrip("/"), self._debug)
        app.router.add_route("*", DEBUG_PATH + "{key:.*}", self._debug)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self.port = port
        bound = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        log.info("HTTP endpoint listening on %s", bound)
        return bound

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    # --- handlers ------------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception as exc:
            log.exception("%s %s failed", request.method, request.path)
            message = f"internal error: {exc or type(exc).__name__}"
            if request.path.startswith("/debug"):
                return _error(500, message)
            return web.Response(status=500, text=message)

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _: web.Request) -> web.Response:
        ready, detail = self._ready()
        if ready:
            return web.Response(text=f"ok ({detail})" if detail else "ok")
        return web.Response(status=503, text=f"not ready ({detail})" if detail else "not ready")

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(
            body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def _debug(self, request: web.Request) -> web.Response:
        key = request.match_info.get("key", "")
        if request.method == "POST" and not key:
            return await self._debug_post(request)
        if request.method in ("GET", "HEAD"):
            return self._debug_get(key)
        allowed = "GET" if key else "POST"
        response = _error(405, f"method {request.method} is not allowed here, only {allowed}")
        response.headers["Allow"] = allowed
        return response

    def _debug_get(self, key: str) -> web.Response:
        namespace, _, name = key.partition("/")
        if not namespace or not name or "/" in name:
            return _error(400, f"invalid debug path {DEBUG_PATH}{key}: namespace and name required")
        doc = self._explain(namespace, name)
        if doc is None:
            return _error(404, f"placement '{namespace}/{name}' not found")
        return web.json_response(doc)

    async def _debug_post(self, request: web.Request) -> web.Response:
        if self._dry_run is None:
            return _error(405, "dry runs of posted placements are not enabled")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"request body too large: exceeds maximum of {MAX_BODY_BYTES} bytes")
        try:
            doc = json.loads(body)
        except ValueError as exc:
            return _error(400, f"failed to parse the Placement JSON: {exc}")
        if not isinstance(doc, dict):
            return _error(400, "the body must be a JSON object (a Placement)")
        try:
            result = self._dry_run(doc)
        except ValueError as exc:
            return _error(400, str(exc))
        return web.json_response(result)
