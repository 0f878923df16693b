"""The series every controller registry carries: the process collectors, client-go's workqueue
metrics (names, labels, buckets, what each one measures) and the REST client's request counts
through a real gateway."""

from __future__ import annotations

import socket

import pytest
from prometheus_client.parser import text_string_to_metric_families

from apis.cluster import ManagedCluster
from controllers.kube.config import ClusterAccess
from controllers.kube.errors import NotFoundError, TransportError
from controllers.kube.gateway import Gateway
from controllers.runtime.metrics import QUEUE_BUCKETS, MetricsRegistry
from controllers.runtime.queue import WorkQueue
from tests.controllers.embedded.hub import cluster, hub

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(metrics: MetricsRegistry) -> Samples:
    """Every sample of the registry's exposition by (name, labels)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for sample in family.samples
    }


def at(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


class Now:
    """A settable clock for the metrics."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_every_registry_carries_the_process_and_python_series() -> None:
    samples = scrape(MetricsRegistry())
    names = {name for name, _ in samples}
    for name in (
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_start_time_seconds",
        "process_open_fds",
        "process_max_fds",
        "python_info",
        "python_gc_collections_total",
    ):
        assert name in names, name
    assert samples[("process_resident_memory_bytes", at())] > 1024 * 1024
    assert samples[("process_open_fds", at())] >= 3


def test_workqueue_series_carry_client_go_names_labels_and_buckets() -> None:
    metrics = MetricsRegistry()
    metrics.workqueue("placement")
    samples = scrape(metrics)
    queue = at(name="placement")
    for name in (
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
    ):
        assert samples[(name, queue)] == 0, name  # present, at zero, before the first add
    les = sorted(
        float(dict(labels)["le"])
        for name, labels in samples
        if name == "workqueue_queue_duration_seconds_bucket"
    )
    assert les == [*QUEUE_BUCKETS, float("inf")]
    assert QUEUE_BUCKETS[0] == 1e-8 and QUEUE_BUCKETS[-1] == 10  # 10 ns .. 10 s, as client-go


def test_workqueue_metrics_measure_waiting_working_and_work_in_progress() -> None:
    metrics, now = MetricsRegistry(), Now()
    hook = metrics.workqueue("q", now=now)
    q = at(name="q")
    hook.added("a")
    hook.added("b")
    now.t += 0.002
    hook.started("a")  # waited 2 ms
    now.t += 0.498
    hook.started("b")  # waited 500 ms
    now.t += 0.5
    samples = scrape(metrics)
    assert samples[("workqueue_depth", q)] == 0
    assert samples[("workqueue_adds_total", q)] == 2
    # a has run 0.998 s, b 0.5 s: client-go sums them, and reports the oldest.
    assert samples[("workqueue_unfinished_work_seconds", q)] == pytest.approx(1.498)
    assert samples[("workqueue_longest_running_processor_seconds", q)] == pytest.approx(0.998)
    latency = "workqueue_queue_duration_seconds_bucket"
    assert samples[(latency, at(name="q", le="0.01"))] == 1
    assert samples[(latency, at(name="q", le="1.0"))] == 2
    hook.finished("a")
    hook.retried("a")
    hook.added("a")
    samples = scrape(metrics)
    work = "workqueue_work_duration_seconds_bucket"
    assert samples[(work, at(name="q", le="0.1"))] == 0
    assert samples[(work, at(name="q", le="1.0"))] == 1
    assert samples[("workqueue_work_duration_seconds_sum", q)] == pytest.approx(0.998)
    assert samples[("workqueue_longest_running_processor_seconds", q)] == pytest.approx(0.5)
    assert samples[("workqueue_retries_total", q)] == 1
    assert samples[("workqueue_depth", q)] == 1
    hook.finished("b")
    assert scrape(metrics)[("workqueue_unfinished_work_seconds", q)] == 0


@pytest.mark.asyncio
async def test_a_work_queue_wired_to_the_registry_counts_its_keys() -> None:
    metrics = MetricsRegistry()
    queue = WorkQueue(metrics=metrics.workqueue("q"))
    seen: list[str] = []

    async def handle(key: str) -> None:
        seen.append(key)

    for key in ("a", "b", "a", "c"):
        queue.add(key)
    queue.start(handle, workers=2)
    await queue.shutdown()
    samples = scrape(metrics)
    q = at(name="q")
    assert sorted(seen) == ["a", "b", "c"]
    assert samples[("workqueue_adds_total", q)] == 3
    assert samples[("workqueue_depth", q)] == 0
    assert samples[("workqueue_queue_duration_seconds_count", q)] == 3
    assert samples[("workqueue_work_duration_seconds_count", q)] == 3


def test_two_registries_keep_their_own_queue_and_request_series() -> None:
    first, second = MetricsRegistry(), MetricsRegistry()
    first.workqueue("q").added("a")
    first.request_observer("h:1")("GET", "200")
    second.workqueue("q")
    assert scrape(first)[("workqueue_adds_total", at(name="q"))] == 1
    assert scrape(second)[("workqueue_adds_total", at(name="q"))] == 0
    assert ("rest_client_requests_total", at(code="200", method="GET", host="h:1")) in scrape(first)
    assert not [name for name, _ in scrape(second) if name == "rest_client_requests_total"]


@pytest.mark.asyncio
async def test_rest_client_requests_are_counted_by_method_and_status_code() -> None:
    metrics = MetricsRegistry()
    async with hub() as (server, gateway):
        host = gateway.host
        gateway.observe_requests = metrics.request_observer(host)
        await gateway.create(cluster("c1"))
        await gateway.list(ManagedCluster)
        await gateway.get(ManagedCluster, "c1")
        with pytest.raises(NotFoundError):
            await gateway.get(ManagedCluster, "nope")
        server.faults.fail_next("get", 503)  # a read: retried, and both attempts are counted
        await gateway.get(ManagedCluster, "c1")
    samples = scrape(metrics)
    assert host == server.url.split("//", 1)[1].rstrip("/")
    requests = {
        (labels["method"], labels["code"]): value
        for (name, frozen), value in samples.items()
        if name == "rest_client_requests_total"
        for labels in [dict(frozen)]
        if labels["host"] == host
    }
    assert requests == {("POST", "201"): 1, ("GET", "200"): 3, ("GET", "404"): 1, ("GET", "503"): 1}


@pytest.mark.asyncio
async def test_a_request_that_gets_no_answer_is_counted_as_an_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    metrics = MetricsRegistry()
    gateway = await Gateway.connect(ClusterAccess(url=f"http://127.0.0.1:{port}"))
    async with gateway:
        gateway.observe_requests = metrics.request_observer(gateway.host)
        with pytest.raises(TransportError):
            await gateway.create(cluster("c1"))  # a write: not retried
    key = (
        "rest_client_requests_total",
        at(code="<error>", method="POST", host=f"127.0.0.1:{port}"),
    )
    assert scrape(metrics)[key] == 1
