"""The report of the side-by-side with OCM's placement controller (`perf.vs_ocm`): `vs-ocm.md`
with the table of every phase (each figure the median of the rounds, ours beside OCM and their
ratio), the targets as ratios to OCM in the same run with a verdict each, the decisions
compared (every difference classified: a documented deliberate difference, a consequence of
one, or unexplained), and two plots: seconds per phase, and the ratios against their targets.

Requests are kube-apiserver's `apiserver_request_total` over the phase, less the harness's own
churn requests, less what kube-apiserver sends itself (`endpoints`, `leases`) and the reviews
OCM asks for each of the harness's reads of its /metrics (`tokenreviews`,
`subjectaccessreviews`); Events written are the POST, PUT and PATCH requests on `events`.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

__all__ = [
    "PHASES", "aggregate", "differences", "harness_section", "slim", "themselves", "verdicts",
    "write",
]  # fmt: skip

OURS, OCM = "ours", "ocm"
TOLERATION = 60  # the taints step's taints lapse for 60 s tolerations within the step
PHASES = ("cold", "labels", "taints", "scores", "placements")
_SERVERS_OWN = ("endpoints", "leases", "tokenreviews", "subjectaccessreviews")
SPEEDUP, CPU_RATIO, REQUEST_RATIO = 3.0, 0.5, 1.0

CLASSES = {
    "spread": "documented: `spreadPolicy` / `builtIn: Spread` (OCM ignores the policy and "
    "calls Spread misconfigured)",
    "carried": "consequence: the placement's decisions already differed before the step "
    "(Steady keeps them)",
    "balance": "consequence: Balance scores a cluster by the decisions of the other placements "
    "at the moment of scheduling, so the order the placements are scheduled in and which "
    "decisions a controller already sees change it (ours: each decision counted as soon as "
    "scheduled, in the queue's order; OCM: one worker, decisions as its informer has them); and "
    "every documented difference above moves the counts the other placements see",
    "prefer": "documented: an untolerated `PreferNoSelect` taint (−100 here, ignored by OCM)",
    "scores": "documented: OCM does not re-queue a placement whose CEL calls `scores()` when "
    "a score changes (from the scores step on)",
    "lapsed": "timing: a toleration of the taints step's taint (longer than the step's 60 s) "
    "lapsed while the slower controller was still settling a step, not while the faster was",
    "midstep": "consequence: a step's requests land over a while; a controller that schedules "
    "the placement while they land keeps (Steady) what it chose then, one that schedules it "
    "after the last does not",
    "unexplained": "unexplained: a bug in one of the two",
}


def _median(values: Iterable[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return statistics.median(kept) if kept else None


def _requests(phase: dict[str, Any]) -> Counter[str]:
    return Counter(
        {
            key: value
            for key, value in phase["requests"].items()
            if key.split(" ", 1)[-1].split("/")[0] not in _SERVERS_OWN
        }
    )


def _events(requests: Counter[str]) -> int:
    return sum(
        v
        for k, v in requests.items()
        if k.split(" ")[0] in ("POST", "PUT", "PATCH") and k.split(" ", 1)[1] == "events"
    )


def aggregate(runs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(controller, phase) -> the medians of its rounds; phase "all" sums the phases."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for name in (OURS, OCM):
        mine = [r for r in runs if r["controller"] == name]
        if not mine:
            continue
        for phase in (*PHASES, "all"):
            rows = []
            for run in mine:
                phases = (
                    list(run["phases"].values()) if phase == "all" else [run["phases"].get(phase)]
                )
                if any(p is None for p in phases):
                    continue
                requests: Counter[str] = Counter()
                for p in phases:
                    requests.update(_requests(p))
                writes = sum(
                    v for k, v in requests.items() if not k.startswith(("GET", "LIST", "WATCH"))
                )
                changes = sum(p["decision_changes"] for p in phases)
                rows.append(
                    {
                        "seconds": sum(p["seconds"] for p in phases),
                        "cpu_s": sum(p["cpu_s"] for p in phases),
                        "requests": sum(requests.values()),
                        "writes": writes,
                        "events": _events(requests),
                        "decision_changes": changes,
                        "requests_per_change": sum(requests.values()) / changes
                        if changes
                        else None,
                        "rss_mib": run.get("rss_mib"),
                        "by_request": requests,
                    }
                )
            if not rows:
                continue
            row: dict[str, Any] = {"rounds": len(rows)}
            for metric in rows[0]:
                if metric != "by_request":
                    row[metric] = _median(r[metric] for r in rows)
            total: Counter[str] = Counter()
            for r in rows:
                total.update(r["by_request"])
            row["by_request"] = {k: round(v / len(rows)) for k, v in sorted(total.items())}
            out[(name, phase)] = row
    return out


def _ratio(ours: float | None, ocm: float | None) -> float | None:
    return None if ours is None or not ocm else ours / ocm


def verdicts(runs: list[dict[str, Any]]) -> list[tuple[str, str, float | None, str]]:
    """(target, phase, value, "met" / "**missed**" / "n/a"): speed-up (OCM's seconds / ours)
    on the cold start and on every churn step, CPU and requests per decision change as ours /
    OCM over the whole run."""
    medians = aggregate(runs)
    out: list[tuple[str, str, float | None, str]] = []
    for phase in PHASES:
        ours, ocm = medians.get((OURS, phase)), medians.get((OCM, phase))
        if ours is None or ocm is None:
            continue
        # nothing to settle on either side (0 s): no ratio
        speedup = _ratio(ocm["seconds"], ours["seconds"]) if ours["seconds"] else None
        speedup = speedup or None
        target = "cold start" if phase == "cold" else "churn step"
        out.append(_check(f"{target} (x faster)", phase, speedup, SPEEDUP, True))
    ours, ocm = medians.get((OURS, "all")), medians.get((OCM, "all"))
    if ours is not None and ocm is not None:
        cpu = _ratio(ours["cpu_s"], ocm["cpu_s"])
        out.append(_check("controller CPU (ours / OCM)", "all", cpu, CPU_RATIO, False))
        rpc = _ratio(ours["requests_per_change"], ocm["requests_per_change"])
        out.append(
            _check("requests per decision change (ours / OCM)", "all", rpc, REQUEST_RATIO, False)
        )
    return out


def _check(
    name: str, phase: str, value: float | None, limit: float, at_least: bool
) -> tuple[str, str, float | None, str]:
    if value is None:
        return (name, phase, None, "n/a")
    ok = value >= limit if at_least else value <= limit
    return (name, phase, value, "met" if ok else "**missed**")


def _classify(
    key: str,
    ours: Any,
    ocm: Any,
    phase: str,
    earlier: bool,
    traits: dict[str, Any],
    tainted: frozenset[str] | set[str] = frozenset(),
) -> str:
    mine = traits.get("placements", {}).get(key, {})
    after = PHASES.index(phase)
    clusters = [{c for pd in side["decisions"] for c in pd[3]} for side in (ours, ocm)]
    if mine.get("spread"):
        return "spread"
    if after >= PHASES.index("scores") and mine.get("cel_scores"):
        return "scores"
    lasts = mine.get("unreachable_s") or 0
    if (
        after >= PHASES.index("taints")
        and lasts > TOLERATION
        and (clusters[0] ^ clusters[1]) & tainted
    ):
        return "lapsed"
    # scores rank clusters only when there are more than numberOfClusters (the placements
    # step gives one to those that had none)
    if not mine.get("numbered", True) and phase != "placements":
        return "unexplained"
    if earlier and mine.get("steady"):
        return "carried"
    prefer = set(traits.get("prefer_no_select", ()))
    if not mine.get("tolerates_spot") and (clusters[0] ^ clusters[1]) & prefer:
        return "prefer"
    if mine.get("balance"):
        return "balance"
    if phase != "cold" and mine.get("steady"):
        return "midstep"
    return "unexplained"


def differences(
    runs: list[dict[str, Any]],
    traits: dict[str, Any] | None = None,
    result_tainted: dict[str, list[str]] | None = None,
) -> list[dict[str, Any]]:
    """Every placement whose conditions or decisions differ between ours and OCM in the same
    round and phase, with its class."""
    traits = traits or {}
    out: list[dict[str, Any]] = []
    rounds = sorted({r["round"] for r in runs})
    for round_ in rounds:
        pair = {r["controller"]: r for r in runs if r["round"] == round_}
        if OURS not in pair or OCM not in pair:
            continue
        differed: set[str] = set()
        tainted = set((result_tainted or {}).get(str(round_), ()))
        for phase in PHASES:
            a = pair[OURS]["phases"].get(phase, {}).get("snapshot")
            b = pair[OCM]["phases"].get(phase, {}).get("snapshot")
            if a is None or b is None:
                continue
            for key in sorted(set(a) | set(b)):
                if a.get(key) == b.get(key):
                    continue
                ours, ocm = a.get(key) or {"decisions": []}, b.get(key) or {"decisions": []}
                kind = _classify(key, ours, ocm, phase, key in differed, traits, tainted)
                out.append(
                    {"round": round_, "phase": phase, "placement": key, "class": kind,
                     "ours": ours, "ocm": ocm}
                )  # fmt: skip
                differed.add(key)
    return out


def themselves(runs: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per controller, the placements whose cold-start conditions or decisions differ from its
    own cold start of the round before (the same objects, scheduled in another order)."""
    out: dict[str, list[int]] = {}
    for name in (OURS, OCM):
        colds = [
            r["phases"]["cold"]["snapshot"]
            for r in sorted(runs, key=lambda r: r["round"])
            if r["controller"] == name and (r["phases"].get("cold") or {}).get("snapshot")
        ]
        out[name] = [
            sum(1 for key in set(a) | set(b) if a.get(key) != b.get(key))
            for a, b in pairwise(colds)
        ]
    return out


def _f(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _table(medians: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    lines = [
        "| phase | controller | seconds | CPU s | requests | writes | Events written "
        "| decision changes | requests / change |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for phase in (*PHASES, "all"):
        rows = {n: medians.get((n, phase)) for n in (OCM, OURS)}
        for name, row in rows.items():
            if row is None:
                continue
            lines.append(
                f"| {phase} | {name} | {_f(row['seconds'], 2)} | {_f(row['cpu_s'], 2)} "
                f"| {_f(row['requests'], 0)} | {_f(row['writes'], 0)} | {_f(row['events'], 0)} "
                f"| {_f(row['decision_changes'], 0)} | {_f(row['requests_per_change'], 2)} |"
            )
        ours, ocm = rows[OURS], rows[OCM]
        if ours is not None and ocm is not None:
            cells = [
                _ratio(ours[m], ocm[m])
                for m in ("seconds", "cpu_s", "requests", "writes", "events", "decision_changes",
                          "requests_per_change")
            ]  # fmt: skip
            shown = " | ".join("–" if c is None else f"*{c:.2f}x*" for c in cells)
            lines.append(f"| | *ours / OCM* | {shown} |")
    return lines


def _requests_table(medians: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    ours = medians.get((OURS, "all"), {}).get("by_request", {})
    ocm = medians.get((OCM, "all"), {}).get("by_request", {})
    lines = ["| verb resource | ours | OCM |", "|---|---|---|"]
    for key in sorted(set(ours) | set(ocm)):
        lines.append(f"| {key} | {ours.get(key, 0):,} | {ocm.get(key, 0):,} |")
    return lines


def _differences(found: list[dict[str, Any]], placements: int) -> list[str]:
    lines = [
        "| round | phase | placements differing | " + " | ".join(CLASSES) + " |",
        "|---|---|---|" + "---|" * len(CLASSES),
    ]
    cells: dict[tuple[int, str], Counter[str]] = {}
    for d in found:
        cells.setdefault((d["round"], d["phase"]), Counter())[d["class"]] += 1
    for (round_, phase), counts in sorted(
        cells.items(), key=lambda c: (c[0][0], PHASES.index(c[0][1]))
    ):
        shown = " | ".join(str(counts.get(c, 0)) for c in CLASSES)
        lines.append(
            f"| {round_ + 1} | {phase} | {sum(counts.values())} of {placements} | {shown} |"
        )
    lines += ["", *[f"- **{name}**: {text}" for name, text in CLASSES.items()]]
    bad = [d for d in found if d["class"] == "unexplained"][:10]
    if bad:
        lines += ["", "Unexplained differences (the first ten):", ""]
        for d in bad:
            lines.append(f"- round {d['round'] + 1}, {d['phase']}, `{d['placement']}`: "
                         f"ours {_brief(d['ours'])}; OCM {_brief(d['ocm'])}")  # fmt: skip
    return lines


def _brief(side: dict[str, Any]) -> str:
    conditions = ", ".join(f"{c[0]}={c[1]} ({c[2]})" for c in side.get("conditions", []))
    decisions = "; ".join(
        f"{pd[0]} [{pd[1]}/{pd[2]}] {len(pd[3])} clusters" for pd in side["decisions"]
    )
    return f"{conditions or 'no conditions'}; {decisions or 'no decisions'}"


def _plots(
    out: Path, medians: dict[tuple[str, str], dict[str, Any]], checks: list[Any]
) -> list[str]:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.2))
    phases = [p for p in PHASES if (OURS, p) in medians and (OCM, p) in medians]
    x = range(len(phases))
    for shift, name in ((-0.2, OCM), (0.2, OURS)):
        values = [medians[(name, p)]["seconds"] or 0.0 for p in phases]
        ax.bar([i + shift for i in x], values, width=0.4, label=name)
    ax.set_xticks(list(x), phases)
    ax.set_yscale("log")
    ax.set_ylabel("seconds (median of the rounds)", fontsize=8)
    ax.set_title("cold start to all decided; churn steps to settled", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "vs-ocm-phases.png", dpi=90)
    plt.close(fig)
    ratios = [c for c in checks if c[2] is not None]
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(ratios) + 1.2))
    labels = [f"{name}: {phase}" for name, phase, _, _ in ratios]
    colors = ["tab:green" if v == "met" else "tab:red" for *_, v in ratios]
    ax.barh(range(len(ratios)), [c[2] for c in ratios], color=colors)
    ax.set_yticks(range(len(ratios)), labels, fontsize=7)
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("value (green: target met)", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "vs-ocm-ratios.png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return ["vs-ocm-phases.png", "vs-ocm-ratios.png"]


def slim(result: dict[str, Any]) -> dict[str, Any]:
    """`result` without the snapshots (megabytes at scale), what the report reads of them kept:
    the differences (both sides only for the unexplained ones) and each controller against
    itself."""
    if "differences" in result:
        return result
    found = differences(result["runs"], result.get("traits"), result.get("tainted"))
    for d in found:
        if d["class"] != "unexplained":
            d.pop("ours"), d.pop("ocm")
    runs = [
        {**run, "phases": {k: {**v, "snapshot": None} for k, v in run["phases"].items()}}
        for run in result["runs"]
    ]
    return {**result, "runs": runs, "differences": found, "themselves": themselves(result["runs"])}


def write(out: Path, result: dict[str, Any], plots: Callable[..., list[str]] = _plots) -> Path:
    """`vs-ocm.md` (and the plots) in `out` from a run's result; its path."""
    runs = result["runs"]
    medians = aggregate(runs)
    checks = verdicts(runs)
    found = result.get("differences") or differences(
        runs, result.get("traits"), result.get("tainted")
    )
    header = result.get("header", {})
    lines = ["# The hub controller side by side with OCM's placement controller", ""]
    lines += [f"- {k}: {v}" for k, v in header.items() if k != "machine"]
    machine = header.get("machine", {})
    if machine:
        lines.append(f"- machine: {machine.get('cpu')}, {machine.get('cores')} cores")
        lines.append(f"- commit: {machine.get('commit')}")
    lines += [f"- {k}: {v}" for k, v in result.get("settings", {}).items()]
    lines.append(
        f"- hub: {result['clusters']:,} ManagedClusters, {result['placements']:,} Placements "
        f"(created in {result.get('create_s', '–')} s)"
    )
    peak = {n: medians.get((n, "all"), {}).get("rss_mib") for n in (OURS, OCM)}
    lines.append(f"- peak RSS MiB: ours {_f(peak[OURS], 0)}, OCM {_f(peak[OCM], 0)}")
    lines += ["", "## Phases (medians of the rounds)", "", *_table(medians), ""]
    lines += ["## Targets (ratios to OCM in the same run)", ""]
    lines += ["| target | phase | value | verdict |", "|---|---|---|---|"]
    for name, phase, value, verdict in checks:
        lines.append(f"| {name} | {phase} | {_f(value, 2)} | {verdict} |")
    lines += ["", "## Requests by verb and resource (all phases, mean of the rounds)", ""]
    lines += [*_requests_table(medians), ""]
    lines += ["## Decisions compared (ours against OCM, same round and phase)", ""]
    lines += [*_differences(found, result["placements"]), ""]
    again = result.get("themselves") or themselves(runs)
    if any(again.values()):
        lines += [
            "Each controller's cold start against its own in the round before (the same "
            "objects; only the order the placements are scheduled in differs): placements "
            f"differing, ours {again[OURS]}, OCM {again[OCM]}.",
            "",
        ]
    images = plots(out, medians, checks)
    lines += [*[f"![{name}]({name})" for name in images], ""]
    report = out / "vs-ocm.md"
    report.write_text("\n".join(lines))
    return report


def harness_section(cases: Iterable[Any]) -> list[str]:
    """report.md's lines on the side-by-side case of `python -m perf` (none when it did not
    run): the targets' verdicts, and where the full report is."""
    mine = [c for c in cases if c.scenario == "hub-vs-ocm"]
    if not mine:
        return []
    case = mine[0]
    lines = ["", "## 13. Side by side with OCM's placement controller on a real kube-apiserver", ""]
    if case.error and not case.values:
        return [*lines, f"Not measured: {case.error}"]
    lines += [
        f"Cold start, OCM's seconds / ours: {case.values[0]:.2f}x. The tables, the decisions "
        "compared and the plots: [vs-ocm.md](vs-ocm.md).",
        "",
        "| target | phase | value | verdict |",
        "|---|---|---|---|",
    ]
    for name, phase, value, verdict in case.details.get("verdicts", []):
        lines.append(f"| {name} | {phase} | {_f(value, 2)} | {verdict} |")
    return lines
