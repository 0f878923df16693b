"""The binding cycle: Reserve, Permit (and its waits), Bind, PostBind; Unreserve on failure.

Once the scheduling cycle has chosen a node, `BindingCycle.place` assumes the pod there (the pod
cache counts it at once), runs Reserve, then Permit. A Permit that says WAIT holds the pod in
memory on its node until every waiting plugin allows it (`allow`, a gang reaching quorum), one
rejects it (`reject`), or the shortest timeout passes (`expire`); kube-scheduler's message for
the timeout is kept word for word. Then Bind: a Bind plugin may take the pod, else a `BindPod`
action goes out, after the writes PreBind asked for (volume bindings). The binding is confirmed
by a successful `BindResult` or by the pod event showing it bound (`confirm`: PostBind, the
`Scheduled` event, once). Any failure after Reserve runs Unreserve in reverse order and forgets
the assumption, and the room it held is offered to the pods waiting for room (`retry_all`).

The failures are told as kube-scheduler v1.36 tells them (docs/pod-scheduler.md): a rejection
at Reserve, at Permit or while waiting at Permit is `0/1 nodes are available: 1 <reason>.`
(Unschedulable); a rejection at PreBind or Bind is the plugin's message (Unschedulable, then
backoff); a plugin error is `running <Point> plugin "<name>": <error>` (SchedulerError); a pod
held at Permit and preempted is `waiting on permit for pod: preempted` (SchedulerError, backoff).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from placement.pods.backend.cache import Assumed, PodCache
from placement.pods.backend.nominator import Nominator
from placement.pods.framework.calls import PluginError, at_point, call
from placement.pods.framework.events import BindPod, EmitEvent
from placement.pods.framework.interface import (
    PodCode,
    PodCycle,
    PodInfo,
    PodStatus,
    PreBindResult,
    Profile,
)
from placement.pods.framework.pod_reports import go_duration
from placement.pods.framework.results import one_node_message
from placement.pods.scheduler.reporting import Reporter

__all__ = ["PREEMPTED_WHILE_WAITING", "BindingCycle", "Waiting"]

PREEMPTED_WHILE_WAITING = "waiting on permit for pod: preempted"
"""kube-scheduler v1.36's message for a pod held at Permit that a preemptor took (1.36: an
error, so the pod backs off, where it was parked as Unschedulable before)."""


@dataclass
class Waiting:
    """A pod held at Permit."""

    info: PodInfo
    node: str
    pending: dict[str, timedelta]  # plugin -> its timeout
    started: datetime
    deadline: datetime


class BindingCycle:
    """Everything from Reserve to PostBind; see the module docstring."""

    def __init__(
        self,
        profile: Profile,
        cache: PodCache,
        nominator: Nominator,
        reporter: Reporter,
        *,
        now: Callable[[], datetime],
        retry_all: Callable[[datetime], None],
    ) -> None:
        self.profile = profile
        self.cache = cache
        self.nominator = nominator
        self.reporter = reporter
        self.waiting: dict[str, Waiting] = {}
        self._now = now
        self._retry_all = retry_all

    def place(self, cycle: PodCycle, info: PodInfo, node: str, attempts: int) -> None:
        """Assume the pod on the node, then Reserve, Permit and bind (or wait)."""
        reporter = self.reporter
        reporter.queue.remove(info.key)
        self.nominator.drop(info.key)
        self.cache.assume(info, node, cycle, attempts)
        for plugin in self.profile.reserves:
            cause: BaseException | None = None
            try:
                status = call(plugin.name, plugin.reserve, cycle, info, node)
            except PluginError as failure:
                status, cause = failure.status, failure.__cause__
            if not status.ok:
                self.forget(cycle, info, node)
                if status.code >= PodCode.ERROR:
                    failed = at_point("Reserve", plugin.name, status, cause)
                    reporter.error(cycle, info, failed, attempts)
                else:
                    message = one_node_message(status.reasons)
                    reporter.unschedulable(cycle, info, message, (plugin.name,), attempts)
                return
        pending: dict[str, timedelta] = {}
        for permit in self.profile.permits:
            try:
                result = call(permit.name, permit.permit, cycle, info, node)
            except PluginError as failure:
                failed = at_point("Permit", permit.name, failure.status, failure.__cause__)
                self.fail(cycle, info, node, failed, attempts)
                return
            code = result.status.code
            if code == PodCode.WAIT:
                pending[permit.name] = result.timeout
            elif code >= PodCode.ERROR:
                failed = at_point("Permit", permit.name, result.status, None)
                self.fail(cycle, info, node, failed, attempts)
                return
            elif not result.status.ok:
                self.forget(cycle, info, node)
                message = one_node_message(result.status.reasons)
                reporter.unschedulable(cycle, info, message, (permit.name,), attempts)
                return
        if pending:
            timeout = min(pending.values())
            self.waiting[info.key] = Waiting(
                info, node, pending, started=cycle.now, deadline=cycle.now + timeout
            )
            return
        self.bind(cycle, info, node)

    def fail(
        self, cycle: PodCycle, info: PodInfo, node: str, status: PodStatus, attempts: int
    ) -> None:
        """A plugin failed after the pod was assumed: undo, report, back off."""
        self.forget(cycle, info, node)
        self.reporter.error(cycle, info, status, attempts)

    def forget(self, cycle: PodCycle, info: PodInfo, node: str) -> None:
        """Undo a placement: Unreserve in reverse order, stop counting the pod."""
        self.cache.forget(info.key, node)
        self.waiting.pop(info.key, None)
        self.unreserve(cycle, info, node)

    def unreserve(self, cycle: PodCycle, info: PodInfo, node: str) -> None:
        for plugin in reversed(self.profile.reserves):
            try:
                plugin.unreserve(cycle, info, node)
            except Exception:  # a plugin bug must not stop the others' cleanup
                self.reporter.stats.handler_errors += 1

    def bind(self, cycle: PodCycle, info: PodInfo, node: str) -> None:
        assumed = self.cache.assumed(info.key)
        if assumed is None:
            return
        assumed.binding = True
        for pre in self.profile.pre_binds:
            cause: BaseException | None = None
            try:
                prepared: PreBindResult = call(pre.name, pre.pre_bind, cycle, info, node)
            except PluginError as failure:
                prepared, cause = PreBindResult(failure.status), failure.__cause__
            if not prepared.status.ok:
                self._failed_late(cycle, info, node, "PreBind", pre.name, prepared.status, cause)
                return
            if prepared.actions:
                assumed.writes_by = pre.name
            self.reporter.out.extend(prepared.actions)  # sent before the pod's binding
        for plugin in self.profile.binds:
            cause = None
            try:
                status = call(plugin.name, plugin.bind, cycle, info, node)
            except PluginError as failure:
                status, cause = failure.status, failure.__cause__
            if status.code == PodCode.SKIP:
                continue
            if status.ok:
                return  # the plugin binds it; its pod event confirms
            self._failed_late(cycle, info, node, "Bind", plugin.name, status, cause)
            return
        self.reporter.out.append(BindPod(info.key, info.uid, node))

    def _failed_late(
        self,
        cycle: PodCycle,
        info: PodInfo,
        node: str,
        point: str,
        plugin: str,
        status: PodStatus,
        cause: BaseException | None,
    ) -> None:
        """PreBind or Bind said no: undo; a rejection keeps the plugin's own message
        (Unschedulable, backoff), an error is wrapped as kube-scheduler wraps it."""
        assumed = self.cache.assumed(info.key)
        attempts = assumed.attempts if assumed is not None else 0
        if status.code >= PodCode.ERROR:
            self.fail(cycle, info, node, at_point(point, plugin, status, cause), attempts)
            return
        self.forget(cycle, info, node)
        self.reporter.rejected_after_permit(cycle, info, status.message, attempts)

    def confirm(self, assumed: Assumed) -> None:
        """The binding is done (BindResult ok, or the pod seen bound): PostBind, Scheduled."""
        if not assumed.binding or assumed.confirmed:
            return
        assumed.confirmed = True  # once
        info, node = assumed.info, assumed.node
        stats = self.reporter.stats
        stats.attempts["scheduled"] += 1
        for plugin in self.profile.post_binds:
            try:
                plugin.post_bind(assumed.cycle, info, node)
            except Exception:
                stats.handler_errors += 1
        self.reporter.out.append(
            EmitEvent(
                regarding=("Pod", info.key, info.uid),
                type="Normal",
                reason="Scheduled",
                message=f"Successfully assigned {info.key} to {node}",
                action="Binding",
            )
        )

    # --- Permit waits ------------------------------------------------------------------------

    def waiting_pods(self) -> Iterable[PodInfo]:
        return tuple(w.info for w in self.waiting.values())

    def allow(self, key: str, plugin: str) -> None:
        waiting = self.waiting.get(key)
        if waiting is None:
            return
        waiting.pending.pop(plugin, None)
        if waiting.pending:
            return
        del self.waiting[key]
        assumed = self.cache.assumed(key)
        if assumed is not None:
            self.bind(assumed.cycle, assumed.info, assumed.node)

    def reject(self, key: str, plugin: str, message: str) -> None:
        """A plugin rejects a pod held at Permit (or its wait timed out)."""
        self._release(key, plugin, message)

    def preempt(self, key: str, plugin: str) -> None:
        """A preemptor takes the room of a pod held at Permit: it is not deleted, it backs off
        with kube-scheduler v1.36's error."""
        self._release(key, plugin, None)

    def _release(self, key: str, plugin: str, message: str | None) -> None:
        waiting = self.waiting.pop(key, None)
        assumed = self.cache.assumed(key)
        if waiting is None or assumed is None:
            return
        cycle = assumed.cycle
        now = self._now()
        if now > cycle.now:
            cycle.now = now  # rejected later than its cycle ran (a gang's sibling)
        self.forget(cycle, waiting.info, waiting.node)
        self._retry_all(cycle.now)  # the room it held is free again (for the others)
        reporter = self.reporter
        if message is None:
            failed = PodStatus.error(plugin, PREEMPTED_WHILE_WAITING)
            reporter.error(cycle, waiting.info, failed, assumed.attempts)
            return
        text = one_node_message((message,))
        reporter.unschedulable(cycle, waiting.info, text, (plugin,), assumed.attempts)

    def expire(self, now: datetime) -> None:
        """Reject the waits whose deadline passed, naming the plugin with the shortest
        timeout as kube-scheduler does."""
        due = sorted((w.deadline, key) for key, w in self.waiting.items() if w.deadline <= now)
        for _, key in due:
            waiting = self.waiting.get(key)
            assumed = self.cache.assumed(key)
            if waiting is None or assumed is None:
                continue
            plugin, timeout = min(waiting.pending.items(), key=lambda item: (item[1], item[0]))
            assumed.cycle.now = now
            self.reject(
                key,
                plugin,
                f"rejected due to timeout after waiting {go_duration(timeout)} at plugin {plugin}",
            )

    def next_deadline(self) -> datetime | None:
        return min((w.deadline for w in self.waiting.values()), default=None)
