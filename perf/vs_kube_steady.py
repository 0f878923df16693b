"""scheduler_perf's steady-state DRA workload side by side with kube-scheduler:
`SteadyStateClusterResourceClaimTemplate`, on the real control plane of `perf.vs_kube`.

    python -m perf.vs_kube_steady                      # 500 nodes, 10 s per run, 2 rounds
    python -m perf.vs_kube_steady --nodes 100 --seconds 5 --rounds 1 --out /tmp/steady

The cluster of `SchedulingWithResourceClaimTemplate` (nodes publishing 10 devices each, the
DeviceClass, the claim template) with `--allocated` claims allocated beforehand, as
scheduler_perf's `initClaims` (0: its `empty` variant; half the devices: `half`; all but 10:
`full`). Then, for `--seconds`, ten pods are created, the run waits until all ten are bound,
deletes them (kube-controller-manager deletes their claims, which frees the devices) and starts
again: the figure is pods bound per second over the run, each pod's claim made by
kube-controller-manager's resourceclaim controller as on a real cluster. Ours and
kube-scheduler alternate, the order flipped each round. The report is `vs-kube-steady.md` and
`.json` in `--out`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

from perf.side_by_side import missing_binaries
from perf.vs_kube_shapes import (
    BEFORE_NS,
    DEVICES_PER_NODE,
    DRA_DRIVER,
    MEASURED_NS,
    claim_pods,
    world,
)

__all__ = ["main", "steady_run"]

SHAPE = "SchedulingWithResourceClaimTemplate"
BATCH = 10
"""scheduler_perf's steady state: ten pods at a time."""
_CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"
REQUEST = {"name": "req-0", "exactly": {"deviceClassName": "test-class"}}


def _allocated_claim(i: int, nodes: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A claim of one device (in the namespace of the pods before) and the status that
    allocates it device `i` of the nodes' pools, filled node by node."""
    node = f"node-{i // DEVICES_PER_NODE % nodes:05d}"
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"init-{i}", "namespace": BEFORE_NS},
        "spec": {
            "devices": {
                "requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]
            }
        },
    }
    result = {
        "request": "req-0",
        "driver": DRA_DRIVER,
        "pool": node,
        "device": f"instance-{i % DEVICES_PER_NODE}",
    }
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    status = {
        "allocation": {
            "devices": {"results": [result]},
            "nodeSelector": {"nodeSelectorTerms": [term]},
        }
    }
    return claim, status


async def steady_run(
    bench: Any, name: str, nodes: int, allocated: int, seconds: float
) -> dict[str, Any]:
    """One scheduler: the cluster, the allocated claims, then batches for `seconds`."""
    from perf.kube_creator import post_all
    from perf.vs_kube_run import Scheduler, per_run, requests
    from tests.e2e.controlplane import TOKEN

    w = world(SHAPE, nodes, 0, 0)
    await bench.reset()
    await bench._delete_all(_CLAIMS.format(ns=BEFORE_NS))
    await bench._until(_CLAIMS.format(ns=BEFORE_NS), present=False)
    await bench.prepare(w)
    await bench.create(w.nodes)
    await bench.create(per_run(w))
    for i in range(allocated):
        claim, status = _allocated_claim(i, nodes)
        path = _CLAIMS.format(ns=BEFORE_NS)
        await bench._post(path, claim)
        url = f"{bench.plane.url}{path}/{claim['metadata']['name']}/status"
        async with bench.session.get(url) as answer:
            current = await answer.json()
        current["status"] = status
        async with bench.session.put(url, json=current) as answer:
            if answer.status >= 300:
                raise RuntimeError(f"PUT {url}: {answer.status} {await answer.text()}")
    log = bench.workdir / f"{name}-steady.log"
    scheduler = Scheduler.start(name, bench.plane, bench.config, log)
    bound = batches = 0
    pods_url = f"{bench.plane.url}/api/v1/namespaces/{MEASURED_NS}/pods"
    try:
        await bench._ready(scheduler, 120.0)
        cpu_from = scheduler.cpu()
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            names = [f"s{batches}-{i}" for i in range(BATCH)]
            batch = claim_pods(names, labels={"batch": str(batches)})
            await post_all(bench.plane.url, requests(batch), tls=bench.tls, token=TOKEN)
            while True:
                async with bench.session.get(
                    pods_url, params={"labelSelector": f"batch={batches}"}
                ) as answer:
                    items = (await answer.json())["items"]
                if sum(1 for p in items if p["spec"].get("nodeName")) == BATCH:
                    break
                if time.perf_counter() - began > seconds + 120:
                    raise RuntimeError(f"{name}: batch {batches} not bound: {scheduler.tail()}")
                await asyncio.sleep(0.01)
            bound += BATCH
            batches += 1
            for pod in names:
                await bench._delete_all(f"/api/v1/namespaces/{MEASURED_NS}/pods/{pod}")
        elapsed = time.perf_counter() - began
        cpu = scheduler.cpu() - cpu_from
        rss = scheduler.rss_mib()
    finally:
        scheduler.stop()
    return {
        "scheduler": name,
        "nodes": nodes,
        "allocated": allocated,
        "bound": bound,
        "seconds": round(elapsed, 3),
        "pods_per_s": round(bound / elapsed, 1),
        "cpu_ms_per_pod": round(1000 * cpu / bound, 3) if bound else None,
        "rss_mib": rss,
    }


