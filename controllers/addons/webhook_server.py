"""The spot webhook's HTTPS server: `POST /mutate` answered by `SpotWebhook`, plus `/healthz`
and `/readyz` (the kubelet probes with `scheme: HTTPS`); the certificate files are checked every
`reload_interval` and reloaded when they change. A caller that hangs up (the API server at its
`timeoutSeconds`) cancels its handler, so the place its answer held is given back at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiohttp import web

from controllers.addons.webhook import MUTATE_PATH, SpotWebhook
from controllers.addons.webhook_certs import ReloadingContext
from controllers.addons.webhook_input import MAX_DEPTH, parse_review
from controllers.runtime.http import MAX_BODY_BYTES, parse_address, serve

__all__ = ["Ready", "WebhookServer"]

log = logging.getLogger(SpotWebhook.__module__)  # the webhook's one logger

Ready = Callable[[], tuple[bool, str]]


def _connected(request: web.Request) -> bool:
    """Whether the caller still waits for the answer (the API server hangs up at its
    `timeoutSeconds`)."""
    transport = request.transport
    return transport is not None and not transport.is_closing()


class WebhookServer:
    """HTTPS: `POST /mutate`, `GET /healthz`, `GET /readyz`."""

    def __init__(
        self,
        webhook: SpotWebhook,
        tls: ReloadingContext,
        *,
        address: str = ":8443",
        ready: Ready = lambda: (True, ""),
        reload_interval: float = 2.0,
    ) -> None:
        self.webhook = webhook
        self.tls = tls
        self.host, self.port = parse_address(address)
        self.ready = ready
        self.reload_interval = reload_interval
        self._runner: web.AppRunner | None = None
        self._reloader: asyncio.Task[None] | None = None

    async def start(self) -> str:
        """Listen (port 0: a free one); the bound `host:port` back."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(MUTATE_PATH, self._mutate)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        # A caller that hangs up (the API server at its timeoutSeconds) cancels its handler:
        # the place its answer held is given back at once, not when the answer is ready.
        self._runner, bound, self.port = await serve(
            app, self.host, self.port, ssl_context=self.tls.context, handler_cancellation=True
        )
        self._reloader = asyncio.create_task(self._reload_loop(), name="webhook cert reload")
        log.info("spot webhook listening on https://%s%s", bound, MUTATE_PATH)
        return bound

    async def stop(self) -> None:
        if self._reloader is not None:
            self._reloader.cancel()
            await asyncio.wait({self._reloader})
            self._reloader = None
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _reload_loop(self) -> None:
        while True:
            await asyncio.sleep(self.reload_interval)
            self.tls.reload_if_changed()

    async def _mutate(self, request: web.Request) -> web.Response:
        try:
            doc, truncated = parse_review(await request.text())
            deep = f"the review is nested deeper than {MAX_DEPTH} levels" if truncated else None
            answer = await self.webhook.answer(
                doc, refuse=deep, connected=lambda: _connected(request)
            )
        except ValueError as exc:  # JSONDecodeError too
            return web.Response(status=400, text=f"bad admission review: {exc}")
        if answer is None:  # nobody reads it
            return web.Response(status=503, text="the client hung up before the answer")
        return web.json_response(answer)

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _: web.Request) -> web.Response:
        ready, detail = self.ready()
        return web.Response(status=200 if ready else 503, text=detail or ("ok" if ready else ""))
