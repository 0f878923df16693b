"""The warm scheduling cycle of two builds, measured alternately in fresh processes.

The hub's cycle bars (one placement, warm, 10k and 100k clusters) are absolute figures from a
day when this machine ran faster; the same build reads two to three times slower on a busy day.
A bar is therefore judged against a reference build measured in the same minutes: each pair
runs the reference and the candidate one after the other, each in a fresh process with its own
checkout on `PYTHONPATH`, on the benchmark placement and fleet of `test_scheduling_bench.py`.

Each process warms the scheduler with one cycle, then times `cycles` cycles, recording each
cycle's wall and thread CPU seconds, with the collector set as the controller process sets it
(`controllers.runtime.process.HUB_GC_THRESHOLDS`: the scheduler never runs under Python's
default thresholds in production), and prints one JSON line: min and median of both. Both
builds must select the same clusters (the digest of the selection is compared).

    python -m perf.cycle_alternate --reference /path/to/old/checkout --pairs 3
    python -m perf.cycle_alternate --reference OLD --candidate NEW --sizes 10000 --cycles 3000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "measure_in", "one_process"]

_HERE = Path(__file__).resolve().parent.parent
# The controller's thresholds, repeated here as data so an older checkout (which may predate
# the constant) runs under the same collector settings as the candidate.
_THRESHOLDS = (200_000, 50, 100)


def one_process(size: int, cycles: int) -> dict[str, Any]:
    """Run inside the measured process: the benchmark placement scheduled `cycles` times."""
    import gc
    import hashlib
    import time

    from perf.test_scheduling_bench import bench_placement, world
    from placement.testing import NOW
    from plugins import default_scheduler

    gc.set_threshold(*_THRESHOLDS)
    _, snap = world(size)
    placement = bench_placement(size)
    scheduler = default_scheduler()
    first = scheduler.schedule(placement, snap, NOW)
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(cycles):
        w0, c0 = time.perf_counter(), time.thread_time()
        scheduler.schedule(placement, snap, NOW)
        cpus.append(time.thread_time() - c0)
        walls.append(time.perf_counter() - w0)
    names = ",".join(sorted(snap.rows_to_names(first.selected)))
    return {
        "size": size,
        "cycles": cycles,
        "wall_min_us": round(min(walls) * 1e6, 1),
        "wall_median_us": round(statistics.median(walls) * 1e6, 1),
        "cpu_min_us": round(min(cpus) * 1e6, 1),
        "cpu_median_us": round(statistics.median(cpus) * 1e6, 1),
        "selected": len(first.selected),
        "digest": hashlib.sha256(names.encode()).hexdigest()[:16],
        "load": os.getloadavg()[0],
    }


def measure_in(tree: Path, size: int, cycles: int) -> dict[str, Any]:
    """One fresh process importing the project from `tree` (this module is passed by path, so
    the reference checkout need not have it)."""
    code = (
        "import json, runpy, sys; "
        f"mod = runpy.run_path({str(Path(__file__).resolve())!r}); "
        f"print(json.dumps(mod['one_process']({size}, {cycles})))"
    )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"error: the run in {tree} failed:\n{done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m perf.cycle_alternate",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--reference", type=Path, required=True, help="the older checkout")
    parser.add_argument("--candidate", type=Path, default=_HERE, help="default: this checkout")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--cycles", type=int, default=0, help="per process (default 2,000 at 10k, 200 at 100k)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for tree in (args.reference, args.candidate):
        if not (tree / "plugins").is_dir():
            raise SystemExit(f"error: {tree} is not a checkout of this project (no plugins/)")
    problems = 0
    for size in args.sizes:
        cycles = args.cycles or max(200, 20_000_000 // size)
        ratios: list[float] = []
        for pair in range(args.pairs):
            ref = measure_in(args.reference, size, cycles)
            new = measure_in(args.candidate, size, cycles)
            ratio = new["cpu_min_us"] / ref["cpu_min_us"]
            ratios.append(ratio)
            same = ref["digest"] == new["digest"]
            problems += not same
            print(
                json.dumps({"pair": pair + 1, "reference": ref, "candidate": new,
                            "cpu_min_ratio": round(ratio, 3), "same_selection": same}),
                flush=True,
            )  # fmt: skip
        print(
            json.dumps({"size": size, "median_cpu_min_ratio": round(statistics.median(ratios), 3)}),
            flush=True,
        )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
