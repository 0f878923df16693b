"""The exact on-demand count of the spot webhook under concurrent admissions, pure.

The seed counted on-demand pods by listing them at admission, so 500 pods created at once all
saw the same count and "within three pods" went on-demand too many. Here each Deployment has a
book:

* **alive**: its pods that hold an on-demand place (`mutation.is_on_demand_alive`), fed by the
  pod informer (`observe`, `forget`);
* **reservations**: the on-demand places granted at admission whose pods the informer has not
  shown yet. Each carries a token, written on the pod (`mutation.RESERVATION`), so a pod seen
  alive is counted once, as a pod, and never again as its reservation; a reservation whose pod
  never appears (the create failed after the webhook, a later webhook denied it) expires after
  `ttl`;
* **gone**: tokens whose pods the informer saw terminate or vanish, so that an unexpired
  reservation of a pod already deleted does not hold its place (replacements restore M);
* **released**: tokens of answers the API server never used (`release`): the webhook answered
  after its deadline (it then answers spot instead) or after the API server had hung up (its
  `timeoutSeconds` passed). No pod can carry such a token, so its place is free at once, and the
  next settlement drops it from the shared set too: the pod actually created, mutated or not,
  is what counts.

`count` = alive + reservations neither alive, gone nor released. One process admits with
`try_reserve`, which counts and reserves in one synchronous step: on one event loop no other
admission runs in between, so any number of concurrent admissions get exactly M on-demand
places. dryRun admissions call `count` only and reserve nothing.

**Several webhook replicas.** Each has its own informer and book; the reservations are shared
through one object per workload in the API (the shell keeps them in a Lease's annotation,
`encode`/`decode`), written with a resourceVersion precondition, a compare-and-swap. An
admission first reserves locally as *pending* (so this replica's concurrent admissions count
it), then the shell reads the shared reservations and calls `settle`: it recounts with the
shared set in place of its cached copy, grants pending tokens while the count is below M,
refuses the rest, and returns the new shared set to write. A 409 means another replica wrote
first: read again and settle again. The API server orders the writes, so the shared set never
grants more than M places among pods not yet seen alive, whichever replica asks.

Guarantee and limits (what exactness rests on):

* Reservations leave the shared set only by expiry or release, never because one replica saw
  the pod alive: another replica whose informer lags would then count neither. So exactness
  needs each replica's pod informer to show a created pod within `ttl` of its admission
  (default 60 s: far above watch latency; the API server's webhook timeout is at most 30 s),
  and the replicas' clocks to agree to well within `ttl` (expiries are absolute times).
* A replica whose informer has not yet shown an on-demand pod's deletion still counts it. So
  the shell does not trust a full count: before it answers spot it asks the API server for the
  workload's on-demand pods (a consistent read) and `confirm` forgets the pods seen alive before
  that read which it no longer holds. The replacement of a deleted on-demand pod therefore goes
  on-demand even when its admission overtakes the deletion's watch event.
* The count is taken at admission. A rolling update whose new pods are admitted while the old
  on-demand pods still run gives them spot; once the old pods are gone the Deployment can run
  below M until pods are created again (a rebalancer could evict a spot pod; not done here).
* A release is exact only when the shell knows the answer was not used: it never sent it (the
  API server hung up first) or it sent spot instead (past its deadline). An on-demand answer
  sent in time that reaches the API server after its timeout still holds its place until
  `ttl`: below M until more pods are created, never above.
* If the shared object cannot be written (RBAC, API errors), the shell falls back to the local
  book and says so in a warning: with several replicas that may exceed M, never fall below it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["DEFAULT_REFRESH", "DEFAULT_TTL", "Ledger", "Settlement", "decode", "encode"]

DEFAULT_TTL = 60.0
"""Seconds a reservation holds its place without its pod being seen."""

DEFAULT_REFRESH = 1.0
"""Seconds after which a replica whose cached shared set alone fills the count asks the shared
object again (a place another replica released is then seen within a second)."""


@dataclass
class _Book:
    alive: dict[str, str | None] = field(default_factory=dict)  # pod key -> its token
    alive_tokens: set[str] = field(default_factory=set)
    reserved: dict[str, float] = field(default_factory=dict)  # token -> expiry (granted)
    pending: dict[str, float] = field(default_factory=dict)  # token -> expiry (not yet shared)
    gone: dict[str, float] = field(default_factory=dict)  # token -> when to forget it
    released: dict[str, float] = field(default_factory=dict)  # token -> when to forget it
    adopted: float = float("-inf")  # when the shared set was last cached (`adopt`)

    def prune(self, now: float) -> None:
        for table in (self.reserved, self.pending, self.gone, self.released):
            for token in [t for t, expiry in table.items() if expiry <= now]:
                del table[token]

    def outstanding(self, tokens: Iterable[str]) -> int:
        """Reservations that hold a place: neither a pod seen alive nor one gone."""
        return sum(
            1
            for t in tokens
            if t not in self.alive_tokens and t not in self.gone and t not in self.released
        )

    def empty(self) -> bool:
        return not (self.alive or self.reserved or self.pending or self.gone or self.released)


@dataclass(frozen=True)
class Settlement:
    """What `settle` decided: the shared set to write, the tokens granted and refused."""

    shared: dict[str, float]
    granted: tuple[str, ...]
    refused: tuple[str, ...]
    changed: bool  # whether `shared` differs from what was read (else nothing to write)


class Ledger:
    """The books of every workload, keyed by `WorkloadRef.key`; `now` is passed in (seconds
    on any clock the caller uses consistently; with several replicas, wall-clock time)."""

    def __init__(self, ttl: float = DEFAULT_TTL, refresh: float = DEFAULT_REFRESH) -> None:
        self.ttl = ttl
        self.refresh = refresh
        self._books: dict[str, _Book] = {}
        self._pods: dict[str, tuple[str, str | None]] = {}  # pod key -> (workload, token)

    def _book(self, workload: str) -> _Book:
        book = self._books.get(workload)
        if book is None:
            book = self._books[workload] = _Book()
        return book

    # --- fed by the pod informer -------------------------------------------------------------

    def observe(
        self, pod: str, workload: str | None, alive: bool, token: str | None, now: float
    ) -> None:
        """The informer's latest view of `pod` (`namespace/name`): which workload it belongs to,
        whether it holds an on-demand place, and the reservation token it carries."""
        if not (alive and workload):
            self.forget(pod, now)
            return
        previous = self._pods.get(pod)
        if previous is not None and previous[0] != workload:
            self.forget(pod, now)
        self._pods[pod] = (workload, token)
        book = self._book(workload)
        book.alive[pod] = token
        if token is not None:
            book.alive_tokens.add(token)
            book.gone.pop(token, None)

    def forget(self, pod: str, now: float) -> None:
        """`pod` no longer holds a place (deleted, terminating, finished, relabelled)."""
        previous = self._pods.pop(pod, None)
        if previous is None:
            return
        workload, token = previous
        book = self._book(workload)
        book.alive.pop(pod, None)
        if token is not None:
            book.alive_tokens.discard(token)
            book.gone[token] = now + self.ttl
        book.prune(now)
        if book.empty():
            del self._books[workload]

    def alive(self, workload: str) -> frozenset[str]:
        """The pods counted alive for `workload` (what a fresh read can confirm or refute)."""
        book = self._books.get(workload)
        return frozenset(book.alive) if book is not None else frozenset()

    def confirm(
        self, workload: str, before: Iterable[str], listed: Iterable[str], now: float
    ) -> int:
        """A consistent read of the API server, sent after `before` (the pods counted alive
        then) was taken, holds the on-demand pods alive in `listed`: the pods of `before` it
        lacks were deleted or stopped holding a place while the informer lagged. They are
        forgotten (their later watch events change nothing); a pod seen only after the read
        was sent is kept, the read could predate it. Returns how many were forgotten."""
        present = set(listed)
        book = self._books.get(workload)
        gone = [pod for pod in before if pod not in present and book and pod in book.alive]
        for pod in gone:
            self.forget(pod, now)
        return len(gone)

    # --- at admission ------------------------------------------------------------------------

    def count(self, workload: str, now: float, *, shared: bool = False) -> int:
        """On-demand places taken: pods alive plus reservations outstanding. With `shared`,
        once the cached shared set is `refresh` seconds old, only pods alive and this replica's
        pending places: another replica may have released places since, so the shared object
        decides the rest (`settle`)."""
        book = self._books.get(workload)
        if book is None:
            return 0
        book.prune(now)
        if shared and now - book.adopted >= self.refresh:
            return len(book.alive) + book.outstanding(book.pending)
        tokens = book.reserved.keys() | book.pending.keys()
        return len(book.alive) + book.outstanding(tokens)

    def try_reserve(
        self, workload: str, token: str, limit: int, now: float, *, shared: bool = False
    ) -> bool:
        """Take a place if fewer than `limit` are taken (`count`), in one step. With `shared`,
        the place is pending until `settle` grants it through the shared object."""
        if self.count(workload, now, shared=shared) >= limit:
            return False
        book = self._book(workload)
        (book.pending if shared else book.reserved)[token] = now + self.ttl
        return True

    def release(self, workload: str, token: str, now: float) -> None:
        """Give a place back: the answer carrying `token` was never used (not sent, sent too
        late, or the API server gone). Kept as released for `ttl`, so a shared set read back
        with the token in it does not count it, and the next settlement drops it."""
        book = self._books.get(workload)
        if book is not None:
            book.reserved.pop(token, None)
            book.pending.pop(token, None)
            book.released[token] = now + self.ttl

    def pending(self, workload: str) -> list[str]:
        """Tokens reserved here and not yet settled, oldest first."""
        book = self._books.get(workload)
        return list(book.pending) if book is not None else []

    def reserved(self, workload: str) -> dict[str, float]:
        """This replica's granted reservations (with several replicas: its cached shared set)."""
        book = self._books.get(workload)
        return dict(book.reserved) if book is not None else {}

    # --- the shared reservations (several replicas) -------------------------------------------

    def settle(
        self,
        workload: str,
        shared: Mapping[str, float],
        pending: Sequence[str],
        limit: int,
        now: float,
    ) -> Settlement:
        """Grant `pending` tokens against the `shared` reservations just read: the count is
        this replica's pods alive plus the shared reservations outstanding (not this replica's
        cached copy, which may be stale); expired and released entries are dropped from what
        is written."""
        book = self._book(workload)
        book.prune(now)
        live = {
            t: expiry for t, expiry in shared.items() if expiry > now and t not in book.released
        }
        taken = len(book.alive) + book.outstanding(live)
        granted: list[str] = []
        refused: list[str] = []
        for token in pending:
            if token in live:
                granted.append(token)  # a write that succeeded but whose answer was lost
            elif taken < limit:
                live[token] = book.pending.get(token, now + self.ttl)
                granted.append(token)
                taken += 1
            else:
                refused.append(token)
        changed = live != dict(shared)
        return Settlement(live, tuple(granted), tuple(refused), changed)

    def adopt(self, workload: str, settlement: Settlement, now: float) -> None:
        """The settlement was written (or needed no write): cache the shared set as this
        replica's reservations and drop the settled tokens from pending."""
        book = self._book(workload)
        book.reserved = dict(settlement.shared)
        book.adopted = max(book.adopted, now)
        for token in (*settlement.granted, *settlement.refused):
            book.pending.pop(token, None)

    def workloads(self) -> list[str]:
        return sorted(self._books)


def encode(shared: Mapping[str, float]) -> str:
    """The shared reservations as stored in the API object (sorted: stable writes)."""
    return json.dumps({t: round(e, 3) for t, e in sorted(shared.items())}, separators=(",", ":"))


def decode(text: str | None) -> dict[str, float]:
    """The stored reservations; anything unreadable counts as none (it expires anyway)."""
    if not text:
        return {}
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    return {
        str(t): float(e)
        for t, e in doc.items()
        if isinstance(e, int | float) and not isinstance(e, bool)
    }
