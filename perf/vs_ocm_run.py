"""One controller's run in the side-by-side with OCM (`perf.vs_ocm`), on a real kube-apiserver
shared by every run.

`Bench` holds the control plane (etcd and kube-apiserver, our CRDs installed as the e2e tier
installs them), an HTTPS session as the cluster's admin and a `Watch` of every Placement and
PlacementDecision (the state the snapshots are taken from, and the clock of every change).

`Bench.run` then: starts the controller (`perf.hub_start.commands`: ours as users run it,
`placement run --kubeconfig`; OCM's `ocm-placement controller`); times the cold start until
every Placement has its PlacementSatisfied condition (or is Misconfigured) and its
PlacementDecisions written; then each churn step of `perf.vs_ocm_fleet`, timed to settle: the
step's requests sent, then no Placement status or PlacementDecision change, and the
controller's work queue empty (`workqueue_depth` on its /metrics), for `quiet` seconds
(`QUIET` by default; for the taints, not before the added taints' tolerations lapsed). Per
phase: seconds, the controller's CPU seconds, kube-apiserver's `apiserver_request_total` by
verb and resource (the harness's own requests taken out), PlacementDecision changes and a
snapshot. Then SIGTERM; its peak RSS (VmHWM) is read just before. `Bench.reset` puts the hub
back for the next controller: the churn reverted, every PlacementDecision deleted, every
Placement status cleared.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import ssl
import tempfile
import time
from argparse import Namespace
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perf.kube_creator import Request, post_all
from perf.vs_ocm_fleet import GROUP, STEPS, Hub, Patch, churn, path, revert
from tests.e2e.controlplane import TOKEN, ControlPlane

__all__ = ["OCM", "OURS", "QUIET", "Bench", "Watch"]

OURS, OCM = "ours", "ocm"
QUIET = 2.0
"""Seconds without a change after which a phase is settled (default)."""
_DEPTH = re.compile(r"^workqueue_depth\{[^}]*\} (\S+)$", re.M)
PLACEMENT_LABEL = f"{GROUP}/placement"
_METRIC = re.compile(r"^apiserver_request_total\{([^}]*)\} (\S+)$", re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def request_counts(text: str) -> Counter[str]:
    """`apiserver_request_total` of a /metrics text, summed by "VERB resource[/subresource]"."""
    out: Counter[str] = Counter()
    for labels, value in _METRIC.findall(text):
        got = dict(_LABEL.findall(labels))
        if not got.get("resource"):
            continue
        sub = got.get("subresource")
        out[f"{got['verb']} {got['resource']}{'/' + sub if sub else ''}"] += int(float(value))
    return out


def _key(doc: dict[str, Any]) -> tuple[str, str]:
    return doc["metadata"].get("namespace", ""), doc["metadata"]["name"]


@dataclass
class Watch:
    """Every Placement and PlacementDecision as the API server holds them, followed by watch;
    `last` is when a PlacementDecision or a Placement's status last changed, `changes` counts
    PlacementDecision events."""

    placements: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    decisions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    last: float = 0.0
    changes: int = 0

    def apply(self, kind: str, event: str, doc: dict[str, Any]) -> None:
        key = _key(doc)
        if kind == "placements":
            old = self.placements.get(key)
            if event == "DELETED":
                self.placements.pop(key, None)
                return
            self.placements[key] = doc
            if old is not None and old.get("status") != doc.get("status"):
                self.last = time.monotonic()
            return
        self.changes += 1
        self.last = time.monotonic()
        if event == "DELETED":
            self.decisions.pop(key, None)
        else:
            self.decisions[key] = doc

    def decided(self) -> bool:
        """Every placement has PlacementSatisfied (and decisions written) or is misconfigured."""
        written = {
            (ns, d["metadata"].get("labels", {}).get(PLACEMENT_LABEL))
            for (ns, _), d in self.decisions.items()
        }
        for key, doc in self.placements.items():
            conditions = {
                c["type"]: c["status"] for c in (doc.get("status") or {}).get("conditions") or []
            }
            if conditions.get("PlacementMisconfigured") == "True":
                continue
            if "PlacementSatisfied" not in conditions or key not in written:
                return False
        return bool(self.placements)

    def snapshot(self) -> dict[str, Any]:
        """Per placement ("ns/name"): its conditions and its decisions (PD name, group labels,
        clusters)."""
        out: dict[str, Any] = {}
        for (ns, name), doc in sorted(self.placements.items()):
            conditions = sorted(
                (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
                for c in (doc.get("status") or {}).get("conditions") or []
            )
            out[f"{ns}/{name}"] = {"conditions": conditions, "decisions": []}
        for (ns, name), doc in sorted(self.decisions.items()):
            labels = doc["metadata"].get("labels", {})
            owner = out.get(f"{ns}/{labels.get(PLACEMENT_LABEL)}")
            if owner is None:
                continue
            clusters = [d["clusterName"] for d in (doc.get("status") or {}).get("decisions") or []]
            owner["decisions"].append(
                [
                    name,
                    labels.get(f"{GROUP}/decision-group-index", ""),
                    labels.get(f"{GROUP}/decision-group-name", ""),
                    clusters,
                ]
            )
        return out


@dataclass
class Bench:
    """The shared control plane, its client and the watch (module docstring)."""

    plane: ControlPlane
    workdir: Path
    hub: Hub
    session: Any = None
    tls: ssl.SSLContext = field(default_factory=ssl.create_default_context)
    watch: Watch = field(default_factory=Watch)
    quiet: float = QUIET
    say: Any = None  # told each phase's figures as it ends
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @classmethod
    def start(cls, hub: Hub) -> Bench:
        root = Path(__file__).resolve().parents[1]
        plane = ControlPlane.from_env().start()
        try:
            plane.kubectl("apply", "-k", str(root / "config" / "crds"))
            plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        except BaseException:
            plane.stop()
            raise
        bench = cls(plane, Path(tempfile.mkdtemp(prefix="vs-ocm-")), hub)
        bench.tls = ssl.create_default_context(cafile=str(plane.ca_file))
        return bench

    async def open(self) -> None:
        import aiohttp

        headers = {"Authorization": f"Bearer {TOKEN}"}
        connector = aiohttp.TCPConnector(ssl=self.tls, limit=64)
        self.session = aiohttp.ClientSession(headers=headers, connector=connector)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.session is not None:
            await self.session.close()
        self.plane.stop()

    # -- the API ----------------------------------------------------------------------------

    async def create(self) -> None:
        """The hub: every object, then the status of those that have one."""
        requests = [Request(path(d), json.dumps(d).encode()) for d in self.hub.creates]
        namespaces = [r for r in requests if r.path == "/api/v1/namespaces"]
        await post_all(self.plane.url, namespaces, tls=self.tls, token=TOKEN)
        rest = [r for r in requests if r.path != "/api/v1/namespaces"]
        await post_all(self.plane.url, rest, tls=self.tls, token=TOKEN)
        await self.send(self.hub.statuses)
        for kind in ("placements", "placementdecisions"):
            self._tasks.append(asyncio.create_task(self._follow(kind)))
        while len(self.watch.placements) < len(self.hub.placements):
            await asyncio.sleep(0.1)

    async def send(self, patches: list[Patch], workers: int = 30) -> None:
        """Every request, `workers` at a time; any answer but 2xx fails."""
        pending = iter(patches)

        async def worker() -> None:
            for patch in pending:
                headers = {"Content-Type": patch.content_type}
                url = self.plane.url + patch.path
                async with self.session.request(
                    patch.method, url, data=patch.encoded(), headers=headers
                ) as answer:
                    if answer.status >= 300:
                        text = (await answer.text())[:300]
                        raise RuntimeError(f"{patch.method} {patch.path}: {answer.status} {text}")

        await asyncio.gather(*(worker() for _ in range(workers)))

    async def _get(self, url_path: str, **params: str) -> Any:
        async with self.session.get(self.plane.url + url_path, params=params) as answer:
            if answer.status >= 300:
                raise RuntimeError(f"GET {url_path}: {answer.status}")
            return await (answer.json() if url_path != "/metrics" else answer.text())

    async def requests(self) -> Counter[str]:
        return request_counts(str(await self._get("/metrics")))

    async def _follow(self, kind: str) -> None:
        """List then watch `kind` in every namespace, for good (re-listing if a watch ends)."""
        collection = f"/apis/{GROUP}/v1beta1/{kind}"
        while True:
            listed = await self._get(collection)
            for doc in listed["items"]:
                self.watch.apply(kind, "ADDED", doc)
            params = {
                "watch": "true",
                "resourceVersion": listed["metadata"]["resourceVersion"],
                "timeoutSeconds": "3600",
            }
            with contextlib.suppress(Exception):
                url = self.plane.url + collection
                async with self.session.get(url, params=params, timeout=None) as stream:
                    async for line in stream.content:
                        event = json.loads(line)
                        if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            self.watch.apply(kind, event["type"], event["object"])

    # -- a run ------------------------------------------------------------------------------

    async def run(self, name: str, round_: int, args: Namespace, limit: float) -> dict[str, Any]:
        """One controller: cold start, then every churn step (module docstring)."""
        from perf.hub_start import commands
        from perf.measured_process import MeasuredProcess

        argv, ready = commands(self.plane.kubeconfig, self.plane.assets, args)[name]
        env = {
            k: v for k, v in self.plane.env().items() if k not in ("KUBECONFIG", "POD_NAMESPACE")
        }
        log = self.workdir / f"{name}-{round_}.log"
        out: dict[str, Any] = {"controller": name, "round": round_, "phases": {}}
        requests = await self.requests()
        changes = self.watch.changes
        process = MeasuredProcess.spawn(name, argv, ready, log, env)
        metrics = ready.rsplit("/", 1)[0] + "/metrics"
        popen = process.popen
        try:
            begun = time.monotonic()
            while not self.watch.decided():
                if popen.poll() is not None:
                    raise RuntimeError(f"{name} exited {popen.returncode}: {process.tail()}")
                if time.monotonic() - begun > limit:
                    raise RuntimeError(f"{name}: not every placement decided in {limit:g} s")
                await asyncio.sleep(0.05)
            cold = time.monotonic() - begun
            phase = await self._settle(metrics, begun, limit)
            phase["seconds"] = round(cold, 3)
            out["phases"]["cold"] = await self._figures(phase, process, 0.0, requests, changes, [])
            self._said(name, "cold", out["phases"]["cold"])
            for step in args.steps:
                cpu, requests, changes = process.cpu(), await self.requests(), self.watch.changes
                sent = churn(step, self.hub, round_, lapse=args.lapse)
                begun = time.monotonic()
                await self.send(sent)
                floor = begun + args.lapse + 0.5 if step == "taints" else 0.0
                phase = await self._settle(metrics, begun, limit, floor)
                out["phases"][step] = await self._figures(
                    phase, process, cpu, requests, changes, sent
                )
                self._said(name, step, out["phases"][step])
            out["rss_mib"] = process.rss_mib()
            out["cpu_total_s"] = round(process.cpu(), 2)
        finally:
            out["stop_s"], out["exit_code"] = (round(x, 3) for x in process.stop())
            out["log_tail"] = process.tail()
        return out

    def _said(self, name: str, phase: str, figures: dict[str, Any]) -> None:
        if self.say is not None:
            self.say(
                f"  {name} {phase}: {figures['seconds']} s, CPU {figures['cpu_s']} s, "
                f"{figures['decision_changes']} decision changes"
            )

    async def _depth(self, url: str) -> int | None:
        """The controller's work queues' depth from its /metrics (None: not answering)."""
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        with contextlib.suppress(Exception):
            async with self.session.get(url, ssl=insecure, timeout=5) as answer:
                if answer.status == 200:
                    return sum(int(float(v)) for v in _DEPTH.findall(await answer.text()))
        return None

    async def _settle(
        self, metrics: str, begun: float, limit: float, floor: float = 0.0
    ) -> dict[str, Any]:
        """Wait until the controller's work queue was empty and no change was seen for `quiet`
        seconds, and `floor` passed. `settled_s`: from `begun` to the last change (0 when
        nothing changed); `drained_s`: to the last time its queue held work; `seconds`: the
        later of the two."""
        start_last = self.watch.last
        busy = begun
        while True:
            now = time.monotonic()
            depth = await self._depth(metrics)
            if depth != 0:
                busy = now
            calm = max(self.watch.last, busy, begun)
            if now - calm >= self.quiet and now >= floor:
                break
            if now - begun > limit:
                break
            await asyncio.sleep(0.1)
        last = self.watch.last
        settled = max(0.0, last - begun) if last != start_last else 0.0
        drained = max(0.0, busy - begun)
        return {
            "settled_s": round(settled, 3),
            "drained_s": round(drained, 3),
            "seconds": round(max(settled, drained), 3),
            "snapshot": self.watch.snapshot(),
        }

    async def _figures(
        self,
        phase: dict[str, Any],
        process: Any,
        cpu_from: float,
        requests: Counter[str],
        changes: int,
        sent: list[Patch],
    ) -> dict[str, Any]:
        after = await self.requests()
        delta = after - requests
        for patch in sent:  # the harness's own
            resource = (
                patch.path.split("/")[-2]
                if not patch.path.endswith("/status")
                else (patch.path.split("/")[-3] + "/status")
            )
            delta[f"{patch.method} {resource}"] -= 1
        delta["GET "] = 0
        phase["cpu_s"] = round(process.cpu() - cpu_from, 2)
        phase["requests"] = {k: v for k, v in sorted(delta.items()) if v > 0}
        phase["decision_changes"] = self.watch.changes - changes
        phase["sent"] = len(sent)
        return phase

    async def reset(self, round_: int) -> None:
        """Put the hub back (module docstring)."""
        for step in STEPS:
            await self.send(revert(step, self.hub, round_))
        namespaces = sorted({ns for ns, _ in self.hub.placements})
        for ns in namespaces:
            url = f"{self.plane.url}/apis/{GROUP}/v1beta1/namespaces/{ns}/placementdecisions"
            async with self.session.delete(url) as answer:
                if answer.status >= 300:
                    raise RuntimeError(f"DELETE {url}: {answer.status}")
        clear = [
            Patch(
                "PATCH",
                f"/apis/{GROUP}/v1beta1/namespaces/{ns}/placements/{name}/status",
                {"status": None},
            )
            for ns, name in sorted(self.hub.placements)
        ]
        await self.send(clear)
        deadline = time.monotonic() + 120
        while self.watch.decisions or any(p.get("status") for p in self.watch.placements.values()):
            if time.monotonic() > deadline:
                raise RuntimeError("decisions or placement status left after the reset")
            await asyncio.sleep(0.1)
