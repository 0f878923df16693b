"""The spot webhook's answers that the API server does not use (issue 48): a caller that hangs
up (the API server at its `timeoutSeconds`) gets no answer and its on-demand place is given back
at once, also over real HTTPS where the server cancels the handler; an answer not ready within
the webhook's deadline sends the pod to spot and gives its place back, and with shared
reservations the Lease drops it; `placement webhook run --deadline` and the fault-injection
delay."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from controllers.addons.webhook import (
    DEFAULT_DEADLINE,
    MUTATE_PATH,
    AnswerDelay,
    SpotWebhook,
)
from controllers.addons.webhook_certs import ReloadingContext, mint, write_bundle
from controllers.addons.webhook_server import WebhookServer
from controllers.addons.webhook_state import LeaseReservations
from controllers.cli import webhook as cli_webhook
from controllers.cli.main import build_parser
from placement.spot.ledger import Ledger
from placement.spot.mutation import DESIRED_CAPACITY, Workload, WorkloadRef
from tests.controllers.addons.test_webhook import (
    M,
    StaticWorkloads,
    client_context,
    patched,
    pod_doc,
    review,
)
from tests.controllers.embedded.hub import eventually, hub

KEY = "Deployment/default/web"
REF = WorkloadRef("Deployment", "default", "web")


def capacity(doc: dict[str, Any], answer: dict[str, Any]) -> str:
    label: str = patched(doc, answer["response"])["metadata"]["labels"][DESIRED_CAPACITY]
    return label


def released(webhook: SpotWebhook, reason: str) -> float:
    value = webhook.metrics.registry.get_sample_value(
        "spot_webhook_reservations_released_total", {"reason": reason}
    )
    return value or 0.0


@pytest.mark.asyncio
async def test_a_caller_that_hung_up_gets_no_answer_and_its_place_is_given_back() -> None:
    webhook = SpotWebhook(StaticWorkloads(), Ledger())
    for i in range(M):
        answer = await webhook.answer(review(f"gone{i}", pod_doc()), connected=lambda: False)
        assert answer is None
    assert webhook.ledger.count(KEY, time.time()) == 0
    assert released(webhook, "gone") == M
    docs = [pod_doc() for _ in range(M + 2)]
    labels = [capacity(d, await webhook.review(review(f"u{i}", d))) for i, d in enumerate(docs)]
    assert labels == ["on-demand"] * M + ["spot"] * 2


@pytest.mark.asyncio
async def test_an_answer_ready_after_the_deadline_is_spot_and_gives_its_place_back() -> None:
    delay = AnswerDelay(0.3, first=1)
    webhook = SpotWebhook(StaticWorkloads(), Ledger(), deadline=0.1, delay=delay)
    late = pod_doc()
    answer = await webhook.review(review("late", late))
    assert capacity(late, answer) == "spot"
    assert "deadline of 0.1s" in answer["response"]["warnings"][0]
    assert released(webhook, "late") == 1
    docs = [pod_doc() for _ in range(M)]
    labels = [capacity(d, await webhook.review(review(f"u{i}", d))) for i, d in enumerate(docs)]
    assert labels == ["on-demand"] * M  # the late one took no place


class SlowLease(LeaseReservations):
    """The shared reservations behind an API server slower than the webhook's deadline."""

    slow = True

    async def write(
        self, workload: Workload, shared: Mapping[str, float], version: str | None
    ) -> bool:
        if self.slow:
            await asyncio.sleep(0.4)
        return await super().write(workload, shared, version)


@pytest.mark.asyncio
async def test_a_shared_count_not_settled_by_the_deadline_sends_the_pod_to_spot() -> None:
    async with hub() as (_server, gw):
        lease = SlowLease(gw, "r0")
        webhook = SpotWebhook(StaticWorkloads(), Ledger(), shared=lease, deadline=0.1)
        doc = pod_doc()
        answer = await webhook.review(review("slow", doc))
        assert capacity(doc, answer) == "spot"
        assert "not settled within the webhook's deadline" in answer["response"]["warnings"][0]
        assert released(webhook, "late") == 1
        # The settlement finishing in the background wrote the token; the next write drops it.
        lease.slow = False

        async def lease_empty() -> bool:
            return lease.writes == 2 and not (await lease.read(REF))[0]

        await eventually_async(lease_empty)
        docs = [pod_doc() for _ in range(M)]
        labels = [capacity(d, await webhook.review(review(f"u{i}", d))) for i, d in enumerate(docs)]
        assert labels == ["on-demand"] * M


