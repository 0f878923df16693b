"""Workload expansion for the simulator: the pods Kubernetes' controllers would create.

`placement scheduler simulate` reads Deployments, ReplicaSets, StatefulSets, Jobs and
ReplicationControllers as a user writes them, but the scheduler only ever sees pods. This module
plays the part of the Deployment, ReplicaSet (and ReplicationController), StatefulSet and Job
controllers at their first sync, so the pods look as
they would on a cluster: names (`<deploy>-<template hash>-<5 chars>`, `<statefulset>-<ordinal>`,
`<job>-<5 chars>`), a StatefulSet's claims from its volumeClaimTemplates
(`<template>-<set>-<ordinal>`), the labels those controllers add, owner references with
`controller: true`, the namespace, the creation time.

Everything is derived from the input, never drawn at random: the uids are name-based UUIDs and
the 5-character suffixes a hash of the owner and the pod's index, in kube's alphabet (no vowels,
no 0/1/3), so the same manifests always give the same pods and the simulation can be replayed.
Works on the objects' wire form, so it needs no more of the workload models than their kinds.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from apis.core import Pod
from apis.errors import UnknownKindError
from apis.meta import KubeObject, format_time
from apis.registry import parse_object

__all__ = [
    "CONTROLLER_REVISION_HASH_LABEL",
    "JOB_COMPLETION_INDEX",
    "JOB_CONTROLLER_UID_LABEL",
    "JOB_NAME_LABEL",
    "POD_TEMPLATE_HASH_LABEL",
    "STATEFULSET_POD_INDEX_LABEL",
    "STATEFULSET_POD_NAME_LABEL",
    "WORKLOAD_KINDS",
    "Expansion",
    "expand",
    "object_uid",
    "safe_encode",
    "template_hash",
]

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
STATEFULSET_POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
STATEFULSET_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
JOB_CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
_LEGACY_JOB_LABELS = ("job-name", "controller-uid")

WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "ReplicationController")

# kube's SafeEncodeString / generateName alphabet: no vowels (no words), no 0, 1, 3.
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIX_LENGTH = 5
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
# The namespace of the simulator's name-based uids (any fixed UUID will do; this one is ours).
_UID_NAMESPACE = uuid.UUID("6b0c2f4e-5d1a-4c39-9a57-0c3e9f1d2a64")


Recreate = Callable[[Pod, int, datetime], Pod]
"""(a pod of the workload that is gone, how many replacements came before, now) -> the pod
its controller creates in its place."""


def _no_replacement(pod: Pod, serial: int, now: datetime) -> Pod:
    raise ValueError(f"{pod.metadata.name}: no controller recreates it")


@dataclass(frozen=True)
class Expansion:
    """What a workload becomes: the intermediate objects (a Deployment's ReplicaSet) and the
    pods, in creation order. `ordered`: a StatefulSet with the OrderedReady policy, whose
    controller creates pod N+1 only once pod N runs. `recreate` makes the pod the workload's
    controller creates when one of its pods is deleted (a preemption victim comes back
    pending, as on a cluster)."""

    objects: tuple[KubeObject, ...]
    pods: tuple[Pod, ...]
    ordered: bool = False
    recreate: Recreate = field(default=_no_replacement)


class _ReplicaSet(KubeObject):
    """A ReplicaSet kept as it came, for when the API models do not type apps/v1."""

    GROUP: ClassVar[str] = "apps"
    KIND: ClassVar[str] = "ReplicaSet"
    PLURAL: ClassVar[str] = "replicasets"


def _replica_set_object(wire: dict[str, Any]) -> KubeObject:
    try:
        return parse_object(wire)
    except UnknownKindError:
        return _ReplicaSet.model_validate(wire)


def _fnv32a(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """Each character mapped into kube's alphabet, as its SafeEncodeString does."""
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in text)


def template_hash(template: Any) -> str:
    """A pod template's hash in the spirit of kube's pod-template-hash: FNV-32a of the
    template (here its canonical JSON; kube hashes its Go dump, so the values differ), printed
    in decimal and safe-encoded."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    return safe_encode(str(_fnv32a(data)))


def object_uid(kind: str, namespace: str, name: str) -> str:
    """A name-based uid: the same object always gets the same one."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))


def _suffix(owner_uid: str, index: int, taken: set[str]) -> str:
    """A 5-character generateName suffix derived from the owner and the pod's index."""
    attempt = 0
    while True:
        value = _fnv32a(f"{owner_uid}/{index}/{attempt}".encode())
        chars = []
        for _ in range(_SUFFIX_LENGTH):
            value, digit = divmod(value, len(_ALPHANUMS))
            chars.append(_ALPHANUMS[digit])
        suffix = "".join(chars)
        if suffix not in taken:
            taken.add(suffix)
            return suffix
        attempt += 1


