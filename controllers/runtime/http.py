"""A controller's HTTP endpoints (aiohttp): probes, Prometheus metrics and whatever routes the
controller adds.

* `GET /healthz` — liveness: the process serves requests (served with a `ready` callback).
* `GET /readyz` — readiness, from the controller's `ready()` callback (503 while not ready).
* `GET /metrics` — `exposition()` of the controller's metrics, in the Prometheus text format
  (served with `metrics`).
* the routes of each `Routes` passed in (the hub's `/debug/placements/`, for one); an error
  under a `Routes.prefix` is answered as a JSON object with an `error` message.

One process may listen twice: the probes and metrics where kubelet and Prometheus reach them,
and routes that must stay private (the debug API) on a second server bound to loopback, reached
with `kubectl port-forward`, which Kubernetes RBAC guards (`pods/portforward`).

The server itself is stateless: what it reports comes from callbacks, so it serves a leader and
a standby alike, and a callback that fails costs one 500, not the server.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from controllers.runtime.metrics import Exposition

__all__ = [
    "MAX_BODY_BYTES",
    "HttpServer",
    "Readiness",
    "Routes",
    "json_error",
    "parse_address",
    "serve",
]

log = logging.getLogger(__name__)

MAX_BODY_BYTES: Final = 1024 * 1024  # the largest request body read (OCM's debugger limit)

# (ready, detail): detail says why, e.g. (True, "leader"), (False, "caches not synced").
Readiness = Callable[[], tuple[bool, str]]


class Routes(Protocol):
    """Endpoints a controller serves beside the probes and metrics."""

    prefix: str
    """Every path of these routes starts with it; their errors are answered as JSON."""

    def add_to(self, router: web.UrlDispatcher) -> None:
        """Register the handlers."""


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


def json_error(status: int, message: str) -> web.Response:
    """An error as a JSON object with an `error` message (as OCM's debugger sends them)."""
    return web.json_response({"error": message}, status=status)


async def serve(
    app: web.Application,
    host: str | None,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None = None,
    handler_cancellation: bool = False,
) -> tuple[web.AppRunner, str, int]:
    """Serve `app` on `host:port` (no host: every interface; port 0: a free one): its runner,
    the address bound (`host:port`, IPv6 in brackets) and the port. Nothing is left listening
    if it fails."""
    runner = web.AppRunner(
        app, access_log=None, shutdown_timeout=0.5, handler_cancellation=handler_cancellation
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, ssl_context=ssl_context).start()
    except BaseException:
        await runner.cleanup()
        raise
    bound_host, bound_port = runner.addresses[0][:2]
    shown = f"[{bound_host}]:{bound_port}" if ":" in bound_host else f"{bound_host}:{bound_port}"
    return runner, shown, int(bound_port)


class HttpServer:
    """`await start()` (the bound "host:port" back), `await stop()`. Serves the probes when
    given `ready`, `/metrics` when given `metrics`, and `routes`; `name` is for the logs."""

    def __init__(
        self,
        *,
        address: str = "127.0.0.1:8080",
        metrics: Exposition | None = None,
        ready: Readiness | None = None,
        routes: Sequence[Routes] = (),
        name: str = "HTTP endpoint",
    ) -> None:
        self.host, self.port = parse_address(address)
        self.address = address
        self.metrics = metrics
        self.name = name
        self._ready = ready
        self._routes = tuple(routes)
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        """Listen; port 0 picks a free port. Returns the address bound."""
        if self._runner is not None:
            raise RuntimeError("the HTTP server is already started")
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[self._guard])
        if self._ready is not None:
            app.router.add_get("/healthz", self._healthz)
            app.router.add_get("/readyz", self._readyz)
        if self.metrics is not None:
            app.router.add_get("/metrics", self._metrics)
        for routes in self._routes:
            routes.add_to(app.router)
        self._runner, bound, self.port = await serve(app, self.host, self.port)
        log.info("%s listening on %s", self.name, bound)
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
            if any(request.path.startswith(r.prefix) for r in self._routes):
                return json_error(500, message)
            return web.Response(status=500, text=message)

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _: web.Request) -> web.Response:
        assert self._ready is not None  # the route exists only with a callback
        ready, detail = self._ready()
        if ready:
            return web.Response(text=f"ok ({detail})" if detail else "ok")
        return web.Response(status=503, text=f"not ready ({detail})" if detail else "not ready")

    async def _metrics(self, _: web.Request) -> web.Response:
        assert self.metrics is not None  # the route exists only with metrics
        return web.Response(
            body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )
