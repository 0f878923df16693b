"""PreBind's volume writes on a cluster (`BindVolumes`), as kube-scheduler's VolumeBinding plugin
makes them (kube 1.36):

* for each claim, the chosen volume is pre-bound: one write of the PersistentVolume giving it
  `spec.claimRef` (the claim's kind, namespace, name, uid and, when cached, resourceVersion)
  and the annotation `pv.kubernetes.io/bound-by-controller: "yes"`, with the volume's
  resourceVersion as a precondition (a volume claimed meanwhile is a conflict, never
  overwritten). The claim is not written: kube-controller-manager's PV controller sees a
  volume pre-bound to an unbound claim and completes the binding (the claim's `volumeName`,
  its `pv.kubernetes.io/bind-completed` and `bound-by-controller` annotations, both phases
  `Bound`), as it does for kube-scheduler;
* then the pod's binding waits until each claim is fully bound — `volumeName` naming the volume
  and `bind-completed` set — read from the informers every `poll` seconds (as kube's
  `checkBindings` reads its informers' latest objects), up to the plugin's `bindTimeoutSeconds`
  (600 s by default). It fails, and the pod goes back to the queue, when the volume's
  claimRef is reset, the claim is bound to another volume, the pod is gone, or the time is up.

* for each claim to provision, the claim gets `volume.kubernetes.io/selected-node: <node>`
  (one write, the informer's resourceVersion as a precondition, as kube's update of its
  assumed claim); the PV controller hands it to its provisioner, which creates a volume for
  the node and the PV controller binds the two. The wait ends when the claim is fully bound
  (as above) to a volume whose node affinity admits the node; it fails when the annotation was
  removed or changed (a provisioner that gives up removes it: `provisioning failed for PVC`),
  when the bound volume does not admit the node, or when the time is up. Nothing is undone on
  failure, as in kube: the claim keeps its selected node and the pod is retried there.

The waiting holds no write slot: other pods bind meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from apis.core import Node, NodeSelector, Pod
from apis.meta import KubeObject, LabelSelector, LabelSelectorRequirement
from apis.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
    PersistentVolume,
    PersistentVolumeClaim,
)
from controllers.addons.gateway import PodGateway
from controllers.kube.errors import ApiError
from placement.pods.framework.events import BindVolumes
from placement.selectors import SelectorError, labels_match

__all__ = ["VolumeBindError", "VolumeBinder"]

Lookup = Callable[[str, str], KubeObject | None]


class VolumeBindError(Exception):
    """A volume cannot be pre-bound to its claim (claimed by another)."""


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


def _older(cached: str | None, written: str | None) -> bool:
    """Whether the cached resourceVersion predates the one written (etcd's are integers)."""
    try:
        return int(cached or "0") < int(written or "0")
    except ValueError:
        return False


class VolumeBinder:
    """The writes and the wait of one scheduler (module docstring)."""

    def __init__(self, gateway: PodGateway, lookup: Lookup, *, poll: float = 0.2) -> None:
        self._gateway = gateway
        self._lookup = lookup
        self.poll = poll

    async def prebind(self, action: BindVolumes) -> dict[str, str]:
        """Pre-bind each volume to its claim; the resourceVersions written, by volume. Raises
        `ApiError` (a write refused) or `VolumeBindError`."""
        written: dict[str, str] = {}
        for claim_key, claim_uid, volume in action.claims:
            namespace, name = _split(claim_key)
            if not claim_uid:
                claim = self._claim(claim_key)
                claim_uid = claim.metadata.uid or ""
            # The informer's volume, as kube's assume cache: its resourceVersion is the write's
            # precondition, so a stale copy is a conflict (the pod is tried again), never a
            # lost write.
            pv = self._lookup(PersistentVolume.KIND, volume)
            if not isinstance(pv, PersistentVolume):
                raise VolumeBindError(f'persistentvolume "{volume}" not found')
            ref = pv.spec.claim_ref if pv.spec else None
            mine = ref is not None and (ref.namespace, ref.name) == (namespace, name)
            if mine and ref is not None and ref.uid in (None, "", claim_uid):
                written[volume] = pv.metadata.resource_version or ""
                continue  # pre-bound already (a retry after a failed wait)
            if ref is not None and (ref.name or ref.uid):
                raise VolumeBindError(f'persistentvolume "{volume}" is bound to another claim')
            claim_ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim"}
            claim_ref |= {"namespace": namespace, "name": name, "uid": claim_uid}
            known = self._lookup(PersistentVolumeClaim.KIND, claim_key)
            if known is not None and known.metadata.uid == claim_uid:
                claim_ref["resourceVersion"] = known.metadata.resource_version or ""
            patch = {
                "metadata": {
                    "resourceVersion": pv.metadata.resource_version,
                    "annotations": {BOUND_BY_CONTROLLER_ANNOTATION: "yes"},
                },
                "spec": {"claimRef": claim_ref},
            }
            updated = await self._gateway.merge_patch(PersistentVolume, volume, patch)
            written[volume] = updated.metadata.resource_version or ""
        for claim_key, claim_uid in action.provisions:
            written[claim_key] = await self._select_node(claim_key, claim_uid, action.node)
        return written

    async def _select_node(self, key: str, uid: str, node: str) -> str:
        """Write the node on the claim to provision; the claim's resourceVersion after."""
        claim = self._claim(key)
        if uid and claim.metadata.uid != uid:
            raise VolumeBindError(f'persistentvolumeclaim "{key}" was replaced')
        annotations = claim.metadata.annotations or {}
        if annotations.get(SELECTED_NODE_ANNOTATION) == node:
            return claim.metadata.resource_version or ""  # written already (a retry)
        patch = {
            "metadata": {
                "resourceVersion": claim.metadata.resource_version,
                "annotations": {SELECTED_NODE_ANNOTATION: node},
            }
        }
        namespace, name = _split(key)
        updated = await self._gateway.merge_patch(PersistentVolumeClaim, name, patch, namespace)
        return updated.metadata.resource_version or ""

    def _claim(self, key: str) -> PersistentVolumeClaim:
        """The claim as the informer holds it (kube's `checkBindings` reads its informers)."""
        cached = self._lookup(PersistentVolumeClaim.KIND, key)
        if not isinstance(cached, PersistentVolumeClaim):
            raise VolumeBindError(f'persistentvolumeclaim "{key}" not found')
        return cached

    async def wait_bound(self, action: BindVolumes, written: dict[str, str]) -> str | None:
        """Wait until the PV controller has bound every claim; None then, else why not."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, action.timeout)
        while True:
            try:
                problem, done = await self._check(action, written)
            except (ApiError, VolumeBindError) as exc:
                problem, done = str(exc), False
            if problem is not None:
                return f"binding volumes: {problem}"
            if done:
                return None
            if loop.time() >= deadline:
                # kube's words: its wait's context ends at bindTimeoutSeconds
                return "binding volumes: context deadline exceeded"
            await asyncio.sleep(self.poll)

    async def _check(self, action: BindVolumes, written: dict[str, str]) -> tuple[str | None, bool]:
        pod = self._lookup(Pod.KIND, action.key)
        if pod is None or (action.uid and pod.metadata.uid != action.uid):
            return "pod does not exist any more", False
        done = True
        for claim_key, _, volume in action.claims:
            pv = self._lookup(PersistentVolume.KIND, volume)
            if isinstance(pv, PersistentVolume) and not _older(
                pv.metadata.resource_version, written.get(volume)
            ):
                ref = pv.spec.claim_ref if pv.spec else None
                if ref is None or not ref.uid:
                    return f'claimRef got reset for pv "{volume}"', False
            claim = self._claim(claim_key)
            bound_to = claim.spec.volume_name if claim.spec else None
            if bound_to and bound_to != volume:
                return f'claim "{claim_key}" is bound to volume "{bound_to}"', False
            annotations = claim.metadata.annotations or {}
            if bound_to != volume or BIND_COMPLETED_ANNOTATION not in annotations:
                done = False
        for claim_key, _ in action.provisions:
            problem, bound = self._provisioned(claim_key, action.node, written.get(claim_key))
            if problem is not None:
                return problem, False
            done = done and bound
        return None, done

    def _provisioned(self, key: str, node: str, written: str | None) -> tuple[str | None, bool]:
        """(why the claim's provisioning failed, whether it is bound) from the informers."""
        claim = self._claim(key)
        if _older(claim.metadata.resource_version, written):
            return None, False  # our write is not seen yet
        name = claim.metadata.name
        if (claim.metadata.annotations or {}).get(SELECTED_NODE_ANNOTATION) != node:
            return f'provisioning failed for PVC "{name}"', False
        bound_to = claim.spec.volume_name if claim.spec else None
        if not bound_to:
            return None, False
        pv = self._lookup(PersistentVolume.KIND, bound_to)
        if not isinstance(pv, PersistentVolume):
            return None, False  # not seen yet
        found = self._lookup(Node.KIND, node)
        labels = (found.metadata.labels or {}) if found is not None else {}
        affinity = pv.spec.node_affinity if pv.spec else None
        required = affinity.required if affinity is not None else None
        if required is not None and not _admits(required, node, labels):
            return f'pv "{bound_to}" node affinity doesn\'t match node "{node}"', False
        return None, BIND_COMPLETED_ANNOTATION in (claim.metadata.annotations or {})


def _admits(selector: NodeSelector, node: str, labels: dict[str, str]) -> bool:
    """Whether a volume's required node affinity admits the node (terms ORed; a term's
    expressions and fields ANDed; Gt and Lt compare integers)."""
    for term in selector.node_selector_terms:
        expressions = term.match_expressions or []
        fields = term.match_fields or []
        if not expressions and not fields:
            continue
        ok = all(_expression(e.key, e.operator, e.values or [], labels) for e in expressions)
        ok = ok and all(
            f.key == "metadata.name" and _expression("n", f.operator, f.values or [], {"n": node})
            for f in fields
        )
        if ok:
            return True
    return False


def _expression(key: str, operator: str, values: list[str], labels: dict[str, str]) -> bool:
    if operator in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, IndexError, ValueError):
            return False
        return have > want if operator == "Gt" else have < want
    requirement = LabelSelectorRequirement(key=key, operator=operator, values=values)
    try:
        return labels_match(LabelSelector(match_expressions=[requirement]), labels)
    except SelectorError:
        return False