def _table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| scheduler | pods/s (median) | runs | CPU ms/pod | RSS MiB |",
        "|---|---|---|---|---|",
    ]
    figures: dict[str, float] = {}
    for name in ("ours", "kube-scheduler"):
        mine = [r for r in runs if r["scheduler"] == name]
        if not mine:
            continue
        rate = round(median(r["pods_per_s"] for r in mine), 1)
        figures[name] = rate
        each = ", ".join(str(r["pods_per_s"]) for r in mine)
        cpu = median(r["cpu_ms_per_pod"] or 0.0 for r in mine)
        rss = median(r["rss_mib"] or 0.0 for r in mine)
        lines.append(f"| {name} | {rate} | {each} | {cpu:.2f} | {rss:.0f} |")
    if len(figures) == 2 and figures["kube-scheduler"]:
        ratio = figures["ours"] / figures["kube-scheduler"]
        lines.append(f"| *ours / kube* | *{ratio:.2f}x* | | | |")
    return lines


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    from perf.vs_kube_run import KUBE, OURS, Bench

    bench = Bench.start()
    runs: list[dict[str, Any]] = []
    try:
        await bench.open()
        for r in range(args.rounds):
            for name in (OURS, KUBE) if r % 2 == 0 else (KUBE, OURS):
                print(f"round {r + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
                runs.append(await steady_run(bench, name, args.nodes, args.allocated, args.seconds))
    finally:
        await bench.close()
    return {"runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.vs_kube_steady", description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--allocated", type=int, default=0, help="claims allocated before")
    parser.add_argument("--seconds", type=float, default=10.0, help="per run (default 10)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("perf/reports/vs-kube-steady"))
    args = parser.parse_args(argv)
    if missing_binaries("perf.vs_kube_steady", "etcd", "kube-apiserver", "kube-scheduler"):
        return 1
    started = datetime.now(UTC)
    result = asyncio.run(_main(args))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "vs-kube-steady.json").write_text(json.dumps(result, indent=1))
    head = [
        "# SteadyStateClusterResourceClaimTemplate beside kube-scheduler",
        "",
        f"- started: {started.isoformat(timespec='seconds')}",
        f"- nodes: {args.nodes} x {DEVICES_PER_NODE} devices, claims allocated before: "
        f"{args.allocated}, {args.seconds:g} s per run, {args.rounds} rounds, "
        f"batches of {BATCH} pods",
        "- kube-scheduler: v1.36 from KUBEBUILDER_ASSETS, clientConnection qps/burst 5000; "
        "ours: placement scheduler run --config (the same file), no client-side limit",
        "",
    ]
    (args.out / "vs-kube-steady.md").write_text("\n".join(head + _table(result["runs"])) + "\n")
    print("\n".join(_table(result["runs"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
