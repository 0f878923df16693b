"""The scheduling cycle: PreFilter, Filter, Score (or PostFilter) for one pod.

kube-scheduler's `schedulingCycle`: PreFilter plugins check the pod alone and may narrow the
nodes; the Filter plugins run as masks over the snapshot's rows with the requests of the pods
nominated at the pod's priority or above added (`Nominator.with_nominated`), the pod's
nominated node tried first; when no node is left, the PostFilter plugins (preemption) may pick
a node and victims, which `preempt` turns into deletions and nominations; otherwise Score (the
weighted sum of each plugin's normalized vector; the highest total wins, ties to the first node
by name) and the binding cycle takes over (`BindingCycle.place`).

The reasons a node fails are gathered only when no node fits (or when asked): `Diagnosis`, with
kube-scheduler's message `0/5 nodes are available: ...`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from placement.arrays import BoolMask, RowIndex
from placement.pods.backend.cache import PodCache
from placement.pods.backend.nominator import Nominator
from placement.pods.backend.queue import QueuedPod
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.calls import PluginError, at_point, call, failed
from placement.pods.framework.events import (
    DISRUPTION_TARGET,
    PREEMPTION_BY_SCHEDULER,
    DeletePod,
    EmitEvent,
    PatchPodStatus,
    PodCondition,
)
from placement.pods.framework.interface import (
    Diagnosis,
    FilterResult,
    PodCode,
    PodCycle,
    PodInfo,
    PostFilterResult,
    Profile,
)
from placement.pods.framework.noscore import adds_nothing
from placement.pods.scheduler.binding import BindingCycle
from placement.pods.scheduler.reporting import Reporter

__all__ = ["NO_NODES", "SKIPPED", "SchedulingCycle", "disruption_target"]

NO_NODES = "no nodes available to schedule pods"
SKIPPED = "engine.skipped"  # cycle.scratch: ids of the plugins whose PreFilter said SKIP


def disruption_target(scheduler_name: str) -> PodCondition:
    """kube-scheduler's condition on a preemption victim, naming the preemptor's scheduler:
    the profile's name, since a profile schedules only the pods whose spec.schedulerName it is."""
    message = f"{scheduler_name}: preempting to accommodate a higher priority pod"
    return PodCondition(DISRUPTION_TARGET, "True", PREEMPTION_BY_SCHEDULER, message)


