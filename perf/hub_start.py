"""The hub controller's start, on a real kube-apiserver, ours beside OCM's: `python -m
perf.hub_start [--clusters 500] [--placements 100] [--rounds 2]` (needs $KUBEBUILDER_ASSETS with
etcd, kube-apiserver and OCM's `ocm-placement`; kubectl on PATH).

One control plane (tests/e2e/controlplane.py, our CRDs installed as the e2e tier installs
them) holds the fleet: CLUSTERS ManagedClusters in one ManagedClusterSet, bound to a namespace.
Each round creates PLACEMENTS Placements there (each asking for `--select` clusters of the set),
starts one controller, and times from the spawn: its first log line, ready (our /readyz; OCM's
/healthz on its --listen port), the first PlacementDecision with decisions, every placement
decided; then SIGTERM to exit. The round's placements and decisions are deleted before the
next, and the two controllers take turns (ours, OCM, ours, OCM, ...).

Client rate limits: ours has none; OCM's is given `--kube-api-qps`/`--kube-api-burst` (5000 by
default here, so that neither is throttled). OCM runs with `--disable-leader-election`; ours
without `--leader-elect`. The figures go to stdout as one JSON line, then a table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GROUP = "cluster.open-cluster-management.io"
SET_LABEL = f"{GROUP}/clusterset"
PLACEMENT_LABEL = f"{GROUP}/placement"
NAMESPACE = "hub-start"
SET_NAME = "hub-start"
OCM_NS = "open-cluster-management-hub"  # where OCM's controller says it runs
GUARD = 300.0  # seconds a controller may take to decide everything

__all__ = ["Timeline", "cluster_docs", "decided", "main", "placement_docs"]


# -- the objects (pure) ---------------------------------------------------------------------


def cluster_docs(count: int, set_name: str = SET_NAME) -> list[dict[str, Any]]:
    """The fleet: `count` ManagedClusters in `set_name` (a few labels to select on)."""
    return [
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "ManagedCluster",
            "metadata": {
                "name": f"c{i:05d}",
                "labels": {SET_LABEL: set_name, "zone": f"z{i % 3}", "tier": f"t{i % 5}"},
            },
            "spec": {"hubAcceptsClient": True},
        }
        for i in range(count)
    ]


def set_docs(namespace: str = NAMESPACE, set_name: str = SET_NAME) -> list[dict[str, Any]]:
    """The namespace, the set (its clusters by the set label) and its binding there."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": f"{GROUP}/v1beta2",
            "kind": "ManagedClusterSet",
            "metadata": {"name": set_name},
            "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}},
        },
        {
            "apiVersion": f"{GROUP}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": set_name, "namespace": namespace},
            "spec": {"clusterSet": set_name},
        },
    ]


def placement_docs(
    count: int, select: int, namespace: str = NAMESPACE, set_name: str = SET_NAME
) -> list[dict[str, Any]]:
    """`count` Placements over the set, each for `select` clusters; every other one with a
    label predicate, so that the filters have work."""
    docs = []
    for i in range(count):
        spec: dict[str, Any] = {"clusterSets": [set_name], "numberOfClusters": select}
        if i % 2:
            selector = {
                "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z0"]}]
            }
            spec["predicates"] = [{"requiredClusterSelector": {"labelSelector": selector}}]
        docs.append(
            {
                "apiVersion": f"{GROUP}/v1beta1",
                "kind": "Placement",
                "metadata": {"name": f"p{i:04d}", "namespace": namespace},
                "spec": spec,
            }
        )
    return docs


def as_list(docs: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})


def decided(decisions: list[dict[str, Any]]) -> set[str]:
    """The placements (by name) that have a PlacementDecision with at least one decision."""
    return {
        pd["metadata"].get("labels", {}).get(PLACEMENT_LABEL, "")
        for pd in decisions
        if (pd.get("status") or {}).get("decisions")
    } - {""}


# -- one controller's start ------------------------------------------------------------------


@dataclass
class Timeline:
    """Seconds from the spawn (None: never happened before the guard)."""

    controller: str
    first_log: float | None = None
    ready: float | None = None
    first_decision: float | None = None
    all_decided: float | None = None
    sigterm_to_exit: float | None = None
    exit_code: int | None = None


class _Api:
    """GETs on the control plane with its admin token (cheap enough to poll every 50 ms)."""

    def __init__(self, url: str, ca_file: Path, token: str) -> None:
        self.url = url
        self.context = ssl.create_default_context(cafile=str(ca_file))
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}

    def get(self, path: str) -> Any:
        request = urllib.request.Request(self.url + path, headers=self.headers)
        with urllib.request.urlopen(request, context=self.context, timeout=10) as answer:
            return json.load(answer)

    def decisions(self, namespace: str) -> list[dict[str, Any]]:
        path = f"/apis/{GROUP}/v1beta1/namespaces/{namespace}/placementdecisions"
        items: list[dict[str, Any]] = self.get(path)["items"]
        return items


def _ready(url: str) -> bool:
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # OCM's serving certificate is self-signed
    try:
        with urllib.request.urlopen(url, timeout=1, context=insecure) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _first_line(stream: Any, start: float, timeline: Timeline, log: Path) -> None:
    with log.open("wb") as out:
        for line in stream:
            if timeline.first_log is None and line.strip():
                timeline.first_log = time.monotonic() - start
            out.write(line)


