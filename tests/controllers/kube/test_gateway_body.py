"""What a write puts on the wire: the body as compact JSON, with the content type asked for."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web

from apis.core import Event
from apis.placements import Placement
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway

pytestmark = pytest.mark.asyncio


async def test_write_bodies_go_as_compact_json() -> None:
    seen: list[tuple[str, str, bytes]] = []

    async def answer(request: web.Request) -> web.Response:
        seen.append((request.method, request.content_type, await request.read()))
        return web.json_response({}, status=201)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    body: dict[str, Any] = {
        "kind": "Event",
        "metadata": {"name": "e.1", "namespace": "apps"},
        "series": None,
        "note": 'naïve "quoted" note',
        "regarding": {"kind": "Placement", "name": "web"},
    }
    patch = {"status": {"decisionGroups": [{"decisionGroupIndex": 0, "clusterCount": 2}]}}
    try:
        async with await Gateway.connect(ClusterAccess(url=url)) as gateway:
            await gateway.post_wire(Event, "apps", body)
            await gateway.patch_event(Placement, "web", "apps", patch)
    finally:
        await runner.cleanup()
    (post_method, post_type, post_raw), (patch_method, patch_type, patch_raw) = seen
    assert (post_method, post_type) == ("POST", "application/json")
    assert patch_method == "PATCH" and patch_type.endswith("strategic-merge-patch+json")
    assert json.loads(post_raw) == body and json.loads(patch_raw) == patch
    assert post_raw == json.dumps(body, separators=(",", ":")).encode()
    assert b" " not in patch_raw
