"""The spot webhook answering after the API server's timeout, on the embedded API server's real
admission path (issue 48): a MutatingWebhookConfiguration with `timeoutSeconds: 1`, a webhook
whose first answers are held 1.5 s (its fault-injection delay), pods created as a ReplicaSet
controller creates them (batches of 1, 2, then the rest at once).

Under `failurePolicy: Ignore` the late pods are created unmutated, and the places their
reservations took are given back when the API server hangs up, so the later pods still make
exactly M on-demand (before, the late answers held the places: 0 on-demand). Under `Fail` the
late creates fail, the controller retries them, and every pod ends mutated, exactly M on-demand.
With two replicas sharing their count through a Lease the same holds.
"""

from __future__ import annotations

from collections import Counter

import pytest

from apis.core import Pod
from controllers.addons.webhook import AnswerDelay
from controllers.kube.errors import ServerError
from tests.controllers.addons.test_webhook_e2e import (
    Cluster,
    capacity,
    cluster,
    create_all,
    deployment,
    known,
    rs_pod,
)

pytestmark = pytest.mark.asyncio

__all__ = ["cluster"]  # the fixture, used here by name

M, REPLICAS, LATE = 3, 10, 3
DELAY = AnswerDelay(1.5, first=LATE)  # past the configuration's timeoutSeconds: 1


async def counted(cluster: Cluster) -> Counter[str | None]:
    return Counter(capacity(pod) for pod in (await cluster.gw.list(Pod, "default")).items)


@pytest.mark.parametrize("shared", [pytest.param(False, id="one"), pytest.param(True, id="lease")])
async def test_late_answers_under_ignore_give_their_places_back(
    cluster: Cluster, shared: bool
) -> None:
    replica = await cluster.start_replica(shared=shared, delay=DELAY)
    await cluster.configure(replica.port, policy="Ignore", timeout=1)
    rs = await deployment(cluster.gw, replicas=REPLICAS, m=str(M))
    await known(cluster, "Deployment", "web")
    late = await create_all(cluster.gw, [rs_pod(rs)])
    late += await create_all(cluster.gw, [rs_pod(rs) for _ in range(2)])
    assert [capacity(p) for p in late] == [None] * LATE  # the API server ignored the answers
    rest = await create_all(cluster.gw, [rs_pod(rs) for _ in range(REPLICAS - LATE)])
    assert Counter(capacity(p) for p in rest) == {"on-demand": M, "spot": REPLICAS - LATE - M}
    assert await counted(cluster) == {None: LATE, "on-demand": M, "spot": REPLICAS - LATE - M}
    registry = replica.webhook.metrics.registry
    sample = {"reason": "gone"}
    assert registry.get_sample_value("spot_webhook_reservations_released_total", sample) == LATE


async def test_late_answers_under_fail_are_retried_to_exactly_m(cluster: Cluster) -> None:
    replica = await cluster.start_replica(shared=True, delay=DELAY)
    await cluster.configure(replica.port, policy="Fail", timeout=1)
    rs = await deployment(cluster.gw, replicas=REPLICAS, m=str(M))
    await known(cluster, "Deployment", "web")
    failed = 0
    while failed < LATE:  # the controller retries each create that failed
        with pytest.raises(ServerError, match="context deadline exceeded"):
            await cluster.gw.create(rs_pod(rs))
        failed += 1
    await create_all(cluster.gw, [rs_pod(rs) for _ in range(REPLICAS)])
    assert await counted(cluster) == {"on-demand": M, "spot": REPLICAS - M}
