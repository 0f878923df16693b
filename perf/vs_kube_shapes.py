"""The workloads of the side-by-side with kube-scheduler (`perf.vs_kube`), named as kube's
scheduler_perf names them, as the wire documents both schedulers read from one real
kube-apiserver. Nodes have 4 cpu, 32Gi and 110 pods (scheduler_perf's node template); measured
pods live in namespace `sched-1`, pods running before (bound already, by another scheduler's
name) in `sched-0`.

* `SchedulingBasic`: pods of 100m / 500Mi on plain nodes.
* `SchedulingPodAntiAffinity`: hostname-labelled nodes, green pods one per node before; each
  measured pod is green and anti-affine to green on the hostname (one per free node).
* `TopologySpreading`: nodes in 3 zones; each measured pod spreads by zone (maxSkew 1,
  DoNotSchedule) over the pods of its app.
* `PreemptionBasic`: every node holds 4 low-priority pods of 900m (3.6 of 4 cpu); each measured
  pod (high priority, 900m) must evict one. Victims are deleted gracefully (30 s grace period);
  the run's kubelet stand-in finishes each deletion as soon as it sees it.
* `SchedulingWithPVs`: a WaitForFirstConsumer StorageClass without a provisioner and static
  local PVs, 2 per node, bound by hostname affinity; each measured pod mounts its own claim.
  kube-controller-manager's PV controller completes the bindings the scheduler makes.
* `MixedPriorities`: `SchedulingBasic`'s pods in three PriorityClasses, interleaved; all fit.
* `SchedulingWithResourceClaimTemplate`: scheduler_perf's DRA shape. Each node publishes a
  ResourceSlice of 10 devices of driver `test-driver.cdi.k8s.io` (scheduler_perf's
  `maxClaimsPerNode` 10); DeviceClass `test-class` selects the driver by CEL; each measured pod
  claims one device through ResourceClaimTemplate `test-claim-template`, whose claims
  kube-controller-manager's resourceclaim controller creates. No device goes to two pods, so no
  node takes more than 10.

`World.check` names the bindings that break the workload's own rule, and `compare` sets two
runs' placements side by side.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SHAPES", "SIZES", "World", "claim_pods", "compare", "world"]

SCHEDULER = "perf-scheduler"
"""The profile name both schedulers serve: the measured pods name it."""
BEFORE_NS, MEASURED_NS = "sched-0", "sched-1"
STORAGE_CLASS = "local-wffc"
PV_PER_NODE = 2
CLASSES = {"perf-low": 0, "perf-mid": 100, "perf-high": 1_000}

SHAPES = (
    "SchedulingBasic",
    "SchedulingPodAntiAffinity",
    "TopologySpreading",
    "PreemptionBasic",
    "SchedulingWithPVs",
    "MixedPriorities",
    "SchedulingWithResourceClaimTemplate",
)
DRA_DRIVER = "test-driver.cdi.k8s.io"
DEVICES_PER_NODE = 10

SIZES: dict[str, dict[str, tuple[int, int, int]]] = {  # nodes, running before, measured
    "full": {
        "SchedulingBasic": (500, 250, 1_500),
        "SchedulingPodAntiAffinity": (500, 100, 300),
        "TopologySpreading": (500, 250, 1_500),
        "PreemptionBasic": (300, 4, 300),  # before: per node
        "SchedulingWithPVs": (300, 0, 300),
        "MixedPriorities": (500, 250, 1_500),
        "SchedulingWithResourceClaimTemplate": (500, 0, 2_500),
    },
    "quick": {
        "SchedulingBasic": (200, 200, 800),
        "SchedulingPodAntiAffinity": (200, 50, 120),
        "TopologySpreading": (200, 200, 800),
        "PreemptionBasic": (100, 4, 100),
        "SchedulingWithPVs": (200, 0, 300),
        "MixedPriorities": (200, 200, 800),
        "SchedulingWithResourceClaimTemplate": (100, 0, 500),
    },
    "smoke": {
        "SchedulingBasic": (10, 5, 30),
        "SchedulingPodAntiAffinity": (10, 3, 5),
        "TopologySpreading": (9, 6, 30),
        "PreemptionBasic": (5, 4, 5),
        "SchedulingWithPVs": (8, 0, 10),
        "MixedPriorities": (10, 5, 30),
        "SchedulingWithResourceClaimTemplate": (3, 0, 20),
    },
}


def _node(i: int, zones: int = 0) -> dict[str, Any]:
    name = f"node-{i:05d}"
    labels = {"kubernetes.io/hostname": name}
    if zones:
        labels["topology.kubernetes.io/zone"] = f"zone-{i % zones}"
    resources = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": resources, "allocatable": resources},
    }


def _pod(
    name: str,
    namespace: str,
    *,
    cpu: str = "100m",
    node: str | None = None,
    scheduler: str = SCHEDULER,
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}},
    }
    body: dict[str, Any] = {"schedulerName": scheduler, "containers": [container], **spec}
    if node is not None:
        body["nodeName"] = node
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def _class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


@dataclass
class World:
    """One shape at one size: what exists before the scheduler starts (`setup`: nodes, classes,
    volumes; `before`: pods bound already) and the measured pods (`claims` are created just
    before them). `expected` measured pods end bound."""

    shape: str
    nodes: list[dict[str, Any]]
    setup: list[dict[str, Any]] = field(default_factory=list)
    before: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    measured: list[dict[str, Any]] = field(default_factory=list)

    @property
    def expected(self) -> int:
        return len(self.measured)

    def check(
        self, where: Mapping[str, str], evicted: int, volumes: Mapping[str, str] | None = None
    ) -> list[str]:
        """The workload's rule broken by `where` (pod name -> node of the measured pods);
        `volumes`: the node of each measured pod's bound volume (PV shapes)."""
        problems = []
        if len(where) != self.expected:
            problems.append(f"{len(where)} of {self.expected} measured pods bound")
        per_node = Counter(where.values())
        if self.shape == "SchedulingPodAntiAffinity":
            taken = {p["spec"]["nodeName"] for p in self.before}
            clash = sum(1 for n, k in per_node.items() if k > 1 or n in taken)
            if clash:
                problems.append(f"{clash} nodes hold two green pods")
        if self.shape == "TopologySpreading":
            zones = {n["metadata"]["name"]: n["metadata"]["labels"][_ZONE] for n in self.nodes}
            count = Counter(dict.fromkeys(zones.values(), 0))  # a zone left empty counts
            count.update(zones[n] for n in where.values())
            count.update(zones[p["spec"]["nodeName"]] for p in self.before)
            if count and max(count.values()) - min(count.values()) > 1:
                problems.append(f"zones skewed beyond 1: {dict(count)}")
        if self.shape == "PreemptionBasic" and evicted > self.expected:
            problems.append(f"{evicted} evictions for {self.expected} preemptors")
        if self.shape == "SchedulingWithPVs":
            volumes = volumes or {}
            wrong = sum(1 for pod, node in where.items() if volumes.get(pod) != node)
            if wrong:
                problems.append(f"{wrong} pods away from their volume's node")
        if self.shape == "SchedulingWithResourceClaimTemplate":
            crowded = sum(1 for k in per_node.values() if k > DEVICES_PER_NODE)
            if crowded:
                problems.append(f"{crowded} nodes hold more pods than devices")
        over = [n for n, k in per_node.items() if k > 110]
        if over:
            problems.append(f"{len(over)} nodes over their pod count")
        return problems


