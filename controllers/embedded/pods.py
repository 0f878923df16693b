"""What a real API server does to pods beyond storing them, so that a scheduler sees the objects
it would see on a cluster:

* on create, the defaults kube-apiserver gives a pod's scheduling fields (`schedulerName:
  default-scheduler`, `terminationGracePeriodSeconds: 30`, `preemptionPolicy:
  PreemptLowerPriority`), `status.phase: Pending` with the pod's QoS class, and the Priority
  admission plugin: `spec.priority` from the pod's PriorityClass (or the global default class,
  else 0), 403 Forbidden for a class that does not exist, and for a priority or preemption
  policy sent that differs from the class's;
* `pods/binding`: the node is set once (409 Conflict for a pod already assigned, being deleted,
  or still gated; for a uid or resourceVersion in the Binding's metadata that is not the pod's),
  the Binding's annotations are copied, the `PodScheduled` condition becomes True;
* graceful deletion: the grace period kube's pod strategy computes (the one sent, else the
  pod's `terminationGracePeriodSeconds`; 0 for a pod on no node or already finished).

The two PriorityClasses every cluster has (`system-node-critical`, `system-cluster-critical`)
are in SYSTEM_PRIORITY_CLASSES.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from apis.meta import format_time
from controllers.embedded.status import StatusError

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "DEFAULT_SCHEDULER",
    "SYSTEM_PRIORITY_CLASSES",
    "admit_pod",
    "admit_priority_class",
    "bind_pod",
    "grace_period",
    "is_pod",
    "qos_class",
    "set_condition",
]

DEFAULT_SCHEDULER = "default-scheduler"
DEFAULT_GRACE_SECONDS = 30
_PREEMPT = "PreemptLowerPriority"

SYSTEM_PRIORITY_CLASSES: tuple[dict[str, Any], ...] = tuple(
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": description,
        "preemptionPolicy": _PREEMPT,
    }
    for name, value, description in (
        (
            "system-node-critical",
            2_000_001_000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        (
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster, but can be moved to "
            "another node if necessary.",
        ),
    )
)


def is_pod(group: str, kind: str) -> bool:
    return not group and kind == "Pod"


def _now() -> str:
    return format_time(datetime.now(UTC))


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            if isinstance(container, Mapping):
                yield container


def qos_class(spec: Mapping[str, Any]) -> str:
    """BestEffort (no requests nor limits anywhere), Guaranteed (every container limits cpu and
    memory, and requests, where given, equal the limits), else Burstable: kube's GetPodQOS on
    the two resources it looks at."""
    any_set, guaranteed = False, True
    for container in _containers(spec):
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        tracked = {"cpu", "memory"}
        if any(k in tracked for k in (*requests, *limits)):
            any_set = True
        for name in tracked:
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _forbidden(name: str, why: str) -> StatusError:
    details = {"name": name, "group": "", "kind": "pods"}
    return StatusError(403, f'pods "{name}" is forbidden: {why}', "Forbidden", details)


def admit_pod(pod: dict[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> None:
    """Apply the create-time defaults and the Priority admission to `pod` (in place);
    `classes` are the stored PriorityClasses by name. Raises 403 as the admission plugin does."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return  # validation reports it
    name = (pod.get("metadata") or {}).get("name") or (pod.get("metadata") or {}).get(
        "generateName", ""
    )
    class_name = spec.get("priorityClassName")
    found: Mapping[str, Any] | None = None
    if class_name:
        found = classes.get(class_name)
        if found is None:
            raise _forbidden(name, f"no PriorityClass with name {class_name} was found")
    else:
        defaults = [c for c in classes.values() if c.get("globalDefault")]
        if defaults:
            # Several global defaults cannot be created; the lowest wins, as in kube.
            found = min(defaults, key=lambda c: c.get("value", 0))
            spec["priorityClassName"] = found["metadata"]["name"]
    priority = int(found.get("value", 0)) if found is not None else 0
    policy = (found.get("preemptionPolicy") if found is not None else None) or _PREEMPT
    sent = spec.get("priority")
    if sent is not None and sent != priority:
        raise _forbidden(
            name,
            f"the integer value of priority ({sent}) must not be provided in pod spec; priority "
            f"admission controller computed {priority} from the given PriorityClass name",
        )
    sent_policy = spec.get("preemptionPolicy")
    if sent_policy is not None and found is not None and sent_policy != policy:
        raise _forbidden(
            name,
            f"the string value of PreemptionPolicy ({sent_policy}) must not be provided in pod "
            f"spec; priority admission controller computed {policy} from the given "
            "PriorityClass name",
        )
    spec["priority"] = priority
    spec["preemptionPolicy"] = sent_policy or policy
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def admit_priority_class(doc: dict[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> None:
    """A new PriorityClass as kube admits it: `preemptionPolicy` defaults to
    PreemptLowerPriority; 403 for a second global default. (A value above one billion or an
    unknown `system-` name is refused by validation: `apis.kubevalidation`.)"""
    name = (doc.get("metadata") or {}).get("name") or ""
    if doc.get("globalDefault"):
        for other in classes.values():
            if other.get("globalDefault") and other["metadata"]["name"] != name:
                details = {"name": name, "group": "scheduling.k8s.io", "kind": "priorityclasses"}
                raise StatusError(
                    403,
                    f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: PriorityClass '
                    f"{other['metadata']['name']} is already marked as default. Only one "
                    "default can exist",
                    "Forbidden",
                    details,
                )
    doc.setdefault("preemptionPolicy", _PREEMPT)


def set_condition(
    status: dict[str, Any], type_: str, value: str, reason: str | None = None
) -> None:
    """Set a pod or node condition as kube's UpdatePodCondition does: the transition time
    changes only when the status does."""
    conditions = status.setdefault("conditions", [])
    now = _now()
    for condition in conditions:
        if condition.get("type") == type_:
            if condition.get("status") != value:
                condition["lastTransitionTime"] = now
            condition["status"] = value
            if reason is not None:
                condition["reason"] = reason
            else:
                condition.pop("reason", None)
                condition.pop("message", None)
            return
    new: dict[str, Any] = {
        "type": type_,
        "status": value,
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }
    if reason is not None:
        new["reason"] = reason
    conditions.append(new)


def _binding_conflict(name: str, why: str) -> StatusError:
    return StatusError.conflict("", "pods/binding", name, why)


def bind_pod(pod: Mapping[str, Any], name: str, binding: Any) -> dict[str, Any]:
    """The pod after `binding` (the request body) assigns it, or the error kube answers."""
    if not isinstance(binding, dict):
        raise StatusError(400, "the request body must be a Binding")
    meta = binding.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise StatusError(400, "the name of the object does not match the name on the URL")
    target = binding.get("target") or {}
    node = target.get("name")
    if not node:
        cause = {
            "reason": "FieldValueRequired",
            "message": "Required value",
            "field": "target.name",
        }
        details = {"name": name, "group": "", "kind": "Binding", "causes": [cause]}
        raise StatusError(
            422, f'Binding "{name}" is invalid: target.name: Required value', "Invalid", details
        )
    if target.get("kind") not in (None, "", "Node"):
        cause = {
            "reason": "FieldValueNotSupported",
            "message": "must be empty or 'Node'",
            "field": "target.kind",
        }
        details = {"name": name, "group": "", "kind": "Binding", "causes": [cause]}
        raise StatusError(
            422,
            f"Binding \"{name}\" is invalid: target.kind: must be empty or 'Node'",
            "Invalid",
            details,
        )
    pod_meta = pod["metadata"]
    uid = meta.get("uid")
    if uid and uid != pod_meta.get("uid"):
        why = (
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            f"{pod_meta.get('uid')}"
        )
        raise StatusError.conflict("", "pods", name, why)
    rv = meta.get("resourceVersion")
    if rv and rv != pod_meta.get("resourceVersion"):
        why = (
            f"Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in "
            f"object meta: {pod_meta.get('resourceVersion')}"
        )
        raise StatusError.conflict("", "pods", name, why)
    spec = pod.get("spec") or {}
    if pod_meta.get("deletionTimestamp"):
        raise _binding_conflict(name, f"pod {name} is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise _binding_conflict(
            name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        )
    if spec.get("schedulingGates"):
        raise _binding_conflict(name, f"pod {name} has non-empty .spec.schedulingGates")
    # A new version sharing what does not change with the stored one, which nobody changes
    # in place (its history and watchers hold it): copies of the metadata, the spec and the
    # status with its conditions, the parts written here.
    obj: dict[str, Any] = {**pod, "metadata": dict(pod_meta), "spec": {**spec, "nodeName": node}}
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and annotations:
        obj["metadata"]["annotations"] = {**(pod_meta.get("annotations") or {}), **annotations}
    status = pod.get("status")
    status = obj["status"] = dict(status) if isinstance(status, dict) else {}
    if isinstance(status.get("conditions"), list):
        status["conditions"] = [dict(c) if isinstance(c, dict) else c for c in status["conditions"]]
    set_condition(status, "PodScheduled", "True")
    return obj


def grace_period(pod: Mapping[str, Any], sent: Any, default_from_spec: bool) -> int:
    """The grace period of a pod's deletion, as kube's pod strategy computes it: the one sent,
    else the pod's own (`default_from_spec`; the embedded server without its kubelet deletes at
    once); 0 for a pod on no node or that has finished; a negative one becomes 1."""
    spec = pod.get("spec") or {}
    if isinstance(sent, int) and not isinstance(sent, bool):
        period = sent
    elif default_from_spec:
        own = spec.get("terminationGracePeriodSeconds")
        period = own if isinstance(own, int) else DEFAULT_GRACE_SECONDS
    else:
        period = 0
    if not spec.get("nodeName"):
        period = 0
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        period = 0
    return 1 if period < 0 else period
