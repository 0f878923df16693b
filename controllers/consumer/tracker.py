"""`DecisionTracker`: where one Placement's PlacementDecisions say to act, for add-on agents and
hub-side add-on managers (sdk-go's `PlacementDecisionClustersTracker`, as a watch).

It lists and watches the PlacementDecisions labelled
`cluster.open-cluster-management.io/placement=<name>` in the placement's namespace (one list,
then one watch; after a 410 the informer lists again and what vanished meanwhile is seen as
deleted), keeps the clusters of each PlacementDecision with its decision group (the PD's
group-index and group-name labels), and reports changes of their union as `(added, removed)`.

No spurious remove while a cluster moves between PlacementDecision objects: a cluster missing
from the union is reported removed only once no PlacementDecision of the placement changed for
`settle` seconds (the writer has finished its round: ours adds before it removes, OCM's may
remove first) and it is still missing then; if it comes back meanwhile, nothing is reported.
Additions are reported at once. The first change is the placement's decisions as the first
list found them, whole, in one change (not one PlacementDecision at a time).

The Placement must exist: `start` reads it first and raises `PlacementNotFoundError` (naming
namespace/name) when it does not, instead of waiting forever on decisions nobody will write.
`wait_for_placement=S` waits up to S seconds for it to be created (saying so in the log once)
before raising. Credentials that may not read Placements (403) skip the check.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from apis.placements import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    PLACEMENT_LABEL,
    Placement,
    PlacementDecision,
)
from controllers.kube.errors import ForbiddenError, NotFoundError
from controllers.kube.gateway import Gateway
from controllers.runtime.cache import Informer
from placement.rollout import GroupKey

__all__ = ["DEFAULT_SETTLE", "DecisionTracker", "PlacementNotFoundError"]

log = logging.getLogger(__name__)

PLACEMENT_POLL = 0.5
"""Seconds between two reads of a missing Placement while `wait_for_placement` lasts."""

DEFAULT_SETTLE = 1.0
"""Seconds without a PlacementDecision change before a missing cluster counts as removed."""

Change = tuple[frozenset[str], frozenset[str]]


def _group(pd: PlacementDecision) -> GroupKey:
    labels = pd.metadata.labels or {}
    try:
        index = int(labels.get(DECISION_GROUP_INDEX_LABEL, "0"))
    except ValueError:
        index = 0
    return GroupKey(index, labels.get(DECISION_GROUP_NAME_LABEL, ""))


class PlacementNotFoundError(LookupError):
    """The Placement a tracker was asked to follow does not exist on the hub."""

    def __init__(self, namespace: str, name: str, waited: float = 0.0) -> None:
        self.namespace = namespace
        self.name = name
        after = f" after waiting {waited:g} s" if waited else ""
        super().__init__(
            f"placement {namespace}/{name} not found on the hub{after}: no Placement named "
            f"{name!r} in namespace {namespace!r} (`kubectl get placements -A` lists those "
            "that exist)"
        )


class DecisionTracker:
    """The clusters one Placement selects, by decision group, kept by a watch."""

    def __init__(
        self,
        gateway: Gateway,
        namespace: str,
        placement: str,
        *,
        settle: float = DEFAULT_SETTLE,
        wait_for_placement: float = 0.0,
    ) -> None:
        self.gateway = gateway
        self.namespace = namespace
        self.placement = placement
        self.settle = settle
        self.wait_for_placement = wait_for_placement
        self._per_pd: dict[str, tuple[GroupKey, frozenset[str]]] = {}
        self._reported: set[str] = set()  # the union as last reported
        self._changes: asyncio.Queue[Change] = asyncio.Queue()
        self._quiet: asyncio.TimerHandle | None = None
        self.informer: Informer[Any, Any] = Informer(
            gateway,
            PlacementDecision,
            namespace=namespace,
            label_selector=f"{PLACEMENT_LABEL}={placement}",
            on_add=self._seen,
            on_update=lambda _old, new: self._seen(new),
            on_delete=self._gone,
        )

    # --- life cycle ------------------------------------------------------------------------

    async def start(self, timeout: float | None = 60.0) -> None:
        """Check that the Placement exists (`PlacementNotFoundError` if not, after waiting
        `wait_for_placement` seconds for it), list and start watching; returns once the first
        list is in (its clusters are the first change reported, all added)."""
        await self._placement_exists()
        self.informer.start()
        await self.informer.wait_synced(timeout)
        self._changed()  # the first list, whole: one change

    async def _placement_exists(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_for_placement
        said = False
        while True:
            try:
                await self.gateway.get(Placement, self.placement, self.namespace)
                return
            except ForbiddenError:
                return  # may read decisions but not placements: nothing to tell
            except NotFoundError:
                if loop.time() >= deadline:
                    raise PlacementNotFoundError(
                        self.namespace, self.placement, self.wait_for_placement
                    ) from None
            if not said:
                said = True
                log.warning(
                    "placement %s/%s not found: waiting up to %g s for it to be created",
                    self.namespace,
                    self.placement,
                    self.wait_for_placement,
                )
            await asyncio.sleep(min(PLACEMENT_POLL, max(0.0, deadline - loop.time())))

    async def stop(self) -> None:
        if self._quiet is not None:
            self._quiet.cancel()
        await self.informer.stop()

    async def __aenter__(self) -> DecisionTracker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- what a caller reads -------------------------------------------------------------------

    def clusters(self) -> frozenset[str]:
        """Every cluster some PlacementDecision of the placement holds now."""
        return frozenset().union(*(clusters for _, clusters in self._per_pd.values()))

    def groups(self) -> dict[GroupKey, frozenset[str]]:
        """The clusters by decision group (what `placement.rollout.rollout` takes)."""
        out: dict[GroupKey, set[str]] = {}
        for key, clusters in self._per_pd.values():
            out.setdefault(key, set()).update(clusters)
        return {key: frozenset(clusters) for key, clusters in out.items()}

    async def next_change(self) -> Change:
        """The next `(added, removed)`: waits until there is one."""
        return await self._changes.get()

    async def changes(self) -> AsyncIterator[Change]:
        """Every change, as it comes (until the caller stops iterating)."""
        while True:
            yield await self._changes.get()

    # --- the watch -----------------------------------------------------------------------------

    def _seen(self, pd: PlacementDecision) -> None:
        clusters = frozenset(
            d.cluster_name for d in (pd.status.decisions if pd.status else None) or ()
        )
        self._per_pd[pd.name] = (_group(pd), clusters)
        self._changed()

    def _gone(self, pd: PlacementDecision) -> None:
        self._per_pd.pop(pd.name, None)
        self._changed()

    def _changed(self) -> None:
        if not self.informer.synced:
            return  # the first list is still coming in: `start` reports it whole
        now = self.clusters()
        added = now - self._reported
        if added:
            self._reported |= added
            self._changes.put_nowait((frozenset(added), frozenset()))
        if self._reported - now:
            self._wait_for_quiet()

    def _wait_for_quiet(self) -> None:
        if self._quiet is not None:
            self._quiet.cancel()
        loop = asyncio.get_running_loop()
        self._quiet = loop.call_later(self.settle, self._report_removed)

    def _report_removed(self) -> None:
        self._quiet = None
        removed = self._reported - self.clusters()
        if removed:
            self._reported -= removed
            self._changes.put_nowait((frozenset(), frozenset(removed)))