class SchedulingCycle:
    """One pod's scheduling cycle over the pod cache's snapshot; see the module docstring."""

    def __init__(
        self,
        profile: Profile,
        cache: PodCache,
        nominator: Nominator,
        reporter: Reporter,
        binding: BindingCycle,
    ) -> None:
        self.profile = profile
        self.cache = cache
        self.nominator = nominator
        self.reporter = reporter
        self.binding = binding
        self.preempting: dict[str, str] = {}  # victim key -> uid, deleted by a preemption
        self._all_rows: BoolMask = np.ones(0, dtype=bool)
        self._all_index: RowIndex = np.arange(0, dtype=np.intp)

    def run(self, cycle: PodCycle, queued: QueuedPod) -> None:
        """PreFilter, Filter, then Score and the binding cycle, or PostFilter."""
        info = queued.info
        nodes = self.cache.snapshot()
        if nodes.size == 0:
            self.reporter.unschedulable(cycle, info, NO_NODES, (), queued.attempts)
            return
        # PreFilter
        skipped: set[int] = set()
        cycle.scratch[SKIPPED] = skipped
        candidates = self._everywhere(nodes.size)
        restricting: list[str] = []
        for plugin in self.profile.pre_filters:
            try:
                result = plugin.pre_filter(cycle, info, nodes)
            except Exception as exc:
                raise failed(plugin.name, exc, "PreFilter") from exc
            status = result.status
            if status.code == PodCode.SKIP:
                skipped.add(id(plugin))
                continue
            if status.code >= PodCode.ERROR:
                raise PluginError(at_point("PreFilter", plugin.name, status))
            if not status.ok:
                message = status.message  # none: kube's bare `0/N nodes are available:`
                diagnosis = Diagnosis(
                    total_nodes=nodes.size,
                    counts={},
                    resolvable=np.full(nodes.size, status.code == PodCode.UNSCHEDULABLE),
                    pre_filter=message,
                    plugins=frozenset({plugin.name}),
                )
                self._failed(cycle, info, nodes, diagnosis, queued)
                if result.retry_at is not None:
                    self.reporter.queue.hold_until(info.key, result.retry_at, cycle.now)
                return
            if result.nodes is not None:
                restricting.append(plugin.name)
                candidates = candidates & result.nodes
                if not candidates.any():
                    names = restricting
                    message = (
                        f"node(s) didn't satisfy plugin {names[0]}"
                        if len(names) == 1
                        else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                    )
                    diagnosis = Diagnosis(
                        total_nodes=nodes.size,
                        counts={},
                        resolvable=np.zeros(nodes.size, dtype=bool),
                        pre_filter=message,
                        plugins=frozenset(names),
                    )
                    self._failed(cycle, info, nodes, diagnosis, queued)
                    return
        filtered = self.nominator.with_nominated(info, nodes)
        # The nominated node first: a preemptor lands where it made room.
        nominated = info.nominated_node or self.nominator.node_of(info.key)
        if nominated is not None:
            row = nodes.row_of(nominated)
            if row is not None and candidates[row]:
                only = np.zeros(nodes.size, dtype=bool)
                only[row] = True
                fits, _ = self.filter(cycle, info, filtered, only, explain=False)
                if fits[row]:
                    self.binding.place(cycle, info, nominated, queued.attempts)
                    return
        feasible, diagnosis = self.filter(cycle, info, filtered, candidates, explain=False)
        if restricting:
            outside = ~candidates
            if outside.any():
                message = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(restricting))}]"
                counts = dict(diagnosis.counts)
                counts[message] = counts.get(message, 0) + int(outside.sum())
                diagnosis = dataclasses.replace(
                    diagnosis,
                    counts=counts,
                    plugins=diagnosis.plugins | frozenset(restricting),
                )
        count = int(np.count_nonzero(feasible))
        if count == 0:
            self._failed(cycle, info, nodes, diagnosis, queued)
            return
        rows = self._all_row_index(nodes.size) if count == nodes.size else np.flatnonzero(feasible)
        best = int(rows[0] if count == 1 else rows[self._best(cycle, info, nodes, rows)])
        chosen = nodes.names[best]
        del nodes, filtered, feasible, candidates  # the table may write its arrays in place
        self.binding.place(cycle, info, chosen, queued.attempts)

    def _best(self, cycle: PodCycle, info: PodInfo, nodes: NodeSnapshot, rows: RowIndex) -> int:
        """The position in `rows` of the highest weighted total (the first on ties). A
        weighted vector of zeros changes no total and is skipped (NodeAffinity without
        preferences), as are the shared Skip and same-everywhere vectors; a lone vector is
        read as it is, and the first two kept make the total in one addition."""
        first: npt.NDArray[np.int64] | None = None
        total: npt.NDArray[np.int64] | None = None
        for scorer, weight in self.profile.scores:
            try:
                vector = scorer.score(cycle, info, nodes, rows)
            except Exception as exc:
                raise failed(scorer.name, exc, "Score") from exc
            if adds_nothing(vector):
                continue  # the plugin's Skip, or no preference: known without a look
            if weight != 1:
                if not np.count_nonzero(vector):
                    continue
                vector = vector * weight
            if first is None:
                first = vector  # the plugin's array: read, never written
            elif total is None:
                total = np.add(first, vector, dtype=np.int64, casting="unsafe")
            else:
                total += vector
        if total is None:
            total = first
        return 0 if total is None else int(total.astype(np.int64, copy=False).argmax())

    def _all_row_index(self, size: int) -> RowIndex:
        """0..size-1, shared and read-only: the rows of a pod that fits everywhere."""
        index = self._all_index
        if index.size != size:
            index = np.arange(size, dtype=np.intp)
            index.flags.writeable = False
            self._all_index = index
        return index

    def _everywhere(self, size: int) -> BoolMask:
        """An all-True mask of `size` rows, shared and read-only (one per cluster size)."""
        mask = self._all_rows
        if mask.size != size:
            mask = np.ones(size, dtype=bool)
            mask.flags.writeable = False
            self._all_rows = mask
        return mask

    def filter(
        self,
        cycle: PodCycle,
        info: PodInfo,
        nodes: NodeSnapshot,
        candidates: BoolMask,
        *,
        explain: bool = True,
    ) -> tuple[BoolMask, Diagnosis]:
        """Run the Filter plugins; a row's reasons come from the first filter removing it.

        The diagnosis is built only when asked (`explain`) or when no row is left: a pod that
        fits somewhere does not pay for the reasons of the nodes it does not fit."""
        skipped: set[int] = cycle.scratch.get(SKIPPED, set())
        removals: list[tuple[str, FilterResult, BoolMask]] = []
        current = candidates
        remaining = int(np.count_nonzero(current))
        for plugin in self.profile.filters:
            if not remaining:
                break
            if id(plugin) in skipped:
                continue
            try:
                result = plugin.filter(cycle, info, nodes, current)
            except Exception as exc:
                raise failed(plugin.name, exc, "Filter") from exc
            if result.status.code >= PodCode.ERROR:
                raise PluginError(at_point("Filter", plugin.name, result.status))
            if result.mask is current:
                continue  # nothing removed (the usual answer)
            kept = current & result.mask
            left = int(np.count_nonzero(kept))
            if left != remaining:
                removals.append((plugin.name, result, current & ~kept))
            current, remaining = kept, left
        if explain or not remaining:
            return current, _diagnose(nodes.size, removals)
        return current, _NO_DIAGNOSIS

    def _failed(
        self,
        cycle: PodCycle,
        info: PodInfo,
        nodes: NodeSnapshot,
        diagnosis: Diagnosis,
        queued: QueuedPod,
    ) -> None:
        """No node fits: PostFilter (preemption), then report and park the pod."""
        messages: list[str] = []
        nominated: str | None = None
        clear = False
        freed = False
        for plugin in self.profile.post_filters:
            result: PostFilterResult = call(
                plugin.name, plugin.post_filter, cycle, info, nodes, diagnosis
            )
            status = result.status
            if status.code >= PodCode.ERROR:
                # kube v1.36: an error ends the chain and its message alone follows the
                # diagnosis; the pod stays Unschedulable (a raised exception is still ours).
                messages = [status.message] if status.message else []
                break
            if result.nominated_node == "":
                clear = True
            if status.ok and result.nominated_node:
                nominated = result.nominated_node
                freed = self._preempt(cycle, info, result)
                break
            if status.message:
                messages.append(status.message)
            if status.code == PodCode.UNRESOLVABLE:
                break  # kube: UnschedulableAndUnresolvable ends the PostFilter chain
        if messages and nominated is None:
            diagnosis = dataclasses.replace(diagnosis, post_filter=", ".join(messages))
        message = diagnosis.message()
        if nominated is not None:
            self.nominator.nominate(info, nominated)
        elif clear:
            had = self.nominator.drop(info.key) or bool(info.nominated_node)
            nominated = "" if had else None
        self.reporter.unschedulable(
            cycle, info, message, diagnosis.plugins, queued.attempts, nominated
        )
        if freed:  # victims rejected at Permit freed the room at once: no event will come
            self.reporter.queue.activate(info.key, cycle.now)

    def _preempt(self, cycle: PodCycle, info: PodInfo, result: PostFilterResult) -> bool:
        """Delete the victims (reject those held at Permit); True when some room was freed
        at once (a rejected waiting victim)."""
        node = result.nominated_node or ""
        freed = False
        out = self.reporter.out
        stats = self.reporter.stats
        stats.preemption_attempts += 1
        condition = disruption_target(self.profile.scheduler_name)
        for victim in result.victims:
            if victim.key in self.preempting:
                continue
            if self.cache.counted_on(victim.key) is None:
                continue  # released already (a waiting sibling of a rejected victim)
            if result.nominations:  # victims on several nodes: name the victim's own
                node = self.cache.counted_on(victim.key) or result.nominated_node or ""
            stats.victims += 1
            if victim.key in self.binding.waiting:
                # Held at Permit, not running: released (its node freed) to back off, not
                # deleted (kube 1.36).
                self.binding.preempt(victim.key, result.status.plugin or "preemption")
                freed = True
                continue
            self.preempting[victim.key] = victim.uid
            out.append(
                DeletePod(
                    victim.key,
                    victim.uid,
                    reason=f"preempted by {info.key} on node {node}",
                    condition=condition,
                    preemptor=info.key,
                )
            )
            out.append(
                EmitEvent(
                    regarding=("Pod", victim.key, victim.uid),
                    type="Normal",
                    reason="Preempted",
                    message=f"Preempted by pod {info.uid or info.key} on node {node}",
                    action="Preempting",
                    related=("Pod", info.key, info.uid),
                )
            )
        # Lower-priority pods nominated to that node lose their nomination (kube clears it).
        node = result.nominated_node or ""
        targets = {node} | {where for _, where in result.nominations}
        for target in sorted(targets):
            for other in list(self.nominator.on(target).values()):
                if other.key != info.key and other.priority < info.priority:
                    self.nominator.drop(other.key)
                    out.append(PatchPodStatus(other.key, other.uid, nominated_node=""))
        # More pods nominated at once (a gang's other pending members).
        for key, where in result.nominations:
            member = self.cache.pod(key)
            if (
                key == info.key
                or member is None
                or member.node_name
                or self.cache.assumed(key) is not None
                or key in self.binding.waiting
            ):
                continue
            self.nominator.nominate(member, where)
            out.append(PatchPodStatus(member.key, member.uid, nominated_node=where))
        return freed


