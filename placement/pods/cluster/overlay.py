"""`PodOverlay`: the pods a hypothetical `NodeSnapshot` counts differently from the cluster.

Preemption asks "would the pod fit once these pods are gone?" and gang preemption "... and
these members are placed?"; the Filter plugins that count resources read the answer from the
snapshot's `requested` matrix, which the search adjusts. The plugins that look at *which* pods
run where (inter-pod affinity, topology spread, host ports, volume restrictions) read it here:
a pod counted on a node is gone from the hypothetical cluster when `gone(pod, row)` says so,
and `added` pods run there as well (kube: the PreFilter extensions' RemovePod and AddPod).

The snapshot of a real cycle has the empty overlay (`NO_OVERLAY`), and plugins take their
fast path on it. One filter pass may hold the victims of several candidate rows at once; a
row's verdict is only kube's (which checks each node with its own victims gone) when that
row's victims are the only ones: the victim search decides the rows one at a time again when
a pass made a plugin read `removed` (`placement.pods.preemption.victims.select_victims`). Nominated
pods are `added` when the cycle counts them (kube runs the filters with the nominated pods of equal
or higher priority added)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

from placement.pods.cluster.podinfo import PodInfo

__all__ = ["NO_OVERLAY", "PodOverlay"]


class PodOverlay:
    """See the module docstring. `below[row]`: every pod counted on that row whose priority is
    below it is gone (preemption's "remove every lower-priority pod"); `removed`: these pod
    keys are gone wherever they run; `added`: (row, pod) placed hypothetically.

    Immutable. The victim search builds an overlay per trial while no plugin of the profile
    may read it, so `removing_lazily` defers the set until a plugin asks for `removed`."""

    __slots__ = ("_lazy", "_removed", "added", "below")

    def __init__(
        self,
        removed: frozenset[str] = frozenset(),
        below: npt.NDArray[np.int64] | None = None,
        added: tuple[tuple[int, PodInfo], ...] = (),
        lazy: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self._removed: frozenset[str] | None = removed if lazy is None else None
        self._lazy = lazy
        self.below = below
        self.added = added

    @property
    def removed(self) -> frozenset[str]:
        if self._removed is None:
            assert self._lazy is not None
            self._removed = frozenset(self._lazy())
            self._lazy = None
        return self._removed

    @property
    def empty(self) -> bool:
        nothing_removed = self._lazy is None and not self._removed
        return nothing_removed and self.below is None and not self.added

    def gone(self, pod: PodInfo, row: int) -> bool:
        """True when `pod`, counted on `row`, is not there in the hypothetical cluster."""
        if pod.key in self.removed:
            return True
        return self.below is not None and pod.priority < int(self.below[row])

    def removing(self, keys: Iterable[str]) -> PodOverlay:
        return PodOverlay(self.removed | frozenset(keys), self.below, self.added)

    def removing_lazily(self, keys: Callable[[], Iterable[str]]) -> PodOverlay:
        """`removing(keys())`, with `keys` called only when a plugin reads `removed` (at most
        once; callers hand the overlay to one filter run and let it go, so `keys` may read
        state that changes after that run)."""

        def union() -> Iterable[str]:
            return self.removed | frozenset(keys())

        return PodOverlay(below=self.below, added=self.added, lazy=union)

    def below_priority(self, below: npt.NDArray[np.int64]) -> PodOverlay:
        """Every pod on row r below priority `below[r]` gone (rows to leave as they are hold
        the lowest int64)."""
        if self.below is not None:
            below = np.maximum(self.below, below)
        if self._lazy is not None:
            return PodOverlay(below=below, added=self.added, lazy=lambda: self.removed)
        return PodOverlay(self.removed, below, self.added)

    def adding(self, placed: Iterable[tuple[int, PodInfo]]) -> PodOverlay:
        added = self.added + tuple(placed)
        if self._lazy is not None:
            return PodOverlay(below=self.below, added=added, lazy=lambda: self.removed)
        return PodOverlay(self.removed, self.below, added)

    def added_on(self, row: int) -> list[PodInfo]:
        return [pod for r, pod in self.added if r == row]


NO_OVERLAY = PodOverlay()
