"""The part of kube-controller-manager's resourceclaim controller the embedded server plays
(pkg/controller/resourceclaim in kube v1.36), so that pods using ResourceClaimTemplates can be
scheduled against it as against a real control plane.

For a pod (not being deleted):

* each `spec.resourceClaims` entry naming a template gets its claim: one found already (owned
  by the pod as its controller, with the entry's name in the `resource.kubernetes.io/pod-claim-name`
  annotation), else one created from the template: generateName `<pod>-<entry>-` (both cut
  proportionally when longer than 57 characters), the template's labels and annotations plus
  that annotation, the pod as controlling owner (blockOwnerDeletion), the template's spec. A
  missing template creates nothing (kube reports `FailedResourceClaimCreation` and retries; here
  the template's arrival retries). The pod's `status.resourceClaimStatuses` then names each
  claim made, merged by entry name;
* a bound pod (`spec.nodeName` set without the scheduler, say) is added to the `reservedFor` of
  each of its claims that is allocated and not reserved for it, while a claim has room (256).

For a claim:

* `reservedFor` entries of pods that are gone, replaced (another uid) or done (Succeeded or
  Failed, or deleted before being bound) are removed (an entry naming a pod the server never
  held, written by hand, is left alone). When that empties the list and the claim
  carries the `resource.kubernetes.io/delete-protection` finalizer (the scheduler allocated it),
  its `status.allocation` is cleared in the same status write, and the finalizer removed in the
  next update: the devices are free again;
* a claim being deleted, reserved by nobody, loses its allocation and that finalizer, so that
  it can go;
* a claim made for a pod (its controlling owner) reserved by nobody is deleted once that pod
  is replaced or done. A pod deleted outright takes its claims with it through the server's
  garbage collection (`controllers.embedded.store`), each then released as above.

Like `controllers.embedded.volumes`, this runs on the server's loop: the store's listener only
schedules the work (`call_soon`), as the store asks of its listeners, and every write is made
from the object as stored at that moment.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from apis.resource import POD_CLAIM_NAME_ANNOTATION, RESOURCE_GROUP
from controllers.embedded.history import StoredEvent
from controllers.embedded.patch import copy_json
from controllers.embedded.resources import Resource
from controllers.embedded.status import StatusError
from controllers.embedded.store import Store

__all__ = ["DELETE_PROTECTION", "RESERVED_FOR_MAX", "ResourceClaims"]

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
RESERVED_FOR_MAX = 256
"""kube's ResourceClaimReservedForMaxSize: a claim is shared by at most that many consumers."""
_GENERATE_BASE_MAX = 57  # 63 characters less the hyphen and the five random ones

Doc = dict[str, Any]


def _meta(obj: Doc) -> Doc:
    meta: Doc = obj["metadata"]
    return meta


def _owning_pod(claim: Doc) -> tuple[str, str] | None:
    """The (name, uid) of the pod controlling the claim, None when no pod does."""
    for ref in _meta(claim).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod":
            return str(ref.get("name", "")), str(ref.get("uid", ""))
    return None


def _pod_done(pod: Doc) -> bool:
    """Whether none of the pod's containers runs or ever will (kube's isPodDone)."""
    phase = (pod.get("status") or {}).get("phase")
    unbound = not (pod.get("spec") or {}).get("nodeName")
    return phase in ("Succeeded", "Failed") or (
        bool(_meta(pod).get("deletionTimestamp")) and unbound
    )


