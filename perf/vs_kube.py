"""Our pod scheduler side by side with kube-scheduler on one real kube-apiserver.

    python -m perf.vs_kube                    # every shape, both modes, 2 rounds (~40 min)
    python -m perf.vs_kube --quick            # smaller sizes (~10 min)
    python -m perf.vs_kube --smoke            # tiny sizes, one round: the harness runs
    python -m perf.vs_kube --shapes SchedulingBasic --rounds 3 --out perf/results-vs-kube

Needs `KUBEBUILDER_ASSETS` (etcd, kube-apiserver, kube-controller-manager, kube-scheduler:
the e2e tier's binaries; docs/architecture.md says where to get them). One control plane
serves the whole run. Each shape of `perf.vs_kube_shapes` runs in two modes: `before` (the
measured pods are pending when the scheduler starts: start to first bind, then throughput from
the first bind) and `during` (the scheduler is ready, then the pods are created, 30 POSTs in
flight as scheduler_perf creates them: throughput from the first create). Every (shape, mode)
runs ours and kube-scheduler alternately, `--rounds` times, the order flipped each round.

Then one interrupted run per scheduler (`SchedulingWithPVs`, pods pending before): SIGTERM once
half the pods are bound; no bind may land after the process is gone, and a second instance
must bind the rest, each pod on its volume's node (nothing half done is left behind).

The report (`--out`, default perf/reports/vs-kube): `vs-kube.md` (the side-by-side tables, the
targets as ratios to kube-scheduler in the same run, verdicts), `vs-kube.json` (every run), and
plots. kube-scheduler runs with clientConnection qps/burst 5000 (`perf.vs_kube_run.QPS`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perf.side_by_side import add_report_options, missing_binaries, render
from perf.vs_kube_shapes import SHAPES, SIZES, World, world

__all__ = ["main", "side_by_side"]

MODES = ("before", "during")


def _bytecode() -> None:
    """Our packages compiled to bytecode first, as an installed wheel has them: a start that
    compiles every module from source (PYTHONDONTWRITEBYTECODE, a fresh checkout) measures the
    compiler, 0.3 s of it."""
    import compileall

    root = Path(__file__).resolve().parent.parent
    for package in ("apis", "controllers", "placement", "plugins"):
        compileall.compile_dir(root / package, quiet=2)


def _order(round_: int) -> tuple[str, str]:
    from perf.vs_kube_run import KUBE, OURS

    return (OURS, KUBE) if round_ % 2 == 0 else (KUBE, OURS)


async def _interrupted(bench: Any, name: str, shape: World, limit: float) -> dict[str, Any]:
    """SIGTERM mid-run, then a second instance finishes (module docstring)."""
    from perf.child_kube import BindWatch
    from perf.vs_kube_run import Scheduler, per_run
    from perf.vs_kube_shapes import MEASURED_NS

    await bench.reset()
    await bench.prepare(shape)
    for docs in (shape.nodes, per_run(shape)):
        await bench.create(docs)
    await bench.create(shape.claims)
    await bench.create(shape.measured)
    _, doc = await bench._get("/api/v1/pods", limit="1")
    keys = {f"{MEASURED_NS}/{p['metadata']['name']}" for p in shape.measured}
    watch = BindWatch(keys)
    watch.began = time.perf_counter()
    rv = doc["metadata"]["resourceVersion"]
    watching = asyncio.create_task(watch.run(bench.session, bench.plane.url, rv))
    out: dict[str, Any] = {"scheduler": name, "shape": shape.shape, "pods": shape.expected}
    try:
        first = Scheduler.start(name, bench.plane, bench.config, bench.workdir / f"{name}-1.log")
        half = shape.expected // 2
        while len(watch.bound) < half and time.perf_counter() - first.spawned < limit:
            await asyncio.sleep(0.01)
        out["bound_at_sigterm"] = len(watch.bound)
        out["stop_s"], out["exit_code"] = (round(x, 3) for x in first.stop())
        out["bound_at_exit"] = await bench.bound_count()  # a consistent read, not the watch
        await asyncio.sleep(2.0)
        out["bound_after_exit"] = await bench.bound_count()  # a bind landing now was in flight
        second = Scheduler.start(name, bench.plane, bench.config, bench.workdir / f"{name}-2.log")
        while len(watch.bound) < shape.expected and time.perf_counter() - second.spawned < limit:
            await asyncio.sleep(0.05)
        out["bound_in_the_end"] = len(watch.bound)
        second.stop()
    finally:
        watching.cancel()
    placements = {key.split("/", 1)[1]: node for key, node in watch.bound.items()}
    volumes = await bench._volume_nodes()
    problems = shape.check(placements, watch.deleted, volumes)
    if out["bound_after_exit"] != out["bound_at_exit"]:
        problems.append(f"{out['bound_after_exit'] - out['bound_at_exit']} binds after exit")
    claimed = [pod for pod, node in volumes.items() if node and pod not in placements]
    if claimed:
        problems.append(f"{len(claimed)} volumes bound to pods never bound")
    out["problems"] = problems
    return out


async def side_by_side(
    mode: str,
    shapes: list[str],
    modes: list[str],
    rounds: int,
    limit: float,
    interrupted: bool,
    progress: Any = None,
    save: Any = None,
) -> dict[str, Any]:
    """Every run (module docstring); `progress(text)` is told what runs next, `save(result)`
    gets the result so far after each run (an interrupted run keeps what it measured)."""
    from perf.vs_kube_run import KUBE, OURS, QPS, Bench

    say = progress or (lambda text: None)
    _bytecode()
    say("starting the control plane")
    bench = Bench.start()
    runs: list[dict[str, Any]] = []
    stops: list[dict[str, Any]] = []
    result = {
        "sizes": {s: SIZES[mode][s] for s in shapes},
        "settings": {
            "kube-scheduler": f"v1.36 from KUBEBUILDER_ASSETS, clientConnection qps/burst {QPS}",
            "ours": "placement scheduler run --config (the same file), no client-side limit",
        },
        "runs": runs,
        "interrupted": stops,
    }
    keep = save or (lambda result: None)
    try:
        await bench.open()
        for r in range(rounds):
            for shape in shapes:
                w = world(shape, *SIZES[mode][shape])
                for how in modes:
                    for name in _order(r):
                        say(f"round {r + 1}/{rounds}: {shape}, pods {how}, {name}")
                        out = await bench.run(name, w, how, limit)
                        out.update(round=r, nodes=len(w.nodes), before=len(w.before))
                        runs.append(out)
                        keep(result)
        if interrupted:
            w = world("SchedulingWithPVs", *SIZES[mode]["SchedulingWithPVs"])
            for name in (OURS, KUBE):
                say(f"SIGTERM mid-run: {name}")
                stops.append(await _interrupted(bench, name, w, limit))
                keep(result)
    finally:
        await bench.close()
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m perf.vs_kube",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller sizes")
    size.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--rounds", type=int, default=None, help="default 2 (smoke: 1)")
    parser.add_argument("--limit", type=float, default=240.0, help="seconds per run at most")
    parser.add_argument(
        "--no-interrupted", action="store_true", help="skip the SIGTERM-mid-run check"
    )
    add_report_options(parser, "perf/reports/vs-kube")
    return parser


def main(argv: list[str] | None = None) -> int:
    from perf.vs_kube_report import write

    args = _parser().parse_args(argv)
    out: Path = args.out
    if args.render:
        return render(out, "vs-kube.json", write)
    if missing_binaries(
        "perf.vs_kube", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"
    ):
        return 1
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    rounds = args.rounds or (1 if mode == "smoke" else 2)
    began = time.perf_counter()
    started = datetime.now(UTC).replace(microsecond=0).isoformat()

    def say(text: str) -> None:
        print(f"[{time.perf_counter() - began:6.0f} s] {text}", file=sys.stderr, flush=True)

    from perf.harness import machine

    out.mkdir(parents=True, exist_ok=True)
    header = {"run": f"{mode}, {rounds} rounds", "started": started, "machine": machine()}

    def save(result: dict[str, Any]) -> None:
        result["header"] = {**header, "took": f"{time.perf_counter() - began:.0f} s"}
        (out / "vs-kube.json").write_text(json.dumps(result, indent=1))

    result = asyncio.run(
        side_by_side(
            mode, args.shapes, args.modes, rounds, args.limit, not args.no_interrupted, say, save
        )
    )
    save(result)
    report = write(out, result)
    print(f"report: {report}")
    # kube-scheduler's problems are reported, not ours to fail on (PreemptionBasic: kube may
    # evict more victims than preemptors when a nominated node is taken meanwhile).
    runs = [*result["runs"], *result["interrupted"]]
    for r in runs:
        if r.get("problems"):
            print(f"{r['scheduler']} {r['shape']}: {'; '.join(r['problems'])}", file=sys.stderr)
    failed = [r for r in runs if r.get("problems") and r["scheduler"] != "kube-scheduler"]
    if args.json:
        print(json.dumps(summary(result, report, failed)))
        return 0
    return 1 if failed else 0


def summary(result: dict[str, Any], report: Path, failed: list[dict[str, Any]]) -> dict[str, Any]:
    """The one JSON line `--json` prints for the harness (`python -m perf`)."""
    from perf.vs_kube_report import verdicts

    checks = verdicts(result["runs"])
    throughput = [c[3] for c in checks if c[0] == "throughput" and c[3] is not None]
    return {
        "report": str(report),
        "lowest_throughput_ratio": round(min(throughput), 3) if throughput else None,
        "verdicts": [list(c) for c in checks],
        "problems": [f"{r['shape']}: {'; '.join(r['problems'])}" for r in failed],
    }


if __name__ == "__main__":
    sys.exit(main())
