"""The order in which a placement's PlacementDecisions are written, so that a cluster selected
both before and after never vanishes from all of them in between (OCM issue 1346; a deliberate
difference, docs/replacing-ocm.md, 'Differences from OCM') and no PlacementDecision ever holds
more than 100 decisions, not even for a moment.

Pure: cluster names in, an ordered list of steps out; `controllers.hub.decision_run` executes
them.

The guarantee. Call `kept` the clusters in some current page and in some desired page. A cluster
is *anchored* by a page that holds it now and keeps holding it until the last step:

* a desired page already written (created or updated) or left unchanged, whose target holds it;
* a desired page still to be updated whose current content and target both hold it (its one
  write replaces the list but keeps the cluster);
* a stale page or a carrier: they are only deleted at the very end.

Anchors only accumulate. Creates only add clusters. An update of page X is emitted only once
every kept cluster X loses is anchored by some other page, so no update removes the last copy of
a kept cluster. When no pending update qualifies (a cycle, e.g. two decision groups swapping
clusters), the update with the fewest unanchored losses is unblocked by creating carriers
(`<placement>-decision-<k>` beyond every existing number) that hold exactly those clusters, at
most 100 each. Deletions come last: by then every desired page holds its target and every kept
cluster is in some target. Every write holds either a target (at most 100, checked) or a
carrier chunk (at most 100); a create first makes an empty object, then writes its list.

Each cycle break makes at least one pending update ready, so there are at most as many breaks
as pending updates, and the plan is O(total decisions · log pages).
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from placement.decisions import MAX_DECISIONS_PER_OBJECT

__all__ = [
    "Create",
    "Delete",
    "Page",
    "Step",
    "Update",
    "carrier_numbers",
    "plan_steps",
]


@dataclass(frozen=True)
class Page:
    """One PlacementDecision as the planner sees it: its name and its clusters in order."""

    name: str
    clusters: tuple[str, ...]


@dataclass(frozen=True)
class Create:
    """Create the object, then write `clusters`. A carrier (`carrier_for` names the page whose
    losses it holds) is temporary, emits no events and is deleted at the end."""

    name: str
    clusters: tuple[str, ...]
    carrier_for: str | None = None


@dataclass(frozen=True)
class Update:
    """Replace the decisions of an existing page with `clusters`."""

    name: str
    clusters: tuple[str, ...]


@dataclass(frozen=True)
class Delete:
    """Delete a page that is not desired (stale, or a carrier of this plan)."""

    name: str
    carrier: bool = False


Step = Create | Update | Delete


def carrier_numbers(prefix: str, taken: Iterable[str]) -> int:
    """The first number k such that `<prefix><k>` and every higher number is free."""
    highest = 0
    for name in taken:
        suffix = name[len(prefix) :] if name.startswith(prefix) else ""
        if suffix.isdigit():
            highest = max(highest, int(suffix))
    return highest + 1


def _checked(desired: Sequence[Page]) -> dict[str, Page]:
    want: dict[str, Page] = {}
    for page in desired:
        if page.name in want:
            raise ValueError(f"desired page {page.name!r} appears twice")
        if len(page.clusters) > MAX_DECISIONS_PER_OBJECT:
            raise ValueError(
                f"desired page {page.name!r} holds {len(page.clusters)} decisions, "
                f"more than {MAX_DECISIONS_PER_OBJECT}"
            )
        want[page.name] = page
    return want


def plan_steps(
    current: Sequence[Page],
    desired: Sequence[Page],
    *,
    carrier_prefix: str,
    rewrite: Collection[str] = (),
) -> list[Step]:
    """Creates, then updates in a safe order (with carriers where a cycle needs one), then
    deletions. `rewrite` names pages to update even though their cluster lists match (their
    decisions differ in another field)."""
    want = _checked(desired)
    have = {page.name: page for page in current}
    order = {name: i for i, name in enumerate(want)}
    wanted_clusters = {c for page in desired for c in page.clusters}
    kept = {c for page in current for c in page.clusters} & wanted_clusters

    steps: list[Step] = []
    anchors: Counter[str] = Counter()
    pending: dict[str, tuple[frozenset[str], frozenset[str]]] = {}  # name -> (now, target)
    for page in desired:
        target = frozenset(page.clusters)
        if page.name not in have:
            steps.append(Create(page.name, page.clusters))
            anchors.update(target)
            continue
        now = frozenset(have[page.name].clusters)
        if have[page.name].clusters == page.clusters and page.name not in rewrite:
            anchors.update(target)
        else:
            pending[page.name] = (now, target)
            anchors.update(now & target)
    stale = [page for page in current if page.name not in want]
    for page in stale:
        anchors.update(set(page.clusters))

    # Which pending updates wait for which clusters to be anchored.
    blocked: dict[str, int] = {}
    waiting: defaultdict[str, list[str]] = defaultdict(list)
    ready: list[tuple[int, str]] = []
    for name, (now, target) in pending.items():
        unsafe = [c for c in (now - target) & kept if anchors[c] == 0]
        blocked[name] = len(unsafe)
        for c in unsafe:
            waiting[c].append(name)
        if not unsafe:
            heapq.heappush(ready, (order[name], name))

    def anchor(clusters: Iterable[str]) -> None:
        for c in clusters:
            anchors[c] += 1
            if anchors[c] == 1:
                for name in waiting.pop(c, ()):
                    blocked[name] -= 1
                    if blocked[name] == 0:
                        heapq.heappush(ready, (order[name], name))

    carriers: list[str] = []
    next_number = carrier_numbers(carrier_prefix, [*want, *have])
    while pending:
        if not ready:
            # A cycle: unblock the update with the fewest unanchored losses through carriers.
            name = min(pending, key=lambda n: (blocked[n], order[n]))
            now, target = pending[name]
            unsafe = sorted((c for c in (now - target) & kept if anchors[c] == 0), key=str.encode)
            for i in range(0, len(unsafe), MAX_DECISIONS_PER_OBJECT):
                chunk = tuple(unsafe[i : i + MAX_DECISIONS_PER_OBJECT])
                carrier = f"{carrier_prefix}{next_number}"
                next_number += 1
                carriers.append(carrier)
                steps.append(Create(carrier, chunk, carrier_for=name))
                anchor(chunk)
            continue
        _, name = heapq.heappop(ready)
        now, target = pending.pop(name)
        steps.append(Update(name, want[name].clusters))
        anchor(target - now)

    steps.extend(Delete(page.name) for page in stale)
    steps.extend(Delete(name, carrier=True) for name in carriers)
    return steps
