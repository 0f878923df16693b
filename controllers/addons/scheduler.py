"""`placement scheduler run`: the pod scheduler as a real secondary Kubernetes scheduler, the I/O
shell around the sans-I/O `Engine` (one engine, two shells: docs/architecture.md).

Informers (`controllers.addons.informers`) feed the engine every change: pending pods naming one of
its profiles (one engine per profile behind `placement.pods.scheduler.engines.EngineSet`), assigned
pods, Nodes, Namespaces, PriorityClasses, and `OPTIONAL_KINDS` when served. One worker runs
scheduling passes: one cycle per ready pod, the actions decided handed at once to the executor
(`controllers.addons.executor`), whose binding cycles run concurrently with the next pods'
scheduling; a bind's outcome comes back to the engine as a `BindResult`. A pass yields to the event
loop every `batch_seconds` so watch events and bind results are not held up by a long queue, and
waits when `8 x bind_concurrency` writes are queued. When the engine has nothing ready, the next
pass is at its `next_wake` (a backoff expiry, a Permit timeout) or at the next event. The runtime's
`Controller` gives the rest: the HTTP endpoint (`/healthz`, `/readyz`, `/metrics`), leader election
over a Lease (a standby's engine follows the cluster, only the leader schedules and writes), the
ordered stop; the events are the `EventEmitter`'s (executor). A restart loses nothing: the first
lists count every bound pod on its node, and a pod assumed before a crash but never bound is still
pending, so it is scheduled again. A pod is never bound twice: the API server refuses a second
binding (409), and the engine then forgets the pod.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from apis.core import Namespace, Node, Pod
from apis.meta import KubeObject
from apis.scheduling import PriorityClass
from controllers.addons.emitter import EventEmitter
from controllers.addons.executor import ActionExecutor
from controllers.addons.gateway import PodGateway
from controllers.addons.informers import (
    ASSIGNED_SELECTOR,
    OPTIONAL_KINDS,
    PodFeed,
    node_events,
    object_events,
    pending_selector,
)
from controllers.addons.metrics import EngineCounters, SchedulerMetrics
from controllers.addons.scheduler_options import (
    DEFAULT_HTTP_ADDR,
    SchedulerOptions,
    cluster_access,
    configured,
    effective_config,
    leader_config,
    load_scheduler_config,
    scheduler_options,
    scheduler_profiles,
)
from controllers.addons.status import StatusController
from controllers.kube.config import new_api_client
from controllers.kube.errors import ApiError
from controllers.runtime.cache import Informer
from controllers.runtime.controller import Controller, ControllerOptions, StartError
from controllers.runtime.discovery import served_kinds
from controllers.runtime.leader import LeaderConfig
from controllers.runtime.process import run_until_signal, tune_gc
from controllers.runtime.queue import Clock, Handler
from placement.pods.config.scheduler_config import (
    DEFAULT_SCHEDULER_NAME,
    ConfigError,
    RunOptions,
    SchedulerConfig,
)
from placement.pods.framework.events import Action, BindPod, ClusterEvent, DeletePod
from placement.pods.framework.interface import Profile
from placement.pods.scheduler.engines import EngineSet, engine_for

__all__ = [
    "DEFAULT_HTTP_ADDR",
    "PodScheduler",
    "SchedulerOptions",
    "load_scheduler_config",
    "main",
    "run_scheduler",
]

log = logging.getLogger(__name__)

BATCH = 16
"""Scheduling cycles per call of the engine."""

PASS = "schedule"
"""The work queue's only key: a scheduling pass is due."""

STATUS_LEASE_SUFFIX = "-status"
"""The status controller's Lease is the scheduler's name with this suffix."""


