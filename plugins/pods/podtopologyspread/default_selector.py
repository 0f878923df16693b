"""The selector of PodTopologySpread's default constraints, as kube-scheduler v1.36 derives it
(its `DefaultSelector`) from the objects that select the pod:

* every Service of the pod's namespace whose `spec.selector` (a label map; absent: it selects
  nothing) matches the pod's labels: their maps merged;
* the pod's controller (its owner reference with `controller: true`), when it is a
  ReplicationController (`v1`), whose selector map is merged in too, or a ReplicaSet or
  StatefulSet (`apps/v1`), whose selector's requirements are added (an invalid one adds
  nothing). A controller the scheduler does not know (not in its informers) adds nothing.

No requirement at all (no Service, no known controller, or only empty selectors): the pod gets
no default constraint. kube's InterPodAffinity does not use these selectors.

`DefaultSelectors` keeps the answer per (namespace, labels, controller), so the pods of one
workload cost one derivation; it forgets everything when a Service, ReplicationController,
ReplicaSet or StatefulSet comes, goes or changes its selector (the plugin's `on_event`; a
ReplicaSet's status updates, frequent on a busy cluster, change nothing). Pods with constraints
of their own never ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.meta import KubeObject, LabelSelector, LabelSelectorRequirement
from placement.pods.framework.interface import ClusterView, PodInfo
from placement.selectors import selector_error

__all__ = ["SELECTING_KINDS", "DefaultSelectors", "default_selector"]

SELECTING_KINDS = frozenset({"Service", "ReplicationController", "ReplicaSet", "StatefulSet"})
"""The kinds whose objects give the default selector (what the scheduler must watch)."""

_CONTROLLERS = {
    ("v1", "ReplicationController"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
}
_ENTRIES = 4096
"""Answers kept (cleared when more are asked for: a StatefulSet's pods each have their own
labels)."""

_ABSENT = object()
Owner = tuple[str, str, str] | None  # (apiVersion, kind, name) of a supported controller


def _wire(obj: object) -> Mapping[str, Any]:
    to_wire = getattr(obj, "to_wire", None)
    wire = to_wire() if callable(to_wire) else {}
    return wire if isinstance(wire, Mapping) else {}


def _spec_selector(obj: object) -> Any:
    return (_wire(obj).get("spec") or {}).get("selector")


def _owner(pod: PodInfo) -> Owner:
    ref = next((o for o in pod.pod.metadata.owner_references or () if o.controller), None)
    if ref is None or (ref.api_version, ref.kind) not in _CONTROLLERS:
        return None
    return (ref.api_version, ref.kind, ref.name)


def _label_map(raw: Any) -> dict[str, str] | None:
    if not isinstance(raw, Mapping):
        return None
    return {str(k): str(v) for k, v in raw.items()}


def _services(cluster: ClusterView) -> dict[str, list[dict[str, str]]]:
    """The selectors of the known Services, per namespace (Services without one left out)."""
    found: dict[str, list[dict[str, str]]] = {}
    for key, service in sorted(cluster.objects("Service").items()):
        chosen = _label_map(_spec_selector(service))
        if chosen is not None:
            found.setdefault(key.partition("/")[0], []).append(chosen)
    return found


def _derive(
    pod: PodInfo,
    owner: Owner,
    services: Mapping[str, list[dict[str, str]]],
    cluster: ClusterView,
) -> LabelSelector | None:
    labels: dict[str, str] = {}
    for chosen in services.get(pod.namespace, ()):
        if all(pod.labels.get(k) == v for k, v in chosen.items()):
            labels.update(chosen)
    expressions: list[LabelSelectorRequirement] = []
    if owner is not None:
        _, kind, name = owner
        known = cluster.objects(kind).get(f"{pod.namespace}/{name}")
        raw = None if known is None else _spec_selector(known)
        if kind == "ReplicationController":
            labels.update(_label_map(raw) or {})
        elif raw is not None:
            try:
                other = LabelSelector.model_validate(raw)
            except ValueError:
                other = None
            if other is not None and selector_error(other) is None:
                expressions.extend(
                    LabelSelectorRequirement(key=k, operator="In", values=[v])
                    for k, v in (other.match_labels or {}).items()
                )
                expressions.extend(other.match_expressions or ())
    if not labels and not expressions:
        return None
    return LabelSelector(match_labels=labels or None, match_expressions=expressions or None)


def default_selector(pod: PodInfo, cluster: ClusterView) -> LabelSelector | None:
    """kube's DefaultSelector over the objects the engine knows (module docstring); None when
    it has no requirement. Uncached: `DefaultSelectors.of` is the cached form."""
    return _derive(pod, _owner(pod), _services(cluster), cluster)


class DefaultSelectors:
    """`default_selector`, remembered (module docstring)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, frozenset[tuple[str, str]], Owner], LabelSelector | None]
        self._known = {}
        self._services: dict[str, list[dict[str, str]]] | None = None
        self._selectors: dict[tuple[str, str, str], Any] = {}  # (kind, ns, name) -> selector

    def forget(self) -> None:
        """Derive every selector again."""
        self._known.clear()
        self._services = None

    def changed(self, obj: KubeObject, deleted: bool) -> None:
        """A watch event of a selecting object: forget when its selector came, went or
        changed."""
        ident = (obj.KIND or obj.kind or "", obj.namespace or "", obj.name or "")
        if deleted:
            if self._selectors.pop(ident, _ABSENT) is not _ABSENT:
                self.forget()
            return
        selector = _spec_selector(obj)
        if self._selectors.get(ident, _ABSENT) != selector:
            self._selectors[ident] = selector
            self.forget()

    def of(self, pod: PodInfo, cluster: ClusterView) -> LabelSelector | None:
        owner = _owner(pod)
        key = (pod.namespace, frozenset(pod.labels.items()), owner)
        if key in self._known:
            return self._known[key]
        if self._services is None:
            self._services = _services(cluster)
        if len(self._known) >= _ENTRIES:
            self._known.clear()
        found = self._known[key] = _derive(pod, owner, self._services, cluster)
        return found