def time_start(
    name: str,
    argv: list[str],
    ready_url: str,
    api: _Api,
    placements: int,
    log: Path,
    env: dict[str, str],
) -> Timeline:
    """Spawn `argv`, follow it until every placement is decided, SIGTERM it."""
    timeline = Timeline(name)
    start = time.monotonic()
    popen = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
    )
    reader = threading.Thread(target=_first_line, args=(popen.stdout, start, timeline, log))
    reader.start()
    try:
        while time.monotonic() - start < GUARD and popen.poll() is None:
            now = time.monotonic() - start
            if timeline.ready is None and _ready(ready_url):
                timeline.ready = now
            done = decided(api.decisions(NAMESPACE))
            if done and timeline.first_decision is None:
                timeline.first_decision = now
            if len(done) >= placements:
                timeline.all_decided = now
                if timeline.ready is not None:
                    break
            time.sleep(0.05)
    finally:
        stop = time.monotonic()
        popen.send_signal(signal.SIGTERM)
        try:
            timeline.exit_code = popen.wait(30)
            timeline.sigterm_to_exit = time.monotonic() - stop
        except subprocess.TimeoutExpired:
            popen.kill()
            timeline.exit_code = popen.wait()
        reader.join(10)
    return timeline


# -- the run ---------------------------------------------------------------------------------


def _free_port() -> int:
    from tests.e2e.controlplane import free_port

    return free_port()


def commands(
    kubeconfig: Path, assets: Path, args: argparse.Namespace
) -> dict[str, tuple[list[str], str]]:
    """Each controller's argv and its readiness URL."""
    ours_port, ocm_port = _free_port(), _free_port()
    placement = shutil.which("placement")
    command = [placement] if placement else [sys.executable, "-m", "controllers.cli"]
    ours = [*command, "run", "--kubeconfig", str(kubeconfig), "--debug-addr", ""]
    ours += ["--http-addr", f"127.0.0.1:{ours_port}"]
    ocm = [str(assets / "ocm-placement"), "controller", "--kubeconfig", str(kubeconfig)]
    ocm += ["--disable-leader-election", "--namespace", OCM_NS]
    ocm += [f"--kube-api-qps={args.qps}", f"--kube-api-burst={args.burst}"]
    ocm += ["--listen", f"127.0.0.1:{ocm_port}"]
    return {
        "ours": (ours, f"http://127.0.0.1:{ours_port}/readyz"),
        "ocm": (ocm, f"https://127.0.0.1:{ocm_port}/healthz"),
    }


def _clear(plane: Any) -> None:
    kinds = "placements,placementdecisions"
    plane.kubectl("delete", kinds, "--all", "-n", NAMESPACE, "--wait=true", timeout=300)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tests.e2e.controlplane import TOKEN, ControlPlane

    folder = Path(tempfile.mkdtemp(prefix="hub-start-"))
    plane = ControlPlane.from_env().start()
    try:
        plane.kubectl("apply", "-k", str(ROOT / "config" / "crds"))
        plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        ocm_namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OCM_NS}}
        fleet = [ocm_namespace, *set_docs(), *cluster_docs(args.clusters)]
        plane.kubectl("create", "-f", "-", input=as_list(fleet), timeout=600)
        api = _Api(plane.url, plane.ca_file, TOKEN)
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "POD_NAMESPACE")}
        timelines: list[Timeline] = []
        for round_ in range(args.rounds):
            for name in ("ours", "ocm"):
                if timelines:  # the previous round's placements and decisions go first
                    _clear(plane)
                argv, ready_url = commands(plane.kubeconfig, plane.assets, args)[name]
                docs = placement_docs(args.placements, args.select)
                plane.kubectl("create", "-f", "-", input=as_list(docs), timeout=300)
                logs = folder / f"{name}-{round_}.log"
                timelines.append(time_start(name, argv, ready_url, api, args.placements, logs, env))
    finally:
        plane.stop()
    return {
        "clusters": args.clusters,
        "placements": args.placements,
        "select": args.select,
        "ocm_qps": args.qps,
        "ocm_burst": args.burst,
        "logs": str(folder),
        "runs": [asdict(t) for t in timelines],
    }


COLUMNS = ("first_log", "ready", "first_decision", "all_decided", "sigterm_to_exit")


def table(result: dict[str, Any]) -> str:
    """Median seconds per controller and column (each run's figures after a `/`)."""
    lines = ["| controller | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for name in ("ours", "ocm"):
        runs = [r for r in result["runs"] if r["controller"] == name]
        cells = []
        for column in COLUMNS:
            values = [r[column] for r in runs if r[column] is not None]
            if len(values) < len(runs) or not values:
                cells.append("— (" + ", ".join(_s(r[column]) for r in runs) + ")")
            else:
                cells.append(
                    f"{statistics.median(values):.2f} ({' / '.join(f'{v:.2f}' for v in values)})"
                )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _s(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f}"


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(prog="python -m perf.hub_start", description=__doc__)
    parse.add_argument("--clusters", type=int, default=500)
    parse.add_argument("--placements", type=int, default=100)
    parse.add_argument("--select", type=int, default=10, help="numberOfClusters per placement")
    parse.add_argument("--rounds", type=int, default=2, help="ours then OCM, this many times")
    parse.add_argument("--qps", type=int, default=5000, help="OCM's --kube-api-qps")
    parse.add_argument("--burst", type=int, default=5000, help="OCM's --kube-api-burst")
    return parse


def main(argv: list[str] | None = None) -> int:
    result = run(parser().parse_args(argv))
    print(json.dumps(result))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
