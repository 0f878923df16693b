"""The parts of kube-controller-manager's volume controllers the embedded server plays: the PV
controller's phases of PersistentVolumes and PersistentVolumeClaims, and the ephemeral volume
controller's claims.

A volume is `Available` until its `claimRef` names a claim, a claim `Pending` until its
`volumeName` names a volume. A volume pre-bound to an unbound claim (a scheduler's PreBind
writes the volume's `claimRef`, as kube-scheduler does) gets that claim's side completed: its
`volumeName`, and the `pv.kubernetes.io/bind-completed` and `bound-by-controller` annotations;
a claim and volume naming each other get `bind-completed` when they lack it. Once both name
each other they are `Bound`, and the claim's status shows the volume's access modes and
capacity. A volume whose claim is gone is `Released`. Nothing is provisioned: dynamic
provisioning is not played. A new pod with generic ephemeral volumes gets their claims
(`<pod>-<volume>`, owned by the pod, the default class when they name none), as the ephemeral
volume controller makes them.

Runs on the server's loop: the store's listener only schedules the writes (`call_soon`), as
the store asks of its listeners.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from apis.core import Pod
from apis.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    StorageClass,
)
from controllers.embedded.history import StoredEvent
from controllers.embedded.patch import copy_json
from controllers.embedded.resources import Resource
from controllers.embedded.status import StatusError
from controllers.embedded.store import Store
from placement.pods.cluster.volumes import ephemeral_claims

__all__ = ["VolumePhases"]


class VolumePhases:
    """See the module docstring."""

    def __init__(self, store: Store) -> None:
        self.store = store
        by_key = {res.key: res for res in store.resources}
        self._volumes: Resource | None = by_key.get(("", "persistentvolumes"))
        self._claims: Resource | None = by_key.get(("", "persistentvolumeclaims"))
        self._pods: Resource | None = by_key.get(("", "pods"))
        self._classes: Resource | None = by_key.get(("storage.k8s.io", "storageclasses"))
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self) -> None:
        if self._loop is not None or self._volumes is None or self._claims is None:
            return
        self._loop = asyncio.get_running_loop()
        self.store.listeners.append(self._on_event)
        self.sync()

    def close(self) -> None:
        if self._on_event in self.store.listeners:
            self.store.listeners.remove(self._on_event)
        self._loop = None

    def _on_event(self, event: StoredEvent) -> None:
        if self._loop is None:
            return
        if event.resource in (self._volumes, self._claims):
            self._loop.call_soon(self.sync)
        elif event.resource is self._pods and event.type == "ADDED":
            self._loop.call_soon(self._ephemeral, event.obj)

    def _ephemeral(self, pod: dict[str, Any]) -> None:
        """Create the claims of the pod's generic ephemeral volumes that do not exist yet."""
        if self._claims is None or not any(
            "ephemeral" in v for v in (pod.get("spec") or {}).get("volumes") or ()
        ):
            return
        classes = []
        if self._classes is not None:
            classes = [
                StorageClass.model_validate(c) for c in self.store.list(self._classes, "", None)
            ]
        for claim in ephemeral_claims(Pod.model_validate(pod), classes):
            with contextlib.suppress(StatusError):  # exists already, or the namespace is gone
                self.store.create(self._claims, claim.to_wire(), claim.namespace or "")

    def sync(self) -> None:
        """Write the phase each volume and claim should show (no write when it shows it)."""
        volumes, claims = self._volumes, self._claims
        if volumes is None or claims is None:
            return
        by_claim = {
            (c["metadata"].get("namespace", ""), c["metadata"]["name"]): c
            for c in self.store.list(claims, "", None)
        }
        for pv in list(self.store.list(volumes, "", None)):
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            claim = by_claim.get((ref.get("namespace", ""), ref.get("name", ""))) if ref else None
            if claim is not None and ref.get("uid") not in (None, "", claim["metadata"]["uid"]):
                claim = None  # the claim it names was replaced
            if claim is not None:
                self._complete(claims, claim, pv["metadata"]["name"])
            if not ref:
                self._phase(volumes, pv, "Available")
            elif claim is None:
                self._phase(volumes, pv, "Released")
            elif (claim.get("spec") or {}).get("volumeName") == pv["metadata"]["name"]:
                self._phase(volumes, pv, "Bound")
        volume_names = {v["metadata"]["name"]: v for v in self.store.list(volumes, "", None)}
        for claim in by_claim.values():
            name = (claim.get("spec") or {}).get("volumeName")
            bound_to = volume_names.get(name) if name else None
            ref = ((bound_to or {}).get("spec") or {}).get("claimRef") or {}
            mine = ref.get("name") == claim["metadata"]["name"] and ref.get("namespace") == (
                claim["metadata"].get("namespace")
            )
            if bound_to is not None and mine:
                spec = bound_to.get("spec") or {}
                extra = {k: spec[k] for k in ("accessModes", "capacity") if k in spec}
                self._phase(claims, claim, "Bound", extra)
            elif not name:
                self._phase(claims, claim, "Pending")

    def _complete(self, res: Resource, claim: dict[str, Any], volume: str) -> None:
        """The PV controller's side of a binding: an unbound claim of a pre-bound volume
        takes its name; a claim bound to it is marked bind-completed."""
        spec = claim.get("spec") or {}
        annotations = claim["metadata"].get("annotations") or {}
        named = spec.get("volumeName")
        if named not in (None, "", volume) or BIND_COMPLETED_ANNOTATION in annotations:
            return
        new = copy_json(claim)
        new["metadata"].pop("resourceVersion", None)
        marks = new["metadata"].setdefault("annotations", {})
        marks[BIND_COMPLETED_ANNOTATION] = "yes"
        if not named:
            new.setdefault("spec", {})["volumeName"] = volume
            marks[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
        meta = claim["metadata"]
        with contextlib.suppress(StatusError):  # changed or gone meanwhile: the next sync sees it
            self.store.update(res, meta.get("namespace", ""), meta["name"], new)

    def _phase(
        self, res: Resource, obj: dict[str, Any], phase: str, extra: dict[str, Any] | None = None
    ) -> None:
        status = dict(obj.get("status") or {})
        wanted = {**status, "phase": phase, **(extra or {})}
        if wanted == status:
            return
        new = copy_json(obj)
        new["status"] = wanted
        new["metadata"].pop("resourceVersion", None)
        meta = obj["metadata"]
        with contextlib.suppress(StatusError):  # changed or gone meanwhile: the next sync sees it
            self.store.update(res, meta.get("namespace", ""), meta["name"], new, status=True)