_ZONE = "topology.kubernetes.io/zone"


def world(shape: str, nodes: int, before: int, measured: int) -> World:
    """`shape` at this size (for PreemptionBasic, `before` counts low pods per node)."""
    if shape in ("SchedulingBasic", "MixedPriorities"):
        w = World(shape, [_node(i) for i in range(nodes)])
        w.before = [
            _pod(f"init-{i}", BEFORE_NS, node=f"node-{i % nodes:05d}", scheduler="other")
            for i in range(before)
        ]
        w.measured = [_pod(f"m-{i}", MEASURED_NS) for i in range(measured)]
        if shape == "MixedPriorities":
            w.setup = [_class(name, value) for name, value in CLASSES.items()]
            names = list(CLASSES)
            for i, pod in enumerate(w.measured):
                pod["spec"]["priorityClassName"] = names[i % len(names)]
        return w
    if shape == "SchedulingPodAntiAffinity":
        w = World(shape, [_node(i) for i in range(nodes)])
        green = {"color": "green"}
        stride = max(1, nodes // max(1, before))
        w.before = [
            _pod(
                f"init-{i}",
                BEFORE_NS,
                node=f"node-{(i * stride) % nodes:05d}",
                scheduler="other",
                labels=green,
            )
            for i in range(before)
        ]
        term = {
            "labelSelector": {"matchLabels": green},
            "topologyKey": "kubernetes.io/hostname",
            "namespaces": [BEFORE_NS, MEASURED_NS],
        }
        anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        w.measured = [
            _pod(f"m-{i}", MEASURED_NS, labels=green, affinity=anti) for i in range(measured)
        ]
        return w
    if shape == "TopologySpreading":
        w = World(shape, [_node(i, zones=3) for i in range(nodes)])
        app = {"app": "spread"}
        w.before = [
            _pod(
                f"init-{i}",
                MEASURED_NS,
                node=f"node-{(i * 7) % nodes:05d}",
                scheduler="other",
                labels=app,
            )
            for i in range(before)
        ]
        constraint = {
            "maxSkew": 1,
            "topologyKey": _ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": app},
        }
        w.measured = [
            _pod(f"m-{i}", MEASURED_NS, labels=app, topologySpreadConstraints=[constraint])
            for i in range(measured)
        ]
        return w
    if shape == "PreemptionBasic":
        w = World(shape, [_node(i) for i in range(nodes)])
        w.setup = [_class("perf-low", 0), _class("perf-high", 1_000)]
        w.before = [
            _pod(
                f"low-{i}-{j}",
                BEFORE_NS,
                cpu="900m",
                node=f"node-{i:05d}",
                scheduler="other",
                priorityClassName="perf-low",
            )
            for i in range(nodes)
            for j in range(before)
        ]
        w.measured = [
            _pod(f"high-{i}", MEASURED_NS, cpu="900m", priorityClassName="perf-high")
            for i in range(measured)
        ]
        return w
    if shape == "SchedulingWithPVs":
        w = World(shape, [_node(i) for i in range(nodes)])
        w.setup = [_storage_class()] + [
            _volume(f"node-{i:05d}", j) for i in range(nodes) for j in range(PV_PER_NODE)
        ]
        w.claims = [_claim(f"claim-{i}") for i in range(measured)]
        w.measured = [
            _pod(
                f"m-{i}",
                MEASURED_NS,
                volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": f"claim-{i}"}}],
            )
            for i in range(measured)
        ]
        return w
    if shape == "SchedulingWithResourceClaimTemplate":
        w = World(shape, [_node(i) for i in range(nodes)])
        w.setup = [_device_class(), _claim_template()]
        w.setup += [_slice(f"node-{i:05d}") for i in range(nodes)]
        w.measured = claim_pods([f"m-{i}" for i in range(measured)])
        return w
    raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")


def claim_pods(names: list[str], labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Measured pods each claiming one device through `test-claim-template` (scheduler_perf's
    pod-with-claim-template)."""
    entry = {"name": "resource", "resourceClaimTemplateName": "test-claim-template"}
    pods = [_pod(n, MEASURED_NS, labels=labels, resourceClaims=[entry]) for n in names]
    for pod in pods:
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "resource"}]
    return pods


def _device_class() -> dict[str, Any]:
    selector = {"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "test-class"},
        "spec": {"selectors": [selector]},
    }


def _claim_template() -> dict[str, Any]:
    request = {"name": "req-0", "exactly": {"deviceClassName": "test-class"}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "test-claim-template", "namespace": MEASURED_NS},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def _slice(node: str) -> dict[str, Any]:
    """The node's devices as scheduler_perf's test driver publishes them: one pool per node."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRA_DRIVER}"},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"instance-{j}"} for j in range(DEVICES_PER_NODE)],
        },
    }


def _storage_class() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def _volume(node: str, j: int) -> dict[str, Any]:
    term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pv-{node}-{j}"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": STORAGE_CLASS,
            "persistentVolumeReclaimPolicy": "Retain",
            "local": {"path": f"/mnt/disks/{j}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}},
        },
    }


def _claim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": MEASURED_NS},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": STORAGE_CLASS,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def compare(ours: Mapping[str, str], kube: Mapping[str, str]) -> dict[str, Any]:
    """Two runs' placements of one shape (pod -> node): the same pods bound, the fewest and
    most measured pods a node took under each (the shapes' nodes are identical, so many scores
    tie and which node takes a pod is then the tie-break's choice: kube's is random, so the
    share of pods on the same node is shown, not required), and that share."""
    same = sum(1 for pod, node in ours.items() if kube.get(pod) == node)

    def band(where: Mapping[str, str]) -> tuple[int, int]:
        counts = Counter(where.values()).values()
        return (min(counts), max(counts)) if counts else (0, 0)

    return {
        "same_pods_bound": set(ours) == set(kube),
        "per_node_ours": band(ours),
        "per_node_kube": band(kube),
        "same_node_share": round(same / len(ours), 3) if ours else None,
    }
