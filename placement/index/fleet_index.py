"""`FleetIndex`: the fleet's numpy columns kept up to date from watch events.

The controller feeds it every ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding,
PlacementDecision and AddOnPlacementScore event and asks for a `FleetSnapshot` per scheduling
cycle (clusters and scores come as models or as the compact rows of `placement.rows`). A
snapshot equals `FleetSnapshot.build` of the stored objects, but costs what changed:

* an update of a known cluster rewrites its row only, in place (arrays a snapshot already holds
  are copied once before the first write: copy on write, so a snapshot never changes; the
  cluster columns are in `placement.index.clusters`);
* added and deleted clusters move rows (sorted by name), so they wait for the next `snapshot()`
  and are applied together, vectorized: a cold start is about one build, not N inserts;
* a PlacementDecision changes its own entries and its placement's row array
  (see `placement.index.decisions`);
* `snapshot()` with nothing changed returns the same object.

`cluster_row` keeps, besides a cluster's features, its whole object deflated
(`placement.index.documents`): CEL selectors read the ManagedCluster as `placement simulate`
does, annotations, version and conditions included, for about a hundred bytes a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.meta import KubeObject
from apis.placements import PlacementDecision
from placement.arrays import BoolMask
from placement.cel.document import NOT_KEPT, claims_document
from placement.index.clusters import ClusterColumns
from placement.index.columns import AddOnState, Cow, Epoch, Layout, columns_of
from placement.index.decisions import DecisionState
from placement.index.documents import DocumentRow, document_row, unpack
from placement.rows import (
    ClusterRow,
    DecisionRow,
    ScoreRow,
    claims_list_text,
    decision_row,
    score_row,
)
from placement.snapshot.fleet_snapshot import RESOURCES, CelInputs, FleetSnapshot, ScoreItems

__all__ = ["ClusterRow", "DocumentRow", "FleetIndex", "ScoreRow", "cluster_row", "score_row"]


def cluster_row(cluster: ManagedCluster) -> ClusterRow:
    """What the index and the controller's cluster cache keep of a cluster: its row's features
    and, for CEL, its whole object packed small."""
    return document_row(cluster)


def _same_version(old: KubeObject, new: KubeObject) -> bool:
    version = new.metadata.resource_version
    return version is not None and version == old.metadata.resource_version


def _same_row_version(old: ClusterRow | ScoreRow, new: ClusterRow | ScoreRow) -> bool:
    return new.resource_version is not None and new.resource_version == old.resource_version


class FleetIndex:
    """The stored scheduling objects as columns; `snapshot()` hands out immutable views."""

    def __init__(self) -> None:
        self._epoch = Epoch()
        self._version = 0
        self._cached: FleetSnapshot | None = None
        self._last: FleetSnapshot | None = None
        # Rows, not models: at 100,000 clusters the models would take half a gigabyte.
        self._clusters: dict[str, ClusterRow] = {}  # the newest of every known cluster
        # The committed rows: clusters added or deleted since the last snapshot are pending.
        self._names: tuple[str, ...] = ()
        self._name_array = np.empty(0, dtype=object)
        self._index: dict[str, int] = {}
        self._adds: dict[str, ClusterRow] = {}
        self._deletes: dict[str, ClusterRow] = {}  # deleted committed rows: what they still show
        self._columns = ClusterColumns(self._epoch)
        # Small mappings are replaced, never mutated, so snapshots can hold them as they are.
        self._sets: dict[str, ManagedClusterSet] = {}
        self._bindings: dict[tuple[str, str], ManagedClusterSetBinding] = {}
        self._binding_names: dict[str, set[str]] = {}
        self._binding_view: dict[str, tuple[str, ...]] = {}
        # By cluster namespace; a tuple, since a cluster has one score or a few.
        self._scores_of: dict[str, tuple[ScoreRow, ...]] = {}
        self._addons: dict[str, AddOnState] = {}
        self._decisions = DecisionState(self._epoch)
        # What the cluster-set masks of the last snapshot depend on, changed since (the label
        # cells: `_columns.labels_moved`).
        self._sets_changed: set[str] = set()
        # CEL: a stamp per committed row (bumped when its cluster's object or one of its score
        # objects changes) and the results cache. The objects are in the rows (`DocumentRow`;
        # a plain `ClusterRow` shows CEL what it holds).
        self._stamp = 0
        self._revisions = Cow(self._epoch, np.zeros(0, dtype=np.int64))
        self._stamps: dict[str, int] = {}
        self._cel_cache: dict[object, object] = {}
        # Each committed row's kept annotations (`ClusterRow.annotations`), for CEL's groups.
        self._notes: Cow[np.object_] = Cow(self._epoch, np.empty(0, dtype=object))

    @property
    def version(self) -> int:
        """Grows on every change that a snapshot would show."""
        return self._version

    def __len__(self) -> int:
        return len(self._clusters)

    def cluster(self, name: str) -> ClusterRow | None:
        """The newest row stored for cluster `name`."""
        return self._clusters.get(name)

    def _changed(self) -> None:
        self._version += 1
        self._cached = None

    # --- ManagedCluster -------------------------------------------------------------------

    def upsert_cluster(self, cluster: ManagedCluster | ClusterRow) -> None:
        after = cluster if isinstance(cluster, ClusterRow) else cluster_row(cluster)
        name = after.name
        old = self._clusters.get(name)
        if old is not None and _same_row_version(old, after):
            return
        self._clusters[name] = after
        # What CEL reads may change without the features (an annotation, a condition).
        object_changed = old is None or _packed(old) != _packed(after)
        notes_changed = old is None or _annotations_differ(old.annotations, after.annotations)
        object_changed |= notes_changed
        row = self._index.get(name)
        if row is not None and notes_changed:
            self._notes.write()[row] = after.annotations
        if row is None:
            self._adds[name] = after
            self._changed()
            return
        # Deleted and back before a snapshot: keeps its row, which still shows `shown`.
        shown = self._deletes.pop(name, None)
        changed = shown is not None
        before = shown if shown is not None else old
        assert before is not None  # a committed row is known or pending deletion
        if not _same_features(before, after):
            self._columns.rewrite(row, before, after)
            changed = True
        if changed or object_changed:
            self._restamp(name, row)
            self._changed()

    def _restamp(self, name: str, row: int | None) -> None:
        """A new stamp for cluster `name`: CEL results cached for it are stale."""
        self._stamp += 1
        self._stamps[name] = self._stamp
        if row is not None:
            self._revisions.write()[row] = self._stamp

    def delete_cluster(self, name: str) -> None:
        gone = self._clusters.pop(name, None)
        if gone is None:
            return
        if self._adds.pop(name, None) is None:
            self._deletes[name] = gone
        self._changed()

    # --- adds and deletes, applied together -----------------------------------------------

    def _apply_layout(self) -> None:
        added = sorted(self._adds)  # str order is UTF-8 byte order, the snapshot's row order
        keep = np.ones(len(self._names), dtype=bool)
        keep[[self._index[name] for name in self._deletes]] = False
        kept = self._name_array[keep]
        new_names = np.empty(len(added), dtype=object)
        new_names[:] = added
        added_rows = np.searchsorted(kept, new_names) + np.arange(len(added))
        size = kept.size + len(added)
        fresh = np.zeros(size, dtype=bool)
        fresh[added_rows] = True
        layout = Layout(keep, np.flatnonzero(~fresh), size)

        names = np.empty(size, dtype=object)
        names[layout.kept_rows] = kept
        names[added_rows] = new_names
        self._name_array = names
        self._names = tuple(names.tolist())
        self._index = dict(zip(self._names, range(size), strict=True))
        rows = added_rows.tolist()
        self._columns.relayout(layout, rows, map(self._adds.__getitem__, added))
        for addon in self._addons.values():
            addon.relayout(layout)
        self._decisions.relayout(layout, list(zip(rows, added, strict=True)))
        scored: dict[str, list[tuple[int, ScoreRow]]] = {}
        for row, name in zip(rows, added, strict=True):
            for score in self._scores_of.get(name, ()):
                scored.setdefault(score.name, []).append((row, score))
        for resource, items in scored.items():
            self._addon(resource).fill(items)
        revisions = layout.move(self._revisions.read, 0)
        for row, name in zip(rows, added, strict=True):
            self._stamp += 1
            self._stamps[name] = revisions[row] = self._stamp
        for name in self._deletes:
            self._stamps.pop(name, None)
        self._revisions.replace(revisions)
        notes = layout.move(self._notes.read, None)
        for row, name in zip(rows, added, strict=True):
            notes[row] = self._adds[name].annotations
        self._notes.replace(notes)
        self._adds.clear()
        self._deletes.clear()

    # --- sets and bindings ----------------------------------------------------------------

    def upsert_cluster_set(self, cluster_set: ManagedClusterSet) -> None:
        old = self._sets.get(cluster_set.name)
        if old is not None and (_same_version(old, cluster_set) or old == cluster_set):
            return
        self._sets = {**self._sets, cluster_set.name: cluster_set}
        if old is None or old.spec != cluster_set.spec:
            self._sets_changed.add(cluster_set.name)
        self._changed()

    def delete_cluster_set(self, name: str) -> None:
        if name not in self._sets:
            return
        self._sets = {k: v for k, v in self._sets.items() if k != name}
        self._sets_changed.add(name)
        self._changed()

    def upsert_binding(self, binding: ManagedClusterSetBinding) -> None:
        key = (binding.namespace, binding.name)
        known = key in self._bindings
        self._bindings[key] = binding
        if not known:  # a snapshot shows only the bindings' names
            self._binding_names.setdefault(binding.namespace, set()).add(binding.name)
            self._bind(binding.namespace)

    def delete_binding(self, namespace: str, name: str) -> None:
        if self._bindings.pop((namespace, name), None) is None:
            return
        self._binding_names[namespace].discard(name)
        self._bind(namespace)

    def _bind(self, namespace: str) -> None:
        names = self._binding_names[namespace]
        view = dict(self._binding_view)
        if names:
            view[namespace] = tuple(sorted(names))
        else:
            del view[namespace], self._binding_names[namespace]
        self._binding_view = view
        self._changed()

    # --- PlacementDecision and AddOnPlacementScore ----------------------------------------

    def upsert_decision(self, decision: PlacementDecision | DecisionRow) -> None:
        row = decision if isinstance(decision, DecisionRow) else decision_row(decision)
        if self._decisions.upsert(row, self._index):
            self._changed()

    def delete_decision(self, namespace: str, name: str) -> None:
        if self._decisions.delete(namespace, name):
            self._changed()

    def upsert_score(self, score: AddOnPlacementScore | ScoreRow) -> None:
        new = score if isinstance(score, ScoreRow) else score_row(score)
        namespace = new.namespace
        mine = self._scores_of.get(namespace, ())
        old = next((s for s in mine if s.name == new.name), None)
        if old is not None and _same_row_version(old, new):
            return
        self._scores_of[namespace] = (*(s for s in mine if s is not old), new)
        row = self._index.get(namespace)
        # Scores of clusters not in the rows yet are written when their cluster is added.
        if row is None or (old is not None and old == new):
            return
        self._addon(new.name).put(row, new)
        self._restamp(namespace, row)
        self._changed()

    def delete_score(self, namespace: str, name: str) -> None:
        mine = self._scores_of.get(namespace, ())
        rest = tuple(s for s in mine if s.name != name)
        if len(rest) == len(mine):
            return
        if rest:
            self._scores_of[namespace] = rest
        else:
            del self._scores_of[namespace]
        row = self._index.get(namespace)
        if row is not None:
            self._addons[name].put(row, None)
            self._restamp(namespace, row)
            self._changed()

    def _addon(self, resource: str) -> AddOnState:
        state = self._addons.get(resource)
        if state is None:
            state = self._addons[resource] = AddOnState(self._epoch, len(self._names))
        return state

    # --- what CEL reads ------------------------------------------------------------------

    def _document(self, name: str) -> tuple[int, dict[str, object]]:
        """Cluster `name` unstructured, with the stamp it is current for: its whole object
        when the row carries it, else what the row holds (name, labels, claims, taints,
        resources). Inflated per call: results are cached by stamp, so a cluster is read once
        per selector and object version, and nothing fleet-sized is kept unpacked."""
        stamp = self._stamps.get(name, 0)
        row = self._clusters.get(name)
        if isinstance(row, DocumentRow) and row.packed:
            return stamp, unpack(row)
        return stamp, _row_document(name, self)

    def _score_items(self, cluster: str, name: str) -> ScoreItems | None:
        for score in self._scores_of.get(cluster, ()):
            if score.name == name:
                return [{"name": key, "value": value} for key, value in score.values]
        return None

    # --- snapshots ------------------------------------------------------------------------

    def snapshot(self) -> FleetSnapshot:
        """The fleet as stored now; the same object until the next change."""
        if self._cached is not None:
            return self._cached
        if self._adds or self._deletes:
            self._apply_layout()
        columns = self._columns
        for states in (columns.labels, columns.claims, self._addons):
            for key in [k for k, state in states.items() if not state.rows]:
                del states[key]  # as if never seen: build() has no column for them either
        last = self._last
        if last is None or columns.labels_moved:
            masks: dict[str, BoolMask] = {}
        elif self._sets_changed:
            masks = {k: v for k, v in last._set_masks.items() if k not in self._sets_changed}
        else:
            masks = last._set_masks  # membership unchanged: share the cache, it only fills up
        fleet = FleetSnapshot(
            names=self._names,
            index=self._index,
            labels=columns_of(columns.labels),
            claims=columns_of(columns.claims),
            deleting=columns.deleting.read,
            allocatable={r: column.read for r, column in columns.allocatable.items()},
            capacity={r: column.read for r, column in columns.capacity.items()},
            taints=columns.taints,
            cluster_sets=self._sets,
            bindings=self._binding_view,
            decisions=self._decisions.table(),
            addons={k: state.column() for k, state in self._addons.items()},
            _set_masks=masks,
            cel=CelInputs(
                self._revisions.read,
                self._document,
                self._score_items,
                self._cel_cache,
                columns.claim_lists.column(),
                self._notes.read,
            ),
        )
        if last is not None and last.taints is fleet.taints and "taint_table" in last.__dict__:
            fleet.__dict__["taint_table"] = last.__dict__["taint_table"]  # the cached_property
        derived = last.__dict__.get("incomplete_resources") if last is not None else None
        if derived is not None and last is not None and _same_amounts(last, fleet):
            fleet.__dict__["incomplete_resources"] = derived  # the cached_property
        self._epoch.now += 1  # from now on every array above is copied before a write
        columns.labels_moved = False
        self._sets_changed.clear()
        self._cached = self._last = fleet
        return fleet


_FEATURES = ("labels", "claims", "deleting", "allocatable", "capacity", "taints")


def _packed(row: ClusterRow) -> bytes:
    return row.packed if isinstance(row, DocumentRow) else b""


def _annotations_differ(before: Mapping[str, str], after: Mapping[str, str]) -> bool:
    """Whether two rows' kept annotations differ (`NOT_KEPT` is empty, yet not "none")."""
    return before is not after and ((before is NOT_KEPT) != (after is NOT_KEPT) or before != after)