class PodScheduler(Controller):
    """One scheduler instance against `gateway` (module docstring)."""

    def __init__(
        self,
        gateway: PodGateway,
        config: SchedulerConfig,
        *,
        http_addr: str | None = DEFAULT_HTTP_ADDR,
        leader: LeaderConfig | None = None,
        bind_concurrency: int = 32,
        batch_seconds: float = 0.05,
        stop_timeout: float = 0.5,
        optional_kinds: Sequence[type[KubeObject]] = OPTIONAL_KINDS,
        profile: Profile | None = None,
        clock: Clock | None = None,
        profiles: Sequence[Profile] | None = None,
    ) -> None:
        self.config = config
        self.name = config.scheduler_name
        self.profiles = tuple(profiles or ((profile,) if profile else scheduler_profiles(config)))
        self.profile = self.profiles[0]
        self.scheduler_names = tuple(p.scheduler_name for p in self.profiles)
        """Every profile's name: the pods of any are scheduled (each by its own profile)."""
        self.engine = engine_for(self.profiles, **config.engine_options())
        self.metrics = SchedulerMetrics(self.name)
        self.metrics.read_engine(self._counters, self.engine.queue_sizes)
        super().__init__(
            gateway,
            ControllerOptions(workers=1, resync=3600.0, http_addr=http_addr, leader=leader),
            name=self.name,
            metrics=self.metrics,
            clock=clock,
        )
        self.batch_seconds = batch_seconds
        self.stop_timeout = stop_timeout
        self.optional_kinds = tuple(optional_kinds)
        self.feed = PodFeed(self._handle)
        writer = PodGateway.fenced(gateway, self.fence)  # every write passes the Lease's fence
        self.events = EventEmitter(
            writer, controller=self.name, wall=self.wall, on_recorded=self.event_recorded
        )
        self.executor = ActionExecutor(
            writer,
            self.events,
            on_bind_result=self.feed.bind_finished,
            lookup=self._lookup,
            wall=self.wall,
            concurrency=bind_concurrency,
        )
        self.events.yield_to = self.executor.busy  # a burst's events trail its bindings
        self._attempted: dict[str, int] = {}  # the engine's attempt counts already reported
        self._objects: dict[str, Informer[Any, Any]] = {}
        self.informers = self._informers(())
        self.dropped_actions = 0  # decided while standby: only the leader writes

    def _counters(self) -> EngineCounters | Mapping[str, EngineCounters]:
        """The engine's counters; with several profiles, each profile's engine's by name."""
        engine = self.engine
        if isinstance(engine, EngineSet):
            return {n: e.stats for n, e in zip(self.scheduler_names, engine.engines, strict=True)}
        return engine.stats

    # --- informers ---------------------------------------------------------------------------

    def _informers(self, kinds: Iterable[type[KubeObject]]) -> list[Informer[Any, Any]]:
        (p_add, p_upd, p_del), (a_add, a_upd, a_del) = self.feed.callbacks()
        gw = self.gateway
        n_add, n_upd, n_del = node_events(self._handle)
        o_add, o_upd, o_del = object_events(self._handle)
        self._nodes = Informer(gw, Node, on_add=n_add, on_update=n_upd, on_delete=n_del)
        informers: list[Informer[Any, Any]] = [
            self._nodes,
            Informer(
                gw,
                Pod,
                field_selector=ASSIGNED_SELECTOR,
                on_add=a_add,
                on_update=a_upd,
                on_delete=a_del,
            ),
        ]
        informers.extend(  # field selectors cannot OR: one informer per profile's name
            Informer(
                gw,
                Pod,
                field_selector=pending_selector(name),
                on_add=p_add,
                on_update=p_upd,
                on_delete=p_del,
            )
            for name in self.scheduler_names
        )
        self._objects = {}
        watched: list[type[KubeObject]] = [Namespace, PriorityClass, *kinds]
        for cls in watched:
            informer: Informer[Any, Any] = Informer(
                gw, cls, on_add=o_add, on_update=o_upd, on_delete=o_del
            )
            self._objects[cls.KIND] = informer
            informers.insert(0, informer)  # before the pods: priorities known when they come
        return informers

    async def start(self, sync_timeout: float | None = 60.0) -> None:
        """Find out which optional kinds (PodGroup, ElasticQuota, PriorityClass) the server
        serves, then the runtime's start."""
        kinds: list[type[KubeObject]] = [*self.optional_kinds, PriorityClass]
        served, sync_timeout = await served_kinds(self.gateway, kinds, timeout=sync_timeout)
        present: list[type[KubeObject]] = []
        for cls in self.optional_kinds:
            if cls in served:
                present.append(cls)
            else:
                log.info("%s is not served (CRD not installed): not watched", cls.KIND)
        self.informers = self._informers(present)
        if PriorityClass not in served:
            self.informers.remove(self._objects.pop(PriorityClass.KIND))
            log.info("PriorityClass is not served: priorities come from spec.priority only")
        await super().start(sync_timeout)

    def _lookup(self, kind: str, key: str) -> KubeObject | None:
        if kind == Pod.KIND:
            return self.feed.lookup(key)
        if kind == Node.KIND:
            node: Node | None = self._nodes.get(key)
            return node
        informer = self._objects.get(kind)
        return informer.get(key) if informer is not None else None

    # --- events in, actions out ----------------------------------------------------------

    def _handle(self, event: ClusterEvent) -> None:
        actions = self.engine.handle(event, self.wall())
        if actions:
            self._perform(actions)
        if self.working:
            self.queue.add(PASS)

    def _perform(self, actions: list[Action]) -> None:
        if not self.working:
            self.dropped_actions += len(actions)
            return
        for action in actions:
            if isinstance(action, BindPod):
                self.feed.bind_started(action.key, action.uid)
        self.executor.submit(actions)

    # --- the runtime's hooks -------------------------------------------------------------------

    def keys(self) -> Iterable[str]:
        return (PASS,)

    @property
    def handler(self) -> Handler:
        return self._pass

    def synced_message(self) -> str:
        sizes = self.engine.queue_sizes()
        return (
            f"caches synced: {len(self._nodes.keys())} nodes, {len(self.feed.assigned)} "
            f"assigned pods, {sum(sizes.values())} pending pods of {self.name}"
        )

    async def _pass(self, _: str) -> float | None:
        """One scheduling pass (module docstring); returns when to look again. The engine is
        asked for `BATCH` cycles per call: each call also releases the pods whose backoff
        ended and computes the next wake-up, which costs more with more pods queued."""
        await asyncio.sleep(0)  # watch events and bind results first
        await self.executor.wait_room()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.batch_seconds
        stats = self.engine.stats
        while True:
            cycles = stats.cycles
            started = time.perf_counter()
            actions = self.engine.schedule(self.wall(), limit=BATCH)
            tried = stats.cycles - cycles
            self._observe(time.perf_counter() - started, tried, actions)
            self._perform(actions)
            if tried < BATCH:
                break
            if loop.time() >= deadline or self.executor.pending >= self.executor.max_pending:
                return 0.0
        wake = self.engine.next_wake()
        if wake is None:
            return None
        return max(0.001, (wake - self.wall()).total_seconds())

    def _observe(self, seconds: float, tried: int, actions: list[Action]) -> None:
        """Time the cycles that just ran under their results (each its share of the call):
        `scheduled` for each pod bound, then what the engine counted as `unschedulable` or
        `error`; a pod held at Permit is not counted yet. Victims per preemption too."""
        if not tried:
            return
        stats = self.engine.stats
        binds = [a for a in actions if isinstance(a, BindPod)]
        results = {"scheduled": len(binds)}
        for name in ("unschedulable", "error"):
            total = stats.attempts.get(name, 0)
            results[name] = total - self._attempted.get(name, 0)
            self._attempted[name] = total
        share = seconds / tried
        for result, count in results.items():
            histogram = self.metrics.attempt_duration.labels(profile=self.name, result=result)
            for _ in range(count):
                histogram.observe(share)
        victims = sum(1 for a in actions if isinstance(a, DeletePod))
        if victims:
            self.metrics.preemption_victims.observe(victims)
        for bind in binds:
            self.metrics.pod_attempts.observe(stats.pod_attempts.get(bind.key, 1))

    # --- life cycle --------------------------------------------------------------------------

    async def stop(self) -> None:
        """No new work at once: no new pass, the writes not yet sent are never sent (those pods
        stay pending for the next leader); the writes on the wire get `stop_timeout` seconds to
        be answered, then are cancelled (a binding lands whole or not at all); the events queued
        are written in what is left of it, the rest dropped; then the runtime's stop (Lease
        released, informers closed)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.stop_timeout
        self.executor.close()  # before the queue's shutdown: a pass waiting for room returns
        await self.queue.shutdown(drain=False)
        await self.executor.stop(self.stop_timeout)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, deadline - loop.time())):
                await self.events.flush()
        await self.events.cancel()
        await super().stop()


# --- `placement scheduler run` ---------------------------------------------------------------


async def _start(options: SchedulerOptions, opened: list[Any]) -> list[Controller]:
    """Start the scheduler and the status controller as `options.status_controller` says;
    returns the controllers started, the one serving HTTP first."""
    config = effective_config(options)
    profiles = scheduler_profiles(config)
    if options.embedded or not configured(options):
        # The addons room may not import the embedded server: whoever starts one (the command
        # line, the demo, the tests) passes its URL.
        raise StartError(
            "no cluster: pass --kubeconfig (or set $KUBECONFIG); an embedded API server is "
            "started by the command line, which then passes its URL"
        )

    def leader(suffix: str) -> LeaderConfig | None:
        return leader_config(config, options, suffix)

    started: list[Controller] = []
    if options.status_controller != "only":
        gateway = PodGateway(await new_api_client(cluster_access(options)))
        opened.append(gateway)
        scheduler = PodScheduler(
            gateway,
            config,
            http_addr=options.http_addr,
            leader=leader(""),
            bind_concurrency=options.bind_concurrency,
            batch_seconds=options.batch_seconds,
            stop_timeout=options.stop_timeout,
            profiles=profiles,
        )
        opened.append(scheduler)
        await scheduler.start(sync_timeout=options.sync_timeout)
        started.append(scheduler)
    if options.status_controller != "off":
        # Its own client: the scheduler's request metrics stay the scheduler's.
        status_gateway = PodGateway(await new_api_client(cluster_access(options)))
        opened.append(status_gateway)
        status = StatusController(
            status_gateway,
            http_addr=options.http_addr if not started else None,
            leader=leader(STATUS_LEASE_SUFFIX),
        )
        opened.append(status)
        await status.start(sync_timeout=options.sync_timeout)
        started.append(status)
    return started


async def run_scheduler(options: SchedulerOptions | RunOptions) -> int:
    """Run until SIGTERM or SIGINT (exit 0, also during start-up) or lost leadership (exit 1).
    A start-up failure (configuration, kubeconfig, endpoint, caches) prints one line on stderr
    and returns 1 (`controllers.runtime.process`)."""
    from controllers.kube.config import ClusterAccessError

    options = scheduler_options(options)
    tune_gc()  # thousands of long-lived models: as the hub's `run`
    opened: list[Any] = []

    def running(controllers: Sequence[Controller]) -> str:
        first = controllers[0]
        what = (
            f"scheduler {', '.join(first.scheduler_names)}"
            if isinstance(first, PodScheduler)
            else "status controller"
        )
        beside = " (with the status controller)" if len(controllers) > 1 else ""
        return f"{what} running{beside}; http on {first.http_address or 'off'}"

    async def close() -> None:  # the controllers at once (no binding waits), then the clients
        await asyncio.gather(*(c.stop() for c in opened if not isinstance(c, PodGateway)))
        await asyncio.gather(*(g.close() for g in opened if isinstance(g, PodGateway)))

    return await run_until_signal(
        _start(options, opened),
        running=running,
        close=close,
        start_errors=(StartError, ConfigError, ClusterAccessError, ApiError, OSError),
    )


def main(argv: list[str] | None = None) -> int:
    """`python -m controllers.addons.scheduler`: the same as `placement scheduler run`, plus
    `--url` for an API server without credentials (tests and benchmarks)."""
    from controllers.runtime.logs import setup_logging

    parser = argparse.ArgumentParser(prog="python -m controllers.addons.scheduler")
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument("--context")
    parser.add_argument("--url")
    parser.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER_NAME)
    parser.add_argument("--leader-elect", action="store_true")
    parser.add_argument("--lease-namespace")
    parser.add_argument("--http-addr", default=DEFAULT_HTTP_ADDR)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--bind-concurrency", type=int, default=32)
    parser.add_argument("--status-controller", choices=["on", "off", "only"], default="on")
    parser.add_argument("--log-format", choices=["text", "json"], default="text")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    setup_logging(args.log_format, args.log_level)
    options = SchedulerOptions(
        kubeconfig=args.kubeconfig,
        context=args.context,
        url=args.url,
        scheduler_name=args.scheduler_name,
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        http_addr=args.http_addr or None,
        config=args.config,
        bind_concurrency=args.bind_concurrency,
        status_controller=args.status_controller,
    )
    return asyncio.run(run_scheduler(options))


if __name__ == "__main__":
    sys.exit(main())