_NO_DIAGNOSIS = Diagnosis(total_nodes=0, counts={}, resolvable=np.zeros(0, dtype=bool))


def _diagnose(size: int, removals: Sequence[tuple[str, FilterResult, BoolMask]]) -> Diagnosis:
    """Counts per message over the removed rows (each row under the filter that removed it,
    with every reason of that filter covering it) and the rows removed only by resolvable
    reasons."""
    counts: dict[str, int] = {}
    resolvable = np.zeros(size, dtype=bool)
    plugins: set[str] = set()
    for name, result, removed in removals:
        plugins.add(name)
        covered = np.zeros(size, dtype=bool)
        hard = np.zeros(size, dtype=bool)
        for reason in call(name, result.all_reasons):
            rows = reason.rows & removed
            count = int(np.count_nonzero(rows))
            if not count:
                continue
            counts[reason.message] = counts.get(reason.message, 0) + count
            covered |= rows
            if not reason.resolvable:
                hard |= rows
        rest = removed & ~covered
        if rest.any():
            default = result.default
            message = (
                default.message if default is not None else f"node(s) didn't satisfy plugin {name}"
            )
            counts[message] = counts.get(message, 0) + int(np.count_nonzero(rest))
            if default is not None and not default.resolvable:
                hard |= rest
        resolvable |= removed & ~hard
    return Diagnosis(
        total_nodes=size, counts=counts, resolvable=resolvable, plugins=frozenset(plugins)
    )