def _same_features(before: ClusterRow, after: ClusterRow) -> bool:
    """Rows of either class compare by the features their columns show."""
    if type(before) is type(after):
        return before == after
    return all(getattr(before, f) == getattr(after, f) for f in _FEATURES)


def _row_document(name: str, index: FleetIndex) -> dict[str, object]:
    """What a cluster row knows, shaped as the ManagedCluster it came from."""
    row = index.cluster(name)
    if row is None:
        return {"metadata": {"name": name}}
    metadata: dict[str, object] = {"name": name, "labels": dict(row.labels)}
    if row.annotations:
        metadata["annotations"] = dict(row.annotations)
    if row.resource_version is not None:
        metadata["resourceVersion"] = row.resource_version
    taints = [{"key": k, "value": v, "effect": e} for k, v, e, _ in row.taints]
    claims = claims_document(claims_list_text(row.claims))  # as written, as CEL sees it
    status: dict[str, object] = {"clusterClaims": claims} if claims else {}
    for field, amounts in (("allocatable", row.allocatable), ("capacity", row.capacity)):
        quantities = _quantities(amounts)
        if quantities:
            status[field] = quantities
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": metadata,
        "spec": {"taints": taints} if taints else {},
        "status": status,
    }


def _quantities(amounts: tuple[float | None, ...]) -> dict[str, str]:
    """A row's cpu (cores) and memory (bytes) written back as quantities: cpu in millicores,
    memory in bytes (other status fields are not kept by a row)."""
    out: dict[str, str] = {}
    for name, amount in zip(RESOURCES, amounts, strict=True):
        if amount is not None:
            out[name] = f"{round(amount * 1000)}m" if name == "cpu" else str(round(amount))
    return out


def _same_amounts(last: FleetSnapshot, fleet: FleetSnapshot) -> bool:
    """Whether both snapshots hold the very same allocatable and capacity columns."""
    pairs = ((last.allocatable, fleet.allocatable), (last.capacity, fleet.capacity))
    return all(a.keys() == b.keys() and all(a[k] is b[k] for k in a) for a, b in pairs)
