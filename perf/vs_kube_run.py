"""One run of the side-by-side (`perf.vs_kube`): one scheduler, one shape, one way of creating
the pods, on a real kube-apiserver shared by every run.

`Bench` holds the control plane (etcd, kube-apiserver, kube-controller-manager for the
ServiceAccounts and the PV controller; `TaintNodesByCondition` admission off, so that nodes
created through the API take pods as a Ready node does), an HTTPS session as the cluster's
admin, and a kubelet stand-in that finishes graceful deletions (a victim of preemption is
deleted with its 30 s grace period; the stand-in removes it once it sees it terminating, as a
kubelet whose containers stop at once).

`Bench.run` then: empties the cluster of the previous run's objects; creates the nodes, the
shape's objects and the pods running before (and, `mode="before"`, the measured pods: pending
when the scheduler starts); starts the scheduler (`Scheduler`: ours as users run it, `placement
scheduler run --config`, or kube-scheduler from `KUBEBUILDER_ASSETS`, both from the same
KubeSchedulerConfiguration); with `mode="during"`, waits for its /readyz and creates the
measured pods then (scheduler_perf's way, 30 POSTs in flight); watches every bind until all
measured pods are bound; sends SIGTERM and times the exit. CPU seconds are read from /proc for
the scheduler, kube-apiserver and etcd; the scheduler's peak RSS is its VmHWM.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perf.child_kube import BindWatch
from perf.child_pods import _cpu_seconds
from perf.kube_creator import Request, post_all
from perf.kube_throughput import per_second, summary
from perf.measured_process import MeasuredProcess
from perf.vs_kube_shapes import BEFORE_NS, MEASURED_NS, SCHEDULER, World
from tests.e2e.controlplane import TOKEN, ControlPlane, free_port
from tests.e2e.pod_helpers import placement_argv

__all__ = ["KUBE", "OURS", "Bench", "Scheduler", "per_run", "scheduler_config"]

OURS, KUBE = "ours", "kube-scheduler"
QPS = 5000
"""kube-scheduler's clientConnection qps and burst (its defaults, 50/100, would throttle it
far below what it can do; scheduler_perf runs it at 5000). Ours has no client-side limit."""

_PATHS = {
    "Node": "/api/v1/nodes",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
}
_KEPT = ("PriorityClass", "StorageClass", "DeviceClass", "ResourceClaimTemplate")
"""Setup kinds made once and kept across runs; the others (volumes, slices) are made per run."""
_CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{MEASURED_NS}/resourceclaims"
_SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def _path(doc: dict[str, Any]) -> str:
    kind = doc["kind"]
    if kind in _PATHS:
        return _PATHS[kind]
    ns = doc["metadata"]["namespace"]
    if kind == "ResourceClaimTemplate":
        return f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates"
    plural = {"Pod": "pods", "PersistentVolumeClaim": "persistentvolumeclaims"}[kind]
    return f"/api/v1/namespaces/{ns}/{plural}"


def per_run(world: World) -> list[dict[str, Any]]:
    """The setup objects made for each run (volumes, device slices): the others are kept."""
    return [d for d in world.setup if d["kind"] not in _KEPT]


def requests(docs: list[dict[str, Any]]) -> list[Request]:
    """The POSTs creating `docs`, encoded before any clock starts."""
    return [Request(_path(d), json.dumps(d).encode()) for d in docs]


def scheduler_config(kubeconfig: Path) -> dict[str, Any]:
    """The KubeSchedulerConfiguration both schedulers run: one profile, kube's defaults."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": QPS, "burst": QPS},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": SCHEDULER}],
    }


