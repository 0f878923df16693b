"""The hub controller side by side with OCM's placement controller on one real kube-apiserver.

    python -m perf.vs_ocm                 # 5,000 clusters x 2,000 placements, 2 rounds
    python -m perf.vs_ocm --quick         # 1,000 x 300
    python -m perf.vs_ocm --smoke         # 40 x 15, one round, one churn step: the harness runs
    python -m perf.vs_ocm --clusters 2000 --placements 500 --rounds 3 --out perf/results-vs-ocm

Needs `KUBEBUILDER_ASSETS` with etcd, kube-apiserver and OCM's `ocm-placement` (built from
open-cluster-management-io/ocm 00f84c32b, `cmd/placement`), kubectl on PATH. One control plane
serves the whole run; the hub (`perf.vs_ocm_fleet`: the harness's seeded fleet with status,
sets, bindings, AddOnPlacementScores, and its placement mix with CEL predicates added) is
created once. Then, `--rounds` times, ours and OCM's controller take turns (the order flipped
each round), each on the same objects (`perf.vs_ocm_run`): cold start, four churn steps, the
hub put back. Client rate limits: OCM's `--kube-api-qps`/`--kube-api-burst` are `--qps`
(default 5,000: never throttled); ours has no client-side limit.

The report (`--out`, default perf/reports/vs-ocm): `vs-ocm.md` (the side-by-side table, ratios
ours/OCM and verdicts against the targets, the decisions compared with each difference
classified), `vs-ocm.json` (every run) and plots.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perf.side_by_side import add_report_options, missing_binaries, render

if TYPE_CHECKING:
    from perf.harness import Case, Settings, Step

__all__ = ["SIZES", "harness_case", "harness_step", "main", "side_by_side", "summary"]

SIZES = {"full": (5_000, 2_000), "quick": (1_000, 300), "smoke": (40, 15)}


def _order(round_: int) -> tuple[str, str]:
    from perf.vs_ocm_run import OCM, OURS

    return (OURS, OCM) if round_ % 2 == 0 else (OCM, OURS)


async def side_by_side(
    clusters: int,
    placements: int,
    rounds: int,
    args: argparse.Namespace,
    progress: Any = None,
    save: Any = None,
) -> dict[str, Any]:
    """Every run (module docstring); `progress(text)` is told what runs next, `save(result)`
    gets the result so far after each run."""
    from perf.vs_ocm_fleet import LAPSE, STEPS, churn, hub, traits
    from perf.vs_ocm_run import QUIET, Bench

    say = progress or (lambda text: None)
    keep = save or (lambda result: None)
    say(f"generating the hub: {clusters} clusters, {placements} placements")
    the_hub = hub(clusters, placements, args.seed)
    say("starting the control plane")
    args.quiet, args.lapse = args.quiet or QUIET, args.lapse or LAPSE
    args.steps = args.steps or list(STEPS)
    bench = Bench.start(the_hub)
    bench.quiet, bench.say = args.quiet, say
    runs: list[dict[str, Any]] = []
    result: dict[str, Any] = {
        "clusters": clusters,
        "placements": placements,
        "settings": {
            "ocm": f"ocm-placement controller (OCM 00f84c32b), --kube-api-qps={args.qps} "
            f"--kube-api-burst={args.burst}, --disable-leader-election",
            "ours": "placement run --kubeconfig (no client-side rate limit), no --leader-elect",
        },
        "seed": args.seed,
        "quiet_s": args.quiet,
        "lapse_s": args.lapse,
        "steps": args.steps,
        "traits": traits(the_hub),
        "tainted": {  # per round, the clusters the taints step taints
            str(r): [p.path.rsplit("/", 1)[1] for p in churn("taints", the_hub, r)]
            for r in range(rounds)
        },
        "runs": runs,
    }
    try:
        await bench.open()
        began = time.perf_counter()
        await bench.create()
        result["create_s"] = round(time.perf_counter() - began, 1)
        say(f"hub created in {result['create_s']} s")
        for r in range(rounds):
            for name in _order(r):
                say(f"round {r + 1}/{rounds}: {name}")
                runs.append(await bench.run(name, r, args, args.limit))
                keep(result)
                await bench.reset(r)
    finally:
        await bench.close()
    return result


def _parser() -> argparse.ArgumentParser:
    from perf.vs_ocm_fleet import STEPS

    parser = argparse.ArgumentParser(
        prog="python -m perf.vs_ocm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="1,000 clusters x 300 placements")
    size.add_argument(
        "--smoke",
        action="store_true",
        help="40 x 15, one round, one churn step, settled after 0.5 s",
    )
    parser.add_argument("--clusters", type=int, default=None)
    parser.add_argument("--placements", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None, help="default 2 (smoke: 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--steps", nargs="+", choices=STEPS, default=None, help="churn steps (default: all)"
    )
    parser.add_argument("--qps", type=int, default=5000, help="OCM's --kube-api-qps")
    parser.add_argument("--burst", type=int, default=5000, help="OCM's --kube-api-burst")
    parser.add_argument("--limit", type=float, default=600.0, help="seconds per phase at most")
    parser.add_argument(
        "--quiet", type=float, default=None, help="seconds without a change: settled (default 2)"
    )
    parser.add_argument(
        "--lapse",
        type=float,
        default=None,
        help="seconds after the taints step at which their tolerations lapse (default 8)",
    )
    add_report_options(parser, "perf/reports/vs-ocm")
    return parser


def main(argv: list[str] | None = None) -> int:
    from perf.vs_ocm_report import slim, write

    args = _parser().parse_args(argv)
    out: Path = args.out
    if args.render:
        return render(out, "vs-ocm.json", write)
    if missing_binaries("perf.vs_ocm", "etcd", "kube-apiserver", "ocm-placement"):
        return 1
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    clusters, placements = SIZES[mode]
    clusters = args.clusters or clusters
    placements = args.placements or placements
    rounds = args.rounds or (1 if mode == "smoke" else 2)
    if mode == "smoke":  # the harness runs it in CI: settled sooner, one step
        args.quiet, args.lapse = args.quiet or 0.5, args.lapse or 2.0
        args.steps = args.steps or ["placements"]
    began = time.perf_counter()
    started = datetime.now(UTC).replace(microsecond=0).isoformat()

    def say(text: str) -> None:
        print(f"[{time.perf_counter() - began:6.0f} s] {text}", file=sys.stderr, flush=True)

    from perf.harness import machine

    out.mkdir(parents=True, exist_ok=True)
    header = {"run": f"{mode}, {rounds} rounds", "started": started, "machine": machine()}

    def save(result: dict[str, Any]) -> None:
        result["header"] = {**header, "took": f"{time.perf_counter() - began:.0f} s"}
        with open("/proc/loadavg") as load:
            result["header"]["load average"] = " ".join(load.read().split()[:3])
        (out / "vs-ocm.json").write_text(json.dumps(slim(result), indent=1))

    result = asyncio.run(side_by_side(clusters, placements, rounds, args, say, save))
    save(result)
    result = slim(result)
    report = write(out, result)
    print(f"report: {report}")
    if args.json:
        print(json.dumps(summary(result, report)))
    return 0


def summary(result: dict[str, Any], report: Path) -> dict[str, Any]:
    """The one JSON line `--json` prints for the harness (`python -m perf`)."""
    from perf.vs_ocm_report import differences, verdicts

    checks = verdicts(result["runs"])
    cold = [c[2] for c in checks if c[1] == "cold" and c[2] is not None]
    found = result.get("differences") or differences(
        result["runs"], result.get("traits"), result.get("tainted")
    )
    classes: dict[str, int] = {}
    for d in found:
        classes[d["class"]] = classes.get(d["class"], 0) + 1
    return {
        "report": str(report),
        "cold_speedup": round(min(cold), 3) if cold else None,
        "verdicts": [list(c) for c in checks],
        "differences": classes,
        "unexplained_differences": classes.get("unexplained", 0),
    }


def harness_case(settings: Settings) -> Case:
    """The side-by-side as a case of `python -m perf`, its report written beside the run's
    (`vs-ocm.md`): the value is the cold start's speed-up (OCM's seconds / ours); every
    target's verdict is in the details, and unexplained decision differences are its error."""
    from perf.harness import Case, children
    from perf.targets import HUB_VS_OCM
    from tests.e2e.controlplane import missing_assets

    clusters, placements = SIZES[settings.mode]
    case = Case(HUB_VS_OCM, "ours / OCM", clusters, placements, unit="x")
    missing = missing_assets("etcd", "kube-apiserver", "ocm-placement")
    if missing is not None:
        case.error = f"not run: {missing}"
        return case
    args = ["--json", f"--{settings.mode}"] if settings.mode != "full" else ["--json"]
    if settings.log is not None:
        args.append(f"--out={settings.log.parent}")

    def read(result: Any, case: Case) -> float:
        for key in ("verdicts", "report", "differences", "unexplained_differences"):
            case.details[key] = result[key]
        if result["unexplained_differences"]:
            case.error = f"{result['unexplained_differences']} unexplained decision differences"
        return float(result["cold_speedup"] or 0.0)

    timeout = {"smoke": 300.0, "quick": 1_800.0}.get(settings.mode, 5_400.0)
    return children(case, "perf.vs_ocm", args, settings, 1, read, timeout)


def harness_step(settings: Settings) -> Step:
    from perf.harness import Step
    from perf.targets import HUB_VS_OCM
    from tests.e2e.controlplane import missing_assets

    clusters, placements = SIZES[settings.mode]
    weight = {"smoke": 25.0, "quick": 600.0}.get(settings.mode, 2_400.0)
    if missing_assets("etcd", "kube-apiserver", "ocm-placement"):
        weight = 1.0  # not run: the case says why at once
    return Step(
        HUB_VS_OCM, "ours / OCM", clusters, placements, partial(harness_case, settings), weight
    )


if __name__ == "__main__":
    sys.exit(main())