def _owner(wire: dict[str, Any], uid: str) -> dict[str, Any]:
    return {
        "apiVersion": wire["apiVersion"],
        "kind": wire["kind"],
        "name": wire["metadata"]["name"],
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _uid_of(wire: dict[str, Any]) -> str:
    meta = wire["metadata"]
    return str(meta.get("uid") or object_uid(wire["kind"], meta.get("namespace", ""), meta["name"]))


def _pod(
    wire: dict[str, Any],
    owner_uid: str,
    name: str,
    now: datetime,
    labels: dict[str, str],
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    serial: int = 0,
) -> Pod:
    template = wire.get("spec", {}).get("template", {})
    meta = dict(template.get("metadata") or {})
    namespace = wire["metadata"].get("namespace") or "default"
    meta_labels = {**(meta.get("labels") or {}), **labels}
    meta_annotations = {**(meta.get("annotations") or {}), **(annotations or {})}
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": object_uid("Pod", namespace, f"{name}/{owner_uid}/{serial}"),
        "creationTimestamp": format_time(now),
        "labels": meta_labels,
        "ownerReferences": [_owner(wire, owner_uid)],
    }
    if meta_annotations:
        metadata["annotations"] = meta_annotations
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {**(template.get("spec") or {}), **(spec or {})},
        "status": {"phase": "Pending"},
    }
    return Pod.model_validate(doc)


def _replicas(wire: dict[str, Any]) -> int:
    value = wire.get("spec", {}).get("replicas")
    return 1 if value is None else int(value)


def _replica_set(wire: dict[str, Any], now: datetime, objects: tuple[KubeObject, ...]) -> Expansion:
    uid = _uid_of(wire)
    name = wire["metadata"]["name"]
    taken: set[str] = set()
    replicas = _replicas(wire)
    pods = tuple(
        _pod(wire, uid, f"{name}-{_suffix(uid, i, taken)}", now, {}) for i in range(replicas)
    )

    def recreate(gone: Pod, serial: int, at: datetime) -> Pod:
        return _pod(wire, uid, f"{name}-{_suffix(uid, replicas + serial, taken)}", at, {})

    return Expansion(objects, pods, recreate=recreate)


def _deployment(wire: dict[str, Any], now: datetime) -> Expansion:
    spec = wire.get("spec", {})
    template = spec.get("template", {})
    hashed = template_hash(template)
    name = f"{wire['metadata']['name']}-{hashed}"
    namespace = wire["metadata"].get("namespace") or "default"
    template_meta = dict(template.get("metadata") or {})
    labels = {**(template_meta.get("labels") or {}), POD_TEMPLATE_HASH_LABEL: hashed}
    selector = dict(spec.get("selector") or {})
    selector["matchLabels"] = {
        **(selector.get("matchLabels") or {}),
        POD_TEMPLATE_HASH_LABEL: hashed,
    }
    replicas = _replicas(wire)
    rs_wire: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": object_uid("ReplicaSet", namespace, name),
            "creationTimestamp": format_time(now),
            "labels": labels,
            "annotations": {
                "deployment.kubernetes.io/revision": "1",
                "deployment.kubernetes.io/desired-replicas": str(replicas),
            },
            "ownerReferences": [_owner(wire, _uid_of(wire))],
        },
        "spec": {
            "replicas": replicas,
            "selector": selector,
            "template": {**template, "metadata": {**template_meta, "labels": labels}},
        },
    }
    return _replica_set(rs_wire, now, (_replica_set_object(rs_wire),))


def _stateful_set(wire: dict[str, Any], now: datetime) -> Expansion:
    spec = wire.get("spec", {})
    name = wire["metadata"]["name"]
    uid = _uid_of(wire)
    revision = f"{name}-{template_hash(spec.get('template', {}))}"
    start = int((spec.get("ordinals") or {}).get("start") or 0)

    def member(ordinal: int, at: datetime, serial: int = 0) -> Pod:
        pod_name = f"{name}-{ordinal}"
        labels = {
            CONTROLLER_REVISION_HASH_LABEL: revision,
            STATEFULSET_POD_NAME_LABEL: pod_name,
            STATEFULSET_POD_INDEX_LABEL: str(ordinal),
        }
        pod_spec: dict[str, Any] = {"hostname": pod_name}
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        if templates:
            pod_spec["volumes"] = _claim_volumes(spec, name, ordinal)
        return _pod(wire, uid, pod_name, at, labels, spec=pod_spec, serial=serial)

    def recreate(gone: Pod, serial: int, at: datetime) -> Pod:
        # The same identity under a new uid: a StatefulSet's pods keep their names.
        ordinal = int((gone.metadata.labels or {})[STATEFULSET_POD_INDEX_LABEL])
        return member(ordinal, at, serial + 1)

    templates = spec.get("volumeClaimTemplates") or []
    ordinals = range(start, start + _replicas(wire))
    pods = tuple(member(ordinal, now) for ordinal in ordinals)
    ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
    claims = tuple(_claim(wire, t, o, now) for o in ordinals for t in templates)
    return Expansion(claims, pods, ordered=ordered, recreate=recreate)


