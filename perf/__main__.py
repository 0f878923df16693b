"""`python -m perf`: run the scale scenarios and write a report folder.

    python -m perf --quick                  # small sizes, one repetition (took 29 min at load 5-8)
    python -m perf --smoke                  # tiny sizes: the harness itself runs (CI)
    python -m perf                          # the full run, 3 repetitions
    python -m perf --only cycle spread      # some scenarios
    python -m perf --out perf/results       # where report.md, results.json and the plots go
    python -m perf --only pod-engine --merge --out perf/results   # keep the other scenarios' cases

Scenarios: cycle (one scheduling cycle vs fleet size, against a per-cluster loop), spread
(EvenSpread vs its oracle), cold-start and fan-out (the controller on the embedded hub, each run
in a fresh process), memory (peak RSS of the scheduling core with its index, and in the full run
of the controller at 100k clusters x 10k placements); report.md also fits growth exponents.
The local cluster's pod scheduler: pod-engine (engine throughput without I/O), pod-preemption
(one preemption decision on full nodes), pod-e2e (the scheduler process against the embedded
API server process), pod-memory (peak RSS of the engine with every node and pod), each in a
fresh process. kube scheduler_perf's workloads by their names (issue 29): pod-SchedulingBasic,
pod-SchedulingPodAntiAffinity, pod-TopologySpreading, pod-PreemptionBasic and pod-gangs, each
through the engine and end to end, with a pods/s curve per workload. pod-vs-kube: ours beside
kube-scheduler on a real kube-apiserver (needs $KUBEBUILDER_ASSETS), the longest step: 23 of
the 29 minutes of the quick run measured at load 5-8 on 2026-12-02.

`--help` and the run's first line say how long it should take (the sum of its steps' costs on
2 quiet cores; a machine busy with other work takes up to twice as long) and, as it goes, which
step of how many it is on and the time elapsed: a progress bar on a terminal, one line per step
otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from perf.harness import Case, Settings, Step, machine
from perf.report import verdicts, write_report
from perf.scenarios import plan
from perf.targets import SCENARIOS

__all__ = ["PERF_EXTRA", "estimate", "main", "missing_extra"]

PERF_EXTRA = ("matplotlib", "tqdm")
"""What the `perf` extra installs: the report's plots and the progress bar. Imported only when a
run needs them, so that pytest collects perf/ (and the offline tests run) without them."""


def missing_extra() -> list[str]:
    """The modules of the perf extra that are not installed."""
    return [name for name in PERF_EXTRA if importlib.util.find_spec(name) is None]


def _planned(mode: str) -> str:
    """The estimate of a whole run in `mode` (every scenario), for --help."""
    return estimate(plan(Settings(mode, 0, 1.0, 3 if mode == "full" else 1, None), SCENARIOS))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m perf",
        description=__doc__,
        epilog=f"The full run: {_planned('full')} here on 2 quiet cores (the side-by-sides on a "
        "real apiserver run with $KUBEBUILDER_ASSETS only).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--quick",
        action="store_true",
        help=f"small sizes, one repetition: {_planned('quick')} here on 2 quiet cores",
    )
    size.add_argument(
        "--smoke",
        action="store_true",
        help=f"tiny sizes, {_planned('smoke')}: checks the harness runs (CI)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SCENARIOS,
        default=list(SCENARIOS),
        metavar="SCENARIO",
        help=f"run only these scenarios ({', '.join(SCENARIOS)})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("perf/reports/latest"),
        help="report folder, created if missing (default: perf/reports/latest)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="repetitions of the target cases run in fresh processes (full run; default 3)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds spent repeating each in-process case (default 2; quick 0.5, smoke 0.05)",
    )
    parser.add_argument("--seed", type=int, default=20261122, help="workload seed")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the cases of the scenarios not run from --out's results.json (the report "
        "then holds both runs; its header says which scenarios came from the earlier one)",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="measure nothing: write report.md and the plots again from --out's results.json",
    )
    return parser


def estimate(steps: list[Step]) -> str:
    """How long the steps should take on 2 quiet cores, from their weights (each a step's
    recorded seconds there, rounded up): `about 17 min`."""
    seconds = sum(step.weight for step in steps)
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} s"
    return f"about {round(seconds / 60):.0f} min"


def _clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes:02d}:{rest:02d}"


def _render(out: Path) -> int:
    """The report of an earlier run, from its results.json."""
    try:
        saved = json.loads((out / "results.json").read_text())
        cases = [Case.from_json(c) for c in saved["cases"]]
        report = write_report(out, cases, saved["machine"], saved["header"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"python -m perf: cannot render {out / 'results.json'}: {exc}", file=sys.stderr)
        return 1
    print(f"report: {report}")
    return 0


def _earlier(out: Path, ran: list[str]) -> tuple[list[Case], dict[str, str]]:
    """The cases of the scenarios not in `ran` from `out`'s results.json, and what the header
    says of them (nothing when there is no earlier run)."""
    try:
        saved = json.loads((out / "results.json").read_text())
    except (OSError, ValueError):
        return [], {}
    kept = [Case.from_json(c) for c in saved["cases"] if c["scenario"] not in ran]
    if not kept:
        return [], {}
    before = saved.get("header", {})
    scenarios = ", ".join(dict.fromkeys(c.scenario for c in kept))
    when = before.get("started", "?")
    load = before.get("load average at the end", "?")
    note = f"{scenarios} from the run started {when} (load average at its end {load})"
    return kept, {"merged": note}


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.budget is not None and args.budget <= 0:
        parser.error("--budget must be positive")
    missing = missing_extra()
    if missing:
        print(
            f"python -m perf: needs the perf extra ({', '.join(missing)} not installed): "
            "pip install -e '.[perf]'",
            file=sys.stderr,
        )
        return 1
    out: Path = args.out
    if args.render:
        return _render(out)
    earlier, merged = _earlier(out, args.only) if args.merge else ([], {})
    try:
        out.mkdir(parents=True, exist_ok=True)
        log = out / "children.log"
        if not args.merge or not log.exists():  # a merged run adds to the earlier run's log
            log.write_text("")
    except OSError as exc:
        print(f"python -m perf: cannot write the report folder {out}: {exc}", file=sys.stderr)
        return 1
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    default_budget = {"smoke": 0.05, "quick": 0.5}.get(mode, 2.0)
    budget = args.budget if args.budget is not None else default_budget
    settings = Settings(mode, args.seed, budget, args.repeat, log.resolve())
    steps = plan(settings, args.only)
    began = time.perf_counter()
    started = datetime.now(UTC).replace(microsecond=0)
    before = machine()
    cases: list[Case] = []
    from tqdm import tqdm

    print(
        f"python -m perf: {len(steps)} steps, {estimate(steps)} on 2 quiet cores, "
        "up to twice that on a loaded machine",
        file=sys.stderr,
        flush=True,
    )
    lines = not args.no_progress and not sys.stderr.isatty()  # a log: one line per step
    bar = tqdm(
        total=sum(s.weight for s in steps),
        unit="",
        bar_format="{percentage:3.0f}%|{bar:20}| {elapsed}<{remaining} {desc}",
        disable=args.no_progress or lines,
        file=sys.stderr,
    )
    interrupted: Step | None = None
    with bar:
        for number, step in enumerate(steps, start=1):
            title = f"{number}/{len(steps)} {step.title}"
            bar.set_description_str(title)
            if lines:
                elapsed = _clock(time.perf_counter() - began)
                print(f"python -m perf: {elapsed} step {title}", file=sys.stderr, flush=True)
            step_began = time.perf_counter()
            try:
                case = step.run()
            except KeyboardInterrupt:  # keep what was measured: the report covers it
                interrupted = step
                break
            except Exception as exc:  # a broken case is reported, the run goes on
                case = Case(step.scenario, step.label, step.clusters, step.placements)
                case.error = f"{type(exc).__name__}: {exc}"
            case.details["took_s"] = round(time.perf_counter() - step_began, 2)
            cases.append(case)
            if case.error:
                bar.write(f"{step.title}: {case.error}", file=sys.stderr)
            bar.update(step.weight)
    header = {
        "run": f"{mode} (`python -m perf{'' if mode == 'full' else ' --' + mode}`)",
        "scenarios": ", ".join(args.only),
        "started": started.isoformat(),
        "took": f"{time.perf_counter() - began:.0f} s",
        "load average at the end": ", ".join(f"{x}" for x in machine()["load_average"]),
    }
    if interrupted is not None:
        left = len(steps) - len(cases)
        header["interrupted"] = f"during {interrupted.title}; {left} of {len(steps)} steps not run"
    header.update(merged)
    report = write_report(out, [*earlier, *cases], before, header)
    for target, shown, verdict in verdicts(cases):
        print(f"{target.text}: {shown} {verdict.replace('*', '')}")
    print(f"report: {report}")
    if interrupted is not None:
        print(f"python -m perf: interrupted during {interrupted.title}", file=sys.stderr)
        return 130
    return 1 if any(c.error for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
