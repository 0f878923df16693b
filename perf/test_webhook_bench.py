"""The spot webhook under 500 concurrent creates of one Deployment (DESIGN §9: exact on-demand
count; p99 <= 5 ms per admission).

Two figures: the admission itself (`SpotWebhook.review`: rules, ledger, patch; no I/O), and the
whole HTTPS round trip to one `WebhookServer` on loopback, 500 requests in flight at once, each
timed by the client (p50, p99, throughput). The exact count is checked in both; the times are
recorded in `extra_info`, never asserted. Run: `pytest perf/test_webhook_bench.py
--benchmark-enable`.
"""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path
from typing import Any

import aiohttp
from pytest_benchmark.fixture import BenchmarkFixture

from controllers.addons.webhook import MUTATE_PATH, SpotWebhook, WebhookServer
from controllers.addons.webhook_certs import ReloadingContext, mint, write_bundle
from placement.pods.ledger import Ledger
from tests.controllers.addons.test_webhook import (
    M,
    StaticWorkloads,
    client_context,
    pod_doc,
    review,
)

CONCURRENT = 500


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _decoded_on_demand(answer: dict[str, Any]) -> bool:
    patch = answer["response"].get("patch")
    return bool(patch) and b'"on-demand"' in base64.b64decode(patch)


def test_review_latency_at_500_concurrent(benchmark: BenchmarkFixture) -> None:
    figures: dict[str, float] = {}

    def run() -> None:
        webhook = SpotWebhook(StaticWorkloads(), Ledger())
        docs = [review(f"u{i}", pod_doc()) for i in range(CONCURRENT)]
        times: list[float] = []

        async def one(doc: Any) -> dict[str, Any]:
            start = time.perf_counter()
            answer = await webhook.review(doc)
            times.append(time.perf_counter() - start)
            return answer

        async def main() -> list[dict[str, Any]]:
            return await asyncio.gather(*(one(d) for d in docs))

        answers = asyncio.run(main())
        assert sum(_decoded_on_demand(a) for a in answers) == M
        figures["review_p50_us"] = _quantile(times, 0.5) * 1e6
        figures["review_p99_us"] = _quantile(times, 0.99) * 1e6

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)


def test_https_round_trip_at_500_concurrent(benchmark: BenchmarkFixture, tmp_path: Path) -> None:
    figures: dict[str, float] = {}
    bundle = mint(["localhost", "127.0.0.1"])
    paths = write_bundle(bundle, tmp_path)

    async def main() -> None:
        tls = ReloadingContext(paths["cert"], paths["key"])
        webhook = SpotWebhook(StaticWorkloads(), Ledger())
        server = WebhookServer(webhook, tls, address="127.0.0.1:0", reload_interval=3600)
        address = await server.start()
        url = f"https://localhost:{address.rpartition(':')[2]}{MUTATE_PATH}"
        ctx = client_context(bundle.ca)
        times: list[float] = []
        try:
            connector = aiohttp.TCPConnector(limit=CONCURRENT, ssl=ctx)
            async with aiohttp.ClientSession(connector=connector) as session:
                # open every connection first, as an API server keeps them alive: the
                # TLS handshakes are not admissions
                async def warm() -> None:
                    async with session.get(url.replace(MUTATE_PATH, "/healthz")) as response:
                        await response.read()

                await asyncio.gather(*(warm() for _ in range(CONCURRENT)))

                async def one(i: int) -> dict[str, Any]:
                    start = time.perf_counter()
                    async with session.post(url, json=review(f"u{i}", pod_doc())) as response:
                        answer: dict[str, Any] = await response.json()
                    times.append(time.perf_counter() - start)
                    return answer

                began = time.perf_counter()
                answers = await asyncio.gather(*(one(i) for i in range(CONCURRENT)))
                wall = time.perf_counter() - began
        finally:
            await server.stop()
        assert sum(_decoded_on_demand(a) for a in answers) == M
        figures["https_p50_ms"] = _quantile(times, 0.5) * 1e3
        figures["https_p99_ms"] = _quantile(times, 0.99) * 1e3
        figures["admissions_per_s"] = CONCURRENT / wall

    def run() -> None:
        asyncio.run(main())

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