def _claim_volumes(spec: dict[str, Any], name: str, ordinal: int) -> list[dict[str, Any]]:
    """The pod template's volumes with one per claim template, naming the member's claim
    `<template>-<set>-<ordinal>` (replacing a template volume of the same name)."""
    templates = spec.get("volumeClaimTemplates") or []
    names = {t.get("metadata", {}).get("name") for t in templates}
    volumes = [
        v
        for v in (spec.get("template", {}).get("spec") or {}).get("volumes") or []
        if v.get("name") not in names
    ]
    for t in templates:
        claim = f"{t['metadata']['name']}-{name}-{ordinal}"
        volumes.append(
            {"name": t["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim}}
        )
    return volumes


def _claim(
    wire: dict[str, Any], template: dict[str, Any], ordinal: int, now: datetime
) -> KubeObject:
    """The claim the StatefulSet controller creates for a member from a claim template:
    labelled with the template's labels and the set's selector labels."""
    set_meta = wire["metadata"]
    namespace = set_meta.get("namespace") or "default"
    meta = template.get("metadata") or {}
    name = f"{meta['name']}-{set_meta['name']}-{ordinal}"
    selector = (wire.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
    labels = {**(meta.get("labels") or {}), **selector}
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": object_uid("PersistentVolumeClaim", namespace, name),
        "creationTimestamp": format_time(now),
    }
    if labels:
        metadata["labels"] = labels
    if meta.get("annotations"):
        metadata["annotations"] = meta["annotations"]
    doc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": template.get("spec") or {},
    }
    return parse_object(doc)


def _job(wire: dict[str, Any], now: datetime) -> Expansion:
    spec = wire.get("spec", {})
    if spec.get("suspend"):
        return Expansion((), ())
    name = wire["metadata"]["name"]
    uid = _uid_of(wire)
    parallelism = spec.get("parallelism")
    count = 1 if parallelism is None else int(parallelism)
    if spec.get("completions") is not None:
        count = min(count, int(spec["completions"]))
    labels = {
        JOB_CONTROLLER_UID_LABEL: uid,
        JOB_NAME_LABEL: name,
        _LEGACY_JOB_LABELS[0]: name,
        _LEGACY_JOB_LABELS[1]: uid,
    }
    indexed = spec.get("completionMode") == "Indexed"
    taken: set[str] = set()

    def worker(index: int, serial: int, at: datetime) -> Pod:
        # `serial` picks the suffix: a replacement of index 2 gets a new name, as on a cluster.
        if not indexed:
            return _pod(wire, uid, f"{name}-{_suffix(uid, serial, taken)}", at, labels)
        extra = {JOB_COMPLETION_INDEX: str(index)}
        return _pod(
            wire,
            uid,
            f"{name}-{index}-{_suffix(uid, serial, taken)}",
            at,
            {**labels, **extra},
            extra,
            {"hostname": f"{name}-{index}"},
        )

    def recreate(gone: Pod, serial: int, at: datetime) -> Pod:
        index = int((gone.metadata.annotations or {}).get(JOB_COMPLETION_INDEX, "0"))
        return worker(index, count + serial, at)

    pods = tuple(worker(index, index, now) for index in range(count))
    return Expansion((), pods, recreate=recreate)


def expand(workload: KubeObject, now: datetime) -> Expansion:
    """The objects and pods a workload's controllers create at their first sync, created at
    `now`. Raises ValueError for a kind that is not a workload (see WORKLOAD_KINDS)."""
    wire = workload.to_wire()
    wire["metadata"].setdefault("namespace", "default")
    kind = workload.KIND
    if kind == "Deployment":
        return _deployment(wire, now)
    if kind in ("ReplicaSet", "ReplicationController"):
        return _replica_set(wire, now, ())
    if kind == "StatefulSet":
        return _stateful_set(wire, now)
    if kind == "Job":
        return _job(wire, now)
    raise ValueError(f"{kind}: not a workload ({', '.join(WORKLOAD_KINDS)})")
