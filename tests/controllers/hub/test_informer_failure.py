"""Issue 20, item 3: an informer that meets an unexpected exception is never silent. A watch
event larger than the client's line limit (kubernetes_asyncio reads with `read_bufsize=2**21`,
and aiohttp's `readline` refuses a line over twice that: 4 MiB) used to end the Placement
informer without a log line while `/readyz` said 200 and nothing was reconciled again."""

from __future__ import annotations

import json
import logging
from typing import Any

import aiohttp
import pytest

from apis.placements import Placement
from controllers.hub.manager import Manager
from placement.testing import binding, cluster, cluster_set, placement
from tests.controllers.embedded.hub import eventually
from tests.controllers.hub.controller_hub import hub
from tests.controllers.hub.test_controller import create

pytestmark = pytest.mark.asyncio

LINE_LIMIT = 2 * 2**21
# Each write stays under the embedded server's 3 MiB body limit; together they pass the line
# limit in the watch event of the second. Annotations are capped at 256 KiB (as in kube), so the
# bulk is label-selector values (63 bytes each, no limit on their count), and the store's etcd
# limit (`--max-request-bytes`, 1.5 MiB by default) is raised as a cluster may raise it.
VALUE = "x" * 63
VALUES = [f"{i:06d}{VALUE[6:]}" for i in range(36_000)]


def selector() -> dict[str, Any]:
    return {"matchExpressions": [{"key": "big", "operator": "NotIn", "values": VALUES}]}


def patches() -> list[dict[str, Any]]:
    predicate = {"requiredClusterSelector": {"labelSelector": selector()}}
    group = {"groupName": "group-a", "groupClusterSelector": {"labelSelector": selector()}}
    strategy = {"groupStrategy": {"decisionGroups": [group]}}
    return [
        {"spec": {"predicates": [predicate]}},
        {"spec": {"decisionStrategy": strategy}},
    ]


async def readyz(manager: Manager) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://{manager.http_address}/readyz") as response,
    ):
        return response.status, await response.text()


async def test_an_oversized_watch_event_is_logged_unready_and_recovered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with hub(["apps"]) as h:
        await create(
            h,
            [
                cluster("c1", labels={"env": "prod"}, cluster_set="s"),
                cluster_set("s"),
                binding("apps", "s"),
                placement("apps", "big"),
                placement("apps", "other"),
            ],
        )
        manager = await h.manager(http_addr="127.0.0.1:0")
        await manager.wait_idle()
        informer = next(i for i in manager.informers if i.cls is Placement)
        informer.retry_delay = 1.0  # a backoff long enough to look at /readyz during it

        def watching() -> bool:
            return informer.watching

        assert (await readyz(manager))[0] == 200

        h.server.store.max_object_bytes = 8 * 2**20
        for patch in patches():
            await h.gateway.merge_patch(Placement, "big", patch, "apps")
        assert 2 * len(json.dumps(selector())) > LINE_LIMIT

        await eventually(lambda: "Placement watch failed unexpectedly (LineTooLong" in caplog.text)
        assert not watching()
        ready, why = manager.ready()
        assert not ready
        assert why.startswith("informers not watching: Placement: watch failed: LineTooLong")
        status, _ = await readyz(manager)
        assert status == 503

        # The informer relists (a list is not read line by line) and watches again.
        await eventually(watching, timeout=10)
        assert manager.ready()[0]
        assert (await readyz(manager))[0] == 200

        def relisted() -> bool:  # the relist brings both writes into the cache
            big = manager.placements.get("apps/big")
            return (
                big is not None
                and bool(big.spec.predicates)
                and (big.spec.decision_strategy is not None)
            )

        await eventually(relisted, timeout=10)

        # Reconciling goes on: a new placement is scheduled, and the fix reaches the cache.
        await h.gateway.create(placement("apps", "late"))
        await eventually(lambda: h.decided("apps", "late"))
        fix: dict[str, Any] = {"spec": {"predicates": None, "decisionStrategy": None}}
        await h.gateway.merge_patch(Placement, "big", fix, "apps")

        def fixed() -> bool:
            big = manager.placements.get("apps/big")
            return big is not None and not big.spec.predicates

        await eventually(fixed)
        assert watching() and manager.ready()[0]