class Scheduler(MeasuredProcess):
    """A scheduler process: which one, its readiness URL, its log."""

    @classmethod
    def start(cls, name: str, plane: ControlPlane, config: Path, log: Path) -> Scheduler:
        port = free_port()
        if name == OURS:
            argv = [
                *placement_argv(), "scheduler", "run", f"--config={config}",
                f"--http-addr=127.0.0.1:{port}", "--log-level=WARNING",
            ]  # fmt: skip
            ready = f"http://127.0.0.1:{port}/readyz"
        else:
            argv = [
                str(plane.assets / "kube-scheduler"), f"--config={config}",
                f"--authentication-kubeconfig={plane.kubeconfig}",
                f"--authorization-kubeconfig={plane.kubeconfig}",
                f"--secure-port={port}", "--bind-address=127.0.0.1", "--v=1",
            ]  # fmt: skip
            ready = f"https://127.0.0.1:{port}/readyz"
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        spawned = cls.spawn(name, argv, ready, log, env)
        return cls(name, spawned.popen, ready, log, spawned.spawned)


@dataclass
class Bench:
    """The shared control plane and the client of every run (module docstring)."""

    plane: ControlPlane
    workdir: Path
    session: Any = None
    tls: ssl.SSLContext = field(default_factory=ssl.create_default_context)
    config: Path = Path()
    _kubelet: asyncio.Task[None] | None = None

    @classmethod
    def start(cls) -> Bench:
        plane = ControlPlane.from_env(
            apiserver_args=("--disable-admission-plugins=TaintNodesByCondition",)
        )
        plane.start()
        try:
            plane.start_controller_manager()
        except BaseException:
            plane.stop()
            raise
        workdir = Path(tempfile.mkdtemp(prefix="vs-kube-"))
        bench = cls(plane, workdir)
        bench.tls = ssl.create_default_context(cafile=str(plane.ca_file))
        bench.config = workdir / "scheduler.yaml"
        bench.config.write_text(json.dumps(scheduler_config(plane.kubeconfig)))
        return bench

    async def open(self) -> None:
        import aiohttp

        headers = {"Authorization": f"Bearer {TOKEN}"}
        connector = aiohttp.TCPConnector(ssl=self.tls, limit=64)
        self.session = aiohttp.ClientSession(headers=headers, connector=connector)
        for ns in (BEFORE_NS, MEASURED_NS):
            doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            await self._post("/api/v1/namespaces", doc, exists_ok=True)
        for ns in (BEFORE_NS, MEASURED_NS):  # pods need the namespace's ServiceAccount
            await self._until(f"/api/v1/namespaces/{ns}/serviceaccounts/default", present=True)
        self._kubelet = asyncio.create_task(self._finish_deletions())

    async def close(self) -> None:
        if self._kubelet is not None:
            self._kubelet.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._kubelet
        if self.session is not None:
            await self.session.close()
        self.plane.stop()

    def pid(self, name: str) -> int | None:
        return next((p.popen.pid for p in self.plane.processes if p.name == name), None)

    # -- the API --------------------------------------------------------------------------

    async def _post(self, path: str, doc: dict[str, Any], exists_ok: bool = False) -> None:
        async with self.session.post(self.plane.url + path, json=doc) as answer:
            if answer.status == 409 and exists_ok:
                return
            if answer.status >= 300:
                raise RuntimeError(f"POST {path}: {answer.status} {(await answer.text())[:300]}")

    async def _get(self, path: str, **params: str) -> tuple[int, Any]:
        async with self.session.get(self.plane.url + path, params=params) as answer:
            return answer.status, await answer.json()

    async def _until(self, path: str, present: bool, limit: float = 120.0) -> None:
        """Wait until `path` (an object or a list) exists, or, for a list, is empty."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            status, doc = await self._get(path, limit="1")
            if present and status == 200:
                return
            if not present and status == 200 and not doc.get("items"):
                return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"{path}: not {'there' if present else 'empty'} after {limit:g} s")

    async def _delete_all(self, path: str, uid: str | None = None) -> None:
        """DELETE `path` at once; with `uid`, only the object of that uid (a stale event must
        not delete the next run's pod of the same name: a 409 then)."""
        url = f"{self.plane.url}{path}?gracePeriodSeconds=0"
        # a body's DeleteOptions replace the query's: the grace period goes in it too
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}} if uid else None
        async with self.session.delete(url, json=body) as answer:
            if answer.status >= 300 and answer.status not in (404, 409):
                raise RuntimeError(f"DELETE {path}: {answer.status} {await answer.text()}")

    async def _finish_deletions(self) -> None:
        """The kubelet stand-in: a pod seen terminating is removed (grace period 0)."""
        while True:
            with contextlib.suppress(Exception):
                _, doc = await self._get(f"/api/v1/namespaces/{BEFORE_NS}/pods", limit="1")
                params = {"watch": "true", "resourceVersion": doc["metadata"]["resourceVersion"]}
                url = f"{self.plane.url}/api/v1/namespaces/{BEFORE_NS}/pods"
                async with self.session.get(url, params=params, timeout=None) as stream:
                    async for line in stream.content:
                        if b'"deletionTimestamp"' not in line:
                            continue
                        meta = json.loads(line)["object"]["metadata"]
                        path = f"/api/v1/namespaces/{BEFORE_NS}/pods/{meta['name']}"
                        with contextlib.suppress(Exception):
                            # by uid: the stream may still carry the last run's deletions
                            # when this run has made pods of the same names
                            await self._delete_all(path, meta.get("uid"))
            await asyncio.sleep(0.2)

    async def reset(self) -> None:
        """Remove every object a run made: pods and claims (at once), volumes, device slices,
        nodes. Resource claims made from templates go with their pods (kube-controller-manager
        deallocates and deletes them): waited for, as a claim left allocated holds a device."""
        for ns in (BEFORE_NS, MEASURED_NS):
            await self._delete_all(f"/api/v1/namespaces/{ns}/pods")
        await self._delete_all(f"/api/v1/namespaces/{MEASURED_NS}/persistentvolumeclaims")
        await self._delete_all("/api/v1/persistentvolumes")
        await self._delete_all(_SLICES)
        await self._delete_all("/api/v1/nodes")
        for path in (
            _CLAIMS,
            _SLICES,
            f"/api/v1/namespaces/{BEFORE_NS}/pods",
            f"/api/v1/namespaces/{MEASURED_NS}/pods",
            f"/api/v1/namespaces/{MEASURED_NS}/persistentvolumeclaims",
            "/api/v1/persistentvolumes",
            "/api/v1/nodes",
        ):
            await self._until(path, present=False)

    async def create(self, docs: list[dict[str, Any]]) -> None:
        done = await post_all(self.plane.url, requests(docs), tls=self.tls, token=TOKEN)
        assert done == len(docs)

    async def prepare(self, world: World) -> None:
        """Every class the shapes use, once (kept across runs)."""
        for doc in world.setup:
            if doc["kind"] in _KEPT:
                await self._post(_path(doc), doc, exists_ok=True)

    # -- one run ------------------------------------------------------------------------------

    async def run(self, name: str, world: World, mode: str, limit: float) -> dict[str, Any]:
        """One scheduler on one shape (module docstring); the figures as a JSON object."""
        await self.reset()
        await self.prepare(world)
        await self.create(world.nodes)
        await self.create(per_run(world))
        await self.create(world.before)
        await self.create(world.claims)
        measured = requests(world.measured)
        if mode == "before":
            await self.create(world.measured)
        _, doc = await self._get("/api/v1/pods", limit="1")
        keys = {f"{MEASURED_NS}/{p['metadata']['name']}" for p in world.measured}
        watch = BindWatch(keys)
        watching = asyncio.create_task(
            watch.run(self.session, self.plane.url, doc["metadata"]["resourceVersion"])
        )
        servers = [self.pid("kube-apiserver"), self.pid("etcd")]
        log = self.workdir / f"{name}-{world.shape}-{mode}.log"
        out: dict[str, Any] = {"scheduler": name, "shape": world.shape, "mode": mode}
        scheduler = Scheduler.start(name, self.plane, self.config, log)
        try:
            watch.began = scheduler.spawned
            server_cpu = [_cpu_seconds(p) or 0.0 if p else 0.0 for p in servers]
            if mode == "during":
                out["ready_s"] = round(await self._ready(scheduler, limit), 3)
                cpu_from = scheduler.cpu()  # it schedules while the pods are created
                created = time.perf_counter()
                await post_all(self.plane.url, measured, tls=self.tls, token=TOKEN)
                out["created_s"] = round(time.perf_counter() - created, 3)
                window_from = created - scheduler.spawned
            while len(watch.bound) < world.expected and scheduler.popen.poll() is None:
                if time.perf_counter() - scheduler.spawned > limit:
                    break
                watch.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(watch.changed.wait(), 1.0)
            ended = time.perf_counter()
            cpu_total = scheduler.cpu()
            out["rss_mib"] = scheduler.rss_mib()
            server_cpu = [
                round((_cpu_seconds(p) or 0.0) - before, 2) if p else 0.0
                for p, before in zip(servers, server_cpu, strict=True)
            ]
        finally:
            out["stop_s"], out["exit_code"] = (round(x, 3) for x in scheduler.stop())
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watching
        timeline = watch.timeline
        first = timeline[0][0] if timeline else None
        if mode == "before":
            window_from = first or 0.0
            cpu_from = 0.0
        window = [(t - window_from, n) for t, n in timeline if t >= window_from]
        bound = len(watch.bound)
        seconds = (timeline[-1][0] - window_from) if timeline else 0.0
        cpu = cpu_total - cpu_from
        out.update(
            expected=world.expected,
            bound=bound,
            first_bind_s=round(first, 3) if first is not None else None,
            seconds=round(seconds, 3),
            pods_per_s=round(bound / seconds, 1) if seconds > 0 else None,
            throughput={k: round(v, 1) for k, v in summary(per_second(window)).items()},
            cpu_s=round(cpu, 2),
            cpu_total_s=round(cpu_total, 2),
            cpu_ms_per_pod=round(1000 * cpu / bound, 3) if bound else None,
            apiserver_cpu_s=server_cpu[0],
            etcd_cpu_s=server_cpu[1],
            evicted=watch.deleted,
            all_s=round(ended - scheduler.spawned, 3),
            timeline=[(round(t, 3), n) for t, n in window[:: max(1, len(window) // 200)]],
            placements={key.split("/", 1)[1]: node for key, node in watch.bound.items()},
            log_tail=scheduler.tail(),
        )
        volumes = await self._volume_nodes() if world.claims else None
        out["problems"] = world.check(out["placements"], watch.deleted, volumes)
        return out

    async def _ready(self, scheduler: Scheduler, limit: float) -> float:
        """Seconds from spawn to the scheduler's /readyz answering 200 (its caches synced)."""
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        while time.perf_counter() - scheduler.spawned < limit:
            if scheduler.popen.poll() is not None:
                raise RuntimeError(f"{scheduler.name} exited: {scheduler.tail()}")
            with contextlib.suppress(Exception):
                async with self.session.get(scheduler.ready_url, ssl=insecure, timeout=2) as answer:
                    if answer.status == 200:
                        return time.perf_counter() - scheduler.spawned
            await asyncio.sleep(0.05)
        raise RuntimeError(f"{scheduler.name} not ready after {limit:g} s")

    async def bound_count(self) -> int:
        """Measured pods with a node, as the API server holds them now."""
        _, pods = await self._get(f"/api/v1/namespaces/{MEASURED_NS}/pods")
        return sum(1 for p in pods["items"] if p["spec"].get("nodeName"))

    async def _volume_nodes(self) -> dict[str, str]:
        """Each measured pod's node as its bound volume says (claim -> PV -> affinity)."""
        _, claims = await self._get(f"/api/v1/namespaces/{MEASURED_NS}/persistentvolumeclaims")
        _, volumes = await self._get("/api/v1/persistentvolumes")
        node_of = {
            v["metadata"]["name"]: v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0][
                "matchExpressions"
            ][0]["values"][0]
            for v in volumes["items"]
        }
        return {
            "m-" + c["metadata"]["name"].removeprefix("claim-"): node_of.get(
                c["spec"].get("volumeName") or "", ""
            )
            for c in claims["items"]
        }