def generate_name(pod: str, entry: str) -> str:
    """The claim's generateName, `<pod>-<entry>-`, both parts cut in proportion when the
    whole is longer than kube allows for a name base."""
    base = f"{pod}-{entry}-"
    if len(base) <= _GENERATE_BASE_MAX:
        return base

    def cut(part: str) -> str:
        return part[: len(part) * _GENERATE_BASE_MAX // len(base)]

    return f"{cut(pod)}-{cut(entry)}"  # no trailing hyphen then, as kube's


class ResourceClaims:
    """See the module docstring."""

    def __init__(self, store: Store) -> None:
        self.store = store
        by_key = {res.key: res for res in store.resources}
        self._pods: Resource | None = by_key.get(("", "pods"))
        self._claims: Resource | None = by_key.get((RESOURCE_GROUP, "resourceclaims"))
        self._templates: Resource | None = by_key.get((RESOURCE_GROUP, "resourceclaimtemplates"))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._seen: set[str] = set()  # uids of the pods with claims this server has held

    def attach(self) -> None:
        if self._loop is not None or None in (self._pods, self._claims, self._templates):
            return
        self._loop = asyncio.get_running_loop()
        self.store.listeners.append(self._on_event)
        self.sync()

    def close(self) -> None:
        if self._on_event in self.store.listeners:
            self.store.listeners.remove(self._on_event)
        self._loop = None

    def _on_event(self, event: StoredEvent) -> None:
        loop = self._loop
        if loop is None:
            return
        meta = _meta(event.obj)
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        if event.resource is self._pods:
            if (event.obj.get("spec") or {}).get("resourceClaims"):  # other pods: nothing
                self._seen.add(str(meta.get("uid", "")))
                loop.call_soon(self._pod_changed, namespace, name, event.obj)
        elif event.resource is self._claims:
            if event.type != "DELETED":
                loop.call_soon(self.sync_claim, namespace, name)
        elif event.resource is self._templates and event.type != "DELETED":
            loop.call_soon(self._template_changed, namespace, name)

    # --- what to look at -----------------------------------------------------------------

    def sync(self) -> None:
        """Every pod with claims, then every claim."""
        assert self._pods is not None and self._claims is not None
        for pod in list(self.store.list(self._pods, "", None)):
            if (pod.get("spec") or {}).get("resourceClaims"):
                self._seen.add(str(_meta(pod).get("uid", "")))
                self.sync_pod(_meta(pod)["namespace"], _meta(pod)["name"])
        for claim in list(self.store.list(self._claims, "", None)):
            self.sync_claim(_meta(claim)["namespace"], _meta(claim)["name"])

    def _pod_changed(self, namespace: str, name: str, seen: Doc) -> None:
        self.sync_pod(namespace, name)
        # The claims it uses may have to let it go (it finished, or it is gone).
        for claim in self._claim_names(self._get(self._pods, namespace, name) or seen):
            self.sync_claim(namespace, claim)

    def _template_changed(self, namespace: str, name: str) -> None:
        assert self._pods is not None
        for pod in list(self.store.list(self._pods, namespace, None)):
            entries = (pod.get("spec") or {}).get("resourceClaims") or ()
            if any(e.get("resourceClaimTemplateName") == name for e in entries):
                self.sync_pod(namespace, _meta(pod)["name"])

    def _get(self, res: Resource | None, namespace: str, name: str) -> Doc | None:
        assert res is not None
        try:
            return self.store.get(res, namespace, name)
        except StatusError:
            return None

    @staticmethod
    def _claim_names(pod: Doc) -> list[str]:
        """The names of the claims the pod uses: named ones, and those made for its templates."""
        made = {
            s.get("name"): s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        }
        names = []
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            name = entry.get("resourceClaimName") or made.get(entry.get("name"))
            if name:
                names.append(str(name))
        return names

    # --- pods ------------------------------------------------------------------------------

    def sync_pod(self, namespace: str, name: str) -> None:
        pod = self._get(self._pods, namespace, name)
        if pod is None or _meta(pod).get("deletionTimestamp"):
            return
        made: dict[str, str] = {}
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            claim = self._claim_for(pod, entry)
            if claim is not None:
                made[entry["name"]] = claim
        if made:
            self._write_statuses(namespace, name, made)
        pod = self._get(self._pods, namespace, name)
        if pod is None or not (pod.get("spec") or {}).get("nodeName"):
            return  # the scheduler reserves the claims of the pods it binds
        for claim_name in self._claim_names(pod):
            self._reserve(pod, namespace, claim_name)

    def _claim_for(self, pod: Doc, entry: Doc) -> str | None:
        """The name of the claim made for a template entry just now (None when there is
        nothing to record: not a template entry, recorded already, or no template)."""
        template_name = entry.get("resourceClaimTemplateName")
        if not template_name:
            return None
        meta = _meta(pod)
        namespace, uid = meta["namespace"], meta["uid"]
        statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        recorded = next((s for s in statuses if s.get("name") == entry["name"]), None)
        if recorded is not None and recorded.get("resourceClaimName"):
            claim = self._get(self._claims, namespace, recorded["resourceClaimName"])
            if claim is not None and _owning_pod(claim) == (meta["name"], uid):
                return None  # made and recorded
        assert self._claims is not None
        for claim in self.store.list(self._claims, namespace, None):
            owner = _owning_pod(claim)
            marked = (_meta(claim).get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION)
            if owner is not None and owner[1] == uid and marked == entry["name"]:
                return str(_meta(claim)["name"])  # made before, not recorded (kube: orphaned)
        template = self._get(self._templates, namespace, template_name)
        if template is None:
            return None  # created once the template exists
        spec = template.get("spec") or {}
        template_meta = spec.get("metadata") or {}
        annotations = {**(template_meta.get("annotations") or {})}
        annotations[POD_CLAIM_NAME_ANNOTATION] = entry["name"]
        owner_ref = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": uid}
        owner_ref |= {"controller": True, "blockOwnerDeletion": True}
        claim_meta: Doc = {
            "generateName": generate_name(meta["name"], entry["name"]),
            "namespace": namespace,
            "ownerReferences": [owner_ref],
            "annotations": annotations,
        }
        if template_meta.get("labels"):
            claim_meta["labels"] = dict(template_meta["labels"])
        doc = {"metadata": claim_meta, "spec": copy_json(spec.get("spec") or {})}
        try:
            created = self.store.create(self._claims, doc, namespace)
        except StatusError:
            return None  # refused (the namespace is going away): the next change retries
        return str(_meta(created)["name"])

    def _write_statuses(self, namespace: str, name: str, made: dict[str, str]) -> None:
        """Merge the claims made into the pod's `status.resourceClaimStatuses` (by entry name,
        as kube's apply of that list does)."""
        assert self._pods is not None
        pod = self._get(self._pods, namespace, name)
        if pod is None:
            return
        status = dict(pod.get("status") or {})
        statuses = [
            s for s in status.get("resourceClaimStatuses") or () if s.get("name") not in made
        ]
        statuses += [{"name": entry, "resourceClaimName": claim} for entry, claim in made.items()]
        status["resourceClaimStatuses"] = sorted(statuses, key=lambda s: str(s.get("name")))
        new = copy_json(pod)
        new["status"] = status
        new["metadata"].pop("resourceVersion", None)
        with contextlib.suppress(StatusError):  # changed or gone meanwhile: the next sync sees it
            self.store.update(self._pods, namespace, name, new, status=True)

    def _reserve(self, pod: Doc, namespace: str, claim_name: str) -> None:
        """Add a bound pod to its allocated claim's consumers (kube's reserveForPod)."""
        claim = self._get(self._claims, namespace, claim_name)
        status = (claim or {}).get("status") or {}
        reserved = status.get("reservedFor") or []
        uid = _meta(pod)["uid"]
        if claim is None or not status.get("allocation") or len(reserved) >= RESERVED_FOR_MAX:
            return
        if any(r.get("uid") == uid for r in reserved):
            return
        owner = _owning_pod(claim)
        if owner is not None and owner[1] != uid:
            return  # made for another pod
        entry = {"resource": "pods", "name": _meta(pod)["name"], "uid": uid}
        self._write_status(claim, {**status, "reservedFor": [*reserved, entry]})

    # --- claims ----------------------------------------------------------------------------

    def sync_claim(self, namespace: str, name: str) -> None:
        claim = self._get(self._claims, namespace, name)
        if claim is None:
            return
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        valid = [r for r in reserved if self._still_consumer(namespace, r)]
        protected = DELETE_PROTECTION in (_meta(claim).get("finalizers") or ())
        deleting = bool(_meta(claim).get("deletionTimestamp"))
        if len(valid) < len(reserved):
            new_status = {**status, "reservedFor": valid}
            if not valid:
                new_status.pop("reservedFor")
                if protected:  # the scheduler allocated it: the devices are free again
                    new_status.pop("allocation", None)
            claim = self._write_status(claim, new_status)
            if (
                claim is not None
                and protected
                and not (claim.get("status") or {}).get("allocation")
            ):
                claim = self._drop_finalizer(claim)
        elif protected and deleting and not valid:
            if status.get("allocation"):
                new_status = {k: v for k, v in status.items() if k != "allocation"}
                claim = self._write_status(claim, new_status)
            if claim is not None:
                claim = self._drop_finalizer(claim)
        if claim is not None and not valid:
            self._delete_if_unneeded(claim)

    def _still_consumer(self, namespace: str, ref: Doc) -> bool:
        if ref.get("apiGroup") or ref.get("resource") != "pods":
            return True  # not a pod: kube keeps what it cannot look up
        pod = self._get(self._pods, namespace, str(ref.get("name", "")))
        if pod is None:
            # Kube double-checks a pod it never saw with the API server; here the store is the
            # API server, and a pod it never held is one nobody created: such an entry, written
            # by hand, is left alone.
            return str(ref.get("uid", "")) not in self._seen
        return _meta(pod).get("uid") == ref.get("uid") and not _pod_done(pod)

    def _delete_if_unneeded(self, claim: Doc) -> None:
        """Delete a claim made for a pod that is replaced or will not run any more."""
        owner = _owning_pod(claim)
        if owner is None or _meta(claim).get("deletionTimestamp"):
            return
        meta = _meta(claim)
        pod = self._get(self._pods, meta["namespace"], owner[0])
        if pod is None:
            return  # the garbage collector's business
        if _meta(pod).get("uid") != owner[1] or _pod_done(pod):
            assert self._claims is not None
            with contextlib.suppress(StatusError):
                self.store.delete(self._claims, meta["namespace"], meta["name"])

    def _write_status(self, claim: Doc, status: Doc) -> Doc | None:
        """Store the claim's new status; the claim as stored, None when it changed meanwhile."""
        assert self._claims is not None
        new = copy_json(claim)
        if status:
            new["status"] = status
        else:
            new.pop("status", None)
        meta = _meta(claim)
        try:
            return self.store.update(
                self._claims, meta["namespace"], meta["name"], new, status=True
            )
        except StatusError:
            return None

    def _drop_finalizer(self, claim: Doc) -> Doc | None:
        assert self._claims is not None
        meta = _meta(claim)
        finalizers = [f for f in meta.get("finalizers") or () if f != DELETE_PROTECTION]
        new = copy_json(claim)
        if finalizers:
            new["metadata"]["finalizers"] = finalizers
        else:
            new["metadata"].pop("finalizers", None)
        try:
            return self.store.update(self._claims, meta["namespace"], meta["name"], new)
        except StatusError:
            return None
