"""OCM's placement debug API, served by the manager on a listener of its own (`debug_addr`,
loopback by default), never beside `/metrics`: it answers without authentication.

* `GET /debug/placements/<namespace>/<name>` — OCM's debugger document (`placement.explain`)
  for a stored placement;
* `POST /debug/placements/` with a Placement JSON body (≤ 1 MiB) — the same for a placement
  that is not stored (a dry run).

Nothing is written either way. Errors come as OCM's debugger sends them: a JSON object with an
`error` message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from aiohttp import web

from controllers.runtime.http import MAX_BODY_BYTES, json_error

__all__ = ["DEBUG_PATH", "DebugRoutes", "DryRun", "Explain"]

DEBUG_PATH: Final = "/debug/placements/"

# The explain document of the stored placement namespace/name; None when there is none.
Explain = Callable[[str, str], dict[str, Any] | None]
# The explain document of a posted Placement; ValueError (naming the field) on a bad one.
DryRun = Callable[[dict[str, Any]], dict[str, Any]]


class DebugRoutes:
    """The debug endpoints, answered by `explain` (stored placements) and `dry_run` (posted
    ones; None: posting is refused)."""

    prefix = DEBUG_PATH.rstrip("/")

    def __init__(self, explain: Explain, dry_run: DryRun | None = None) -> None:
        self._explain = explain
        self._dry_run = dry_run

    def add_to(self, router: web.UrlDispatcher) -> None:
        router.add_route("*", self.prefix, self._dispatch)
        router.add_route("*", DEBUG_PATH + "{key:.*}", self._dispatch)

    async def _dispatch(self, request: web.Request) -> web.Response:
        key = request.match_info.get("key", "")
        if request.method == "POST" and not key:
            return await self._post(request)
        if request.method in ("GET", "HEAD"):
            return self._get(key)
        allowed = "GET" if key else "POST"
        response = json_error(405, f"method {request.method} is not allowed here, only {allowed}")
        response.headers["Allow"] = allowed
        return response

    def _get(self, key: str) -> web.Response:
        namespace, _, name = key.partition("/")
        if not namespace or not name or "/" in name:
            return json_error(
                400, f"invalid debug path {DEBUG_PATH}{key}: namespace and name required"
            )
        doc = self._explain(namespace, name)
        if doc is None:
            return json_error(404, f"placement '{namespace}/{name}' not found")
        return web.json_response(doc)

    async def _post(self, request: web.Request) -> web.Response:
        if self._dry_run is None:
            return json_error(405, "dry runs of posted placements are not enabled")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return json_error(
                413, f"request body too large: exceeds maximum of {MAX_BODY_BYTES} bytes"
            )
        try:
            doc = json.loads(body)
        except ValueError as exc:
            return json_error(400, f"failed to parse the Placement JSON: {exc}")
        if not isinstance(doc, dict):
            return json_error(400, "the body must be a JSON object (a Placement)")
        try:
            result = self._dry_run(doc)
        except ValueError as exc:
            return json_error(400, str(exc))
        return web.json_response(result)