async def eventually_async(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


@pytest.mark.asyncio
async def test_over_https_a_client_timeout_cancels_the_answer_and_frees_the_place_at_once(
    tmp_path: Path,
) -> None:
    bundle = mint(["localhost", "127.0.0.1"])
    paths = write_bundle(bundle, tmp_path)
    webhook = SpotWebhook(StaticWorkloads(), Ledger(), delay=AnswerDelay(5.0, first=1))
    server = WebhookServer(
        webhook, ReloadingContext(paths["cert"], paths["key"]), address="127.0.0.1:0"
    )
    address = await server.start()
    url = f"https://127.0.0.1:{address.rpartition(':')[2]}{MUTATE_PATH}"
    try:
        async with aiohttp.ClientSession() as session:
            started = time.monotonic()
            with pytest.raises(TimeoutError):
                async with session.post(
                    url,
                    json=review("u0", pod_doc()),
                    ssl=client_context(bundle.ca),
                    timeout=aiohttp.ClientTimeout(total=0.5),
                ):
                    pass
            await eventually(lambda: released(webhook, "gone") == 1)
            assert time.monotonic() - started < 3.0  # not when the 5 s answer was ready
            assert webhook.ledger.count(KEY, time.time()) == 0
    finally:
        await server.stop()


def test_deadline_option_defaults_below_kubes_timeouts_and_is_bounded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser()
    base = ["webhook", "run", "--tls-cert-file", "c", "--tls-key-file", "k"]
    args = parser.parse_args(base)
    assert args.deadline == DEFAULT_DEADLINE == cli_webhook.DEFAULT_DEADLINE < 5
    assert args.fault_delay == 0.0 and args.fault_delay_first == 0
    assert parser.parse_args([*base, "--deadline", "0.5"]).deadline == 0.5
    for bad in ("0", "31", "soon"):
        with pytest.raises(SystemExit):
            parser.parse_args([*base, "--deadline", bad])
        assert "--deadline" in capsys.readouterr().err


@pytest.mark.asyncio
async def test_a_place_one_replica_gives_back_is_seen_by_the_other_after_its_refresh() -> None:
    async with hub() as (_server, gw):
        a = SpotWebhook(
            StaticWorkloads(),
            Ledger(),
            shared=LeaseReservations(gw, "a"),
            delay=AnswerDelay(0.3),
        )
        b = SpotWebhook(StaticWorkloads(), Ledger(refresh=0.2), shared=LeaseReservations(gw, "b"))

        async def b_meanwhile() -> str:
            await asyncio.sleep(0.15)  # A's M places are in the Lease, its answers held
            doc = pod_doc()
            return capacity(doc, await b.review(review("b0", doc)))

        answers = await asyncio.gather(
            *(a.answer(review(f"a{i}", pod_doc())) for i in range(M - 1)),
            a.answer(review("gone", pod_doc()), connected=lambda: False),  # timed out
            b_meanwhile(),
        )
        assert answers[M - 1] is None and answers[M] == "spot"
        lease = b.shared
        assert lease is not None

        async def dropped() -> bool:
            return len((await lease.read(REF))[0]) == M - 1

        await eventually_async(dropped)
        await asyncio.sleep(0.2)  # B's cached copy of the Lease is now older than its refresh
        doc = pod_doc()
        assert capacity(doc, await b.review(review("b1", doc))) == "on-demand"
        doc = pod_doc()
        assert capacity(doc, await b.review(review("b2", doc))) == "spot"


@pytest.mark.asyncio
async def test_over_https_a_hang_up_during_a_slow_settlement_frees_the_place_in_the_lease(
    tmp_path: Path,
) -> None:
    bundle = mint(["127.0.0.1"])
    paths = write_bundle(bundle, tmp_path)
    async with hub() as (_server, gw):
        lease = SlowLease(gw, "r0")
        webhook = SpotWebhook(StaticWorkloads(), Ledger(), shared=lease)
        server = WebhookServer(
            webhook, ReloadingContext(paths["cert"], paths["key"]), address="127.0.0.1:0"
        )
        address = await server.start()
        url = f"https://127.0.0.1:{address.rpartition(':')[2]}{MUTATE_PATH}"
        try:
            async with aiohttp.ClientSession() as session:
                with pytest.raises(TimeoutError):
                    async with session.post(
                        url,
                        json=review("u0", pod_doc()),
                        ssl=client_context(bundle.ca),
                        timeout=aiohttp.ClientTimeout(total=0.2),
                    ):
                        pass
            await eventually(lambda: released(webhook, "gone") == 1)
            abandoned = webhook.metrics.registry.get_sample_value(
                "spot_webhook_admissions_total", {"decision": "abandoned"}
            )
            assert abandoned == 1
            lease.slow = False

            async def lease_empty() -> bool:
                return lease.writes == 2 and not (await lease.read(REF))[0]

            await eventually_async(lease_empty)  # written by the settlement, then dropped
        finally:
            await server.stop()
