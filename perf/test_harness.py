"""The scale harness (`python -m perf`): statistics, ratios, verdicts, exponent fits, the report
folder, and one smoke run of every scenario at tiny sizes through the command line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from perf.__main__ import main
from perf.harness import Case, ChildError, Settings, Step, in_child, repeat
from perf.report import fits, fmt, ratio, verdicts, write_report
from perf.targets import (
    COLD,
    CYCLE,
    E2E,
    ENGINE,
    FANOUT,
    HUB_VS_OCM,
    KUBE_BASIC,
    KUBE_GANGS,
    KUBE_PREEMPTION,
    KUBE_SCENARIOS,
    MEMORY,
    OCM_SHAPE,
    POD_E2E,
    POD_ENGINE,
    POD_MEMORY,
    POD_PREEMPTION,
    POD_VS_KUBE,
    SCENARIOS,
    SPREAD,
    TARGETS,
    WIDE,
)
from tests.e2e.controlplane import missing_assets

PNG = b"\x89PNG\r\n\x1a\n"


def case(scenario: str, label: str, n: int, values: list[float], **kw: object) -> Case:
    return Case(scenario, label, n, values=values, **kw)  # type: ignore[arg-type]


def test_case_statistics_are_median_p90_and_max_of_the_repetitions() -> None:
    c = case(CYCLE, "scheduler", 1_000, [float(v) for v in range(1, 11)])
    assert c.median == 5.5
    assert c.p90 == pytest.approx(9.1)
    assert c.max == 10
    assert math.isnan(case(CYCLE, "x", 1, []).median)


def test_repeat_calls_at_least_the_minimum_after_one_warm_up() -> None:
    calls: list[int] = []
    times = repeat(lambda: calls.append(1), budget_s=0.0, least=4)
    assert len(times) == 4
    assert len(calls) == 5


def test_ratio_is_a_speed_up_or_a_relative_cost_against_the_baseline_of_the_same_run() -> None:
    loop = case(CYCLE, "loop", 10_000, [0.030])
    fast = case(CYCLE, "scheduler", 10_000, [0.001], baseline=("loop", 10_000, 1))
    big = Case(COLD, "controller", 5_000, 1_000, [8.0], baseline=("controller", 1_000, 1_000))
    big.speedup = False
    ocm = Case(COLD, "controller", 1_000, 1_000, [4.0])
    cases = [loop, fast, big, ocm]
    assert ratio(fast, cases) == pytest.approx(30)
    assert ratio(big, cases) == pytest.approx(2)
    assert ratio(loop, cases) is None
    assert ratio(fast, [fast]) is None  # its baseline did not run


def test_verdicts_say_met_missed_failed_or_not_measured() -> None:
    cases = [
        case(CYCLE, "scheduler", 10_000, [0.00008]),
        case(CYCLE, "scheduler", 100_000, [0.0006]),
        case(SPREAD, "vectorized", 10_000, [], error="boom"),
        case(SPREAD, "vectorized", 1_000, [0.0001], baseline=("oracle", 1_000, 1)),
        case(SPREAD, "oracle", 1_000, [0.08]),
    ]
    by_text = {t.text: (shown, verdict) for t, shown, verdict in verdicts(cases)}
    ten_k, hundred_k, spread, oracle = TARGETS[:4]
    assert by_text[ten_k.text] == ("80 µs", "**met**")
    assert by_text[hundred_k.text] == ("600 µs", "**missed**")
    assert by_text[spread.text][1] == "failed: boom"
    assert by_text[oracle.text] == ("800×", "**missed**")  # 80 ms / 0.1 ms, under 1,000x
    assert by_text[_target(FANOUT)][1] == "not measured in this run"


@pytest.mark.parametrize(
    ("label", "size", "detail", "figure", "shown"),
    [
        pytest.param(
            OCM_SHAPE, (5_000, 10_000), "writes_per_placement", 6.0, "6 requests", id="ocm"
        ),
        pytest.param(WIDE, (5_000, 2_000), "peak_rss_mib", 600.0, "600 MiB", id="wide"),
    ],
)
def test_a_target_on_a_detail_judges_that_figure_not_the_median(
    label: str, size: tuple[int, int], detail: str, figure: float, shown: str
) -> None:
    cold = Case(COLD, label, *size, [14.0])
    cold.details[detail] = [figure]
    by_text = {t.text: (shown, verdict) for t, shown, verdict in verdicts([cold])}
    time_target, detail_target = (t for t in TARGETS if t.label == label)
    assert by_text[time_target.text] == ("14 s", "**met**")
    assert by_text[detail_target.text] == (shown, "**missed**")


def test_fitted_exponent_recovers_a_power_law() -> None:
    sizes = [1_000, 3_000, 10_000, 30_000]
    cases = [case(CYCLE, "loop", n, [2e-9 * n**1.5]) for n in sizes]
    cases += [Case(COLD, OCM_SHAPE, 1_000, p, [0.003 * p]) for p in (250, 1_000, 4_000)]
    found = {(f.series, f.against): f.exponent for f in fits(cases)}
    assert found[("per-cluster loop", "clusters N")] == pytest.approx(1.5)
    assert found[("per-cluster loop, 3 largest", "clusters N")] == pytest.approx(1.5)
    assert found[("cold start, 1,000 clusters", "placements P")] == pytest.approx(1.0)
    assert ("cold start, 250 placements", "clusters N") not in found  # one point is no curve


def _target(scenario: str) -> str:
    return next(t.text for t in TARGETS if t.scenario == scenario)


def test_pod_throughput_targets_are_met_at_or_above_their_rate() -> None:
    cases = [
        Case(POD_ENGINE, "engine", 5_000, 10_000, [5_200.0, 4_900.0, 5_100.0], unit="pods/s"),
        Case(POD_E2E, "scheduler", 5_000, 10_000, [640.0], unit="pods/s"),
        Case(POD_PREEMPTION, "engine", 5_000, 50_000, [0.012, 0.011]),
        Case(POD_MEMORY, "engine", 5_000, 50_000, [612.0], unit="MiB"),
    ]
    cases[1].details["timed_out"] = [True]
    by_text = {t.text: (shown, verdict) for t, shown, verdict in verdicts(cases)}
    assert by_text[_target(POD_ENGINE)] == ("5,100 pods/s", "**met**")
    assert by_text[_target(POD_E2E)] == ("640 pods/s (timed out)", "**missed**")
    assert by_text[_target(POD_PREEMPTION)] == ("11.5 ms", "**met**")
    assert by_text[_target(POD_MEMORY)] == ("612 MiB", "**missed**")


def test_pod_steps_and_tables_count_nodes_and_pods(tmp_path: Path) -> None:
    step = Step(POD_ENGINE, "engine", 5_000, 10_000, lambda: case(POD_ENGINE, "engine", 1, []))
    assert step.title == "pod-engine: engine, 5,000 nodes x 10,000 pods"
    cases = [
        Case(POD_ENGINE, "engine", n, 10_000, [8e6 / n], unit="pods/s") for n in (1_000, 4_000)
    ]
    cases.append(Case(CYCLE, "scheduler", 1_000, 1, [1e-4]))
    text = write_report(tmp_path, cases, {"cpu": "test"}, {"run": "test"}).read_text()
    assert "| case | nodes | pods | reps |" in text
    assert "| engine | 1,000 | 10,000 | 1 | 8,000 pods/s |" in text
    assert "| pod engine pods/s, 10,000 pods | nodes N | 2 | -1.00 |" in text
    # the pod sections follow the hub's growth exponents, each with its plot
    assert text.index("## 6. How cost grows") < text.index("## 7. Pod scheduler engine")
    assert "![pod-engine.png](pod-engine.png)" in text
    assert (tmp_path / "pod-engine.png").read_bytes().startswith(PNG)


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        pytest.param(0.000412, "s", "412 µs", id="micro"),
        pytest.param(0.0374, "s", "37.4 ms", id="milli"),
        pytest.param(38.25, "s", "38.2 s", id="seconds"),
        pytest.param(1563.4, "MiB", "1,563 MiB", id="memory"),
        pytest.param(5312.7, "pods/s", "5,313 pods/s", id="rate"),
        pytest.param(float("nan"), "s", "—", id="none"),
    ],
)
def test_figures_are_shown_in_a_readable_unit(value: float, unit: str, shown: str) -> None:
    assert fmt(value, unit) == shown


def test_report_folder_has_tables_plots_and_every_value(tmp_path: Path) -> None:
    cases = [
        case(CYCLE, "scheduler", n, [1e-4 * n**0.5, 2e-4 * n**0.5], baseline=("loop", n, 1))
        for n in (1_000, 10_000)
    ]
    cases += [case(CYCLE, "loop", n, [1e-6 * n]) for n in (1_000, 10_000)]
    cases += [Case(MEMORY, "core", n, n // 10, [n / 100], unit="MiB") for n in (1_000, 10_000)]
    report = write_report(tmp_path, cases, {"cpu": "test"}, {"run": "test"})
    text = report.read_text()
    assert "## 1. One scheduling cycle" in text
    assert "## 5. Peak resident memory" in text
    assert "| scheduling cycle | clusters N | 2 | 0.50 |" in text
    assert "![cycle.png](cycle.png)" in text
    for image in ("cycle.png", "cycle-speedup.png", "memory.png"):
        assert (tmp_path / image).read_bytes().startswith(PNG)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [c["values"] for c in saved["cases"]] == [c.values for c in cases]


def test_render_writes_the_same_report_again_from_results_json(tmp_path: Path) -> None:
    cases = [
        case(CYCLE, "scheduler", n, [1e-4, 2e-4], baseline=("loop", n, 1)) for n in (1_000, 10_000)
    ]
    cases += [case(CYCLE, "loop", n, [3e-3 * n / 1_000], error=None) for n in (1_000, 10_000)]
    cases.append(case(SPREAD, "oracle", 300, [], error="boom"))
    first = write_report(tmp_path, cases, {"cpu": "test"}, {"run": "test"}).read_text()
    (tmp_path / "report.md").unlink()
    assert main(["--render", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "report.md").read_text() == first


def test_render_without_results_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--render", "--out", str(tmp_path)]) == 1
    assert "cannot render" in capsys.readouterr().err


def test_a_failed_child_names_the_command_and_its_last_error(tmp_path: Path) -> None:
    log = tmp_path / "children.log"
    with pytest.raises(ChildError, match=r"perf\.child core .* exited 2: .*at least 1"):
        in_child("perf.child", ["core", "--clusters=0", "--placements=1"], log=log, timeout_s=60)
    assert "--clusters=0" in log.read_text()


def test_smoke_run_measures_every_scenario_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--smoke", "--no-progress", "--out", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "results.json").read_text())
    measured = {c["scenario"] for c in saved["cases"] if c["values"] and not c["error"]}
    assets = missing_assets("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
    ocm = missing_assets("etcd", "kube-apiserver", "ocm-placement")
    unmeasured = ({POD_VS_KUBE} if assets else set()) | ({HUB_VS_OCM} if ocm else set())
    assert measured == set(SCENARIOS) - unmeasured
    # Beside kube-scheduler on a real apiserver (when the e2e tier's binaries are there): both
    # bound every pod (a problem is the case's error), and the verdicts went to the report.
    (beside,) = [c for c in saved["cases"] if c["scenario"] == POD_VS_KUBE]
    if assets is None:
        assert beside["values"][0] > 0 and beside["details"]["verdicts"]
        assert (tmp_path / "vs-kube.md").exists() and (tmp_path / "vs-kube-ratios.png").exists()
    else:
        assert beside["error"] == f"not run: {assets}"
    # Beside OCM's placement controller (when its binary is there): both decided every
    # placement, the decisions were compared with no unexplained difference (else an error).
    (hub,) = [c for c in saved["cases"] if c["scenario"] == HUB_VS_OCM]
    if ocm is None:
        assert hub["values"][0] > 0 and hub["details"]["verdicts"]
        assert hub["details"]["unexplained_differences"] == 0
        assert (tmp_path / "vs-ocm.md").exists() and (tmp_path / "vs-ocm-ratios.png").exists()
    else:
        assert hub["error"] == f"not run: {ocm}"
    # The wide cold start ran with the server in its own process and counted its requests.
    (wide,) = [c for c in saved["cases"] if c["label"] == WIDE]
    details = {k: v[0] if isinstance(v, list) else v for k, v in wide["details"].items()}
    assert details["placement_decisions"] > 0 and details["events"] > 0
    assert details["requests_per_pd"] >= 2  # at least its create and its status
    assert details["server_cpu_s"] > 0 and details["server_peak_rss_mib"] > 0
    text = (tmp_path / "report.md").read_text()
    assert "## 6. How cost grows" in text
    assert "exponent" in text
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert {"cycle.png", "spread.png", "cold-start-placements.png", "memory.png"} <= set(pngs)
    assert "report:" in capsys.readouterr().out
    # scheduler_perf's workloads, engine and end to end: every measured pod bound and checked
    # (a case whose pods are not all bound, or misplaced, carries an error), a curve each
    for scenario in KUBE_SCENARIOS:
        runs = {c["label"]: c for c in saved["cases"] if c["scenario"] == scenario}
        assert set(runs) == {ENGINE, E2E}, scenario
        for label, run in runs.items():
            assert run["error"] is None and run["values"], (scenario, label)
            timeline = run["details"]["timeline"][0]
            assert timeline and timeline[-1][1] == run["placements"] * (
                0.8 if scenario == KUBE_GANGS else 1  # 4 of 5 gangs fit
            ), (scenario, label)
        e2e = runs[E2E]["details"]
        assert e2e["scheduler_cpu_s"][0] > 0 and e2e["server_cpu_s"][0] > 0
        assert (tmp_path / f"{scenario}-throughput.png").read_bytes().startswith(PNG)
    preemption = next(
        c for c in saved["cases"] if c["scenario"] == KUBE_PREEMPTION and c["label"] == E2E
    )
    assert preemption["details"]["evicted"][0] >= 1  # the preemptors made room
    assert "## 11. kube scheduler_perf's workloads" in text


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--repeat", "0"], id="no-repetitions"),
        pytest.param(["--only", "nonsense"], id="unknown-scenario"),
        pytest.param(["--quick", "--smoke"], id="two-modes"),
    ],
)
def test_bad_arguments_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2


def test_an_unwritable_report_folder_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["--smoke", "--out", str(blocker / "report")]) == 1
    assert "cannot write the report folder" in capsys.readouterr().err


def test_an_interrupted_run_still_reports_what_it_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import perf.__main__ as runner

    def steps(settings: Settings, only: object) -> list[Step]:
        def interrupt() -> Case:
            raise KeyboardInterrupt

        done = Step(CYCLE, "loop", 1_000, 1, lambda: case(CYCLE, "loop", 1_000, [0.001]))
        return [done, Step(CYCLE, "scheduler", 1_000, 1, interrupt), done]

    monkeypatch.setattr(runner, "plan", steps)
    assert main(["--smoke", "--no-progress", "--out", str(tmp_path)]) == 130
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [c["label"] for c in saved["cases"]] == ["loop"]
    assert "2 of 3 steps not run" in saved["header"]["interrupted"]


def test_pod_cluster_is_seeded_and_mixed() -> None:
    from perf import _pods_workload as w

    first, again = w.nodes(600, seed=7), w.nodes(600, seed=7)
    assert [n.model_dump() for n in first] == [n.model_dump() for n in again]
    spot = [n for n in first if (n.metadata.labels or {})["capacity"] == "spot"]
    assert 0.2 < len(spot) / len(first) < 0.4
    assert all(t.key == "spot" for n in spot for t in n.spec.taints or [])
    pending = list(w.pending_pods(2_000, seed=7))
    assert len({p.metadata.name for p in pending}) == 2_000
    assert {p.spec.scheduler_name for p in pending} == {w.SCHEDULER}
    assert all(p.spec.node_name is None for p in pending)
    tolerate = sum(bool(p.spec.tolerations) for p in pending) / len(pending)
    assert 0.25 < tolerate < 0.35
    assert {p.spec.priority or 0 for p in pending} == {0, 100, 1_000}
    running = list(w.running_pods(first[:3], 4, seed=7))
    assert [p.spec.node_name for p in running] == [
        n.metadata.name for n in first[:3] for _ in "abcd"
    ]
    assert {p.spec.scheduler_name for p in running} == {w.OTHER_SCHEDULER}


def test_binding_check_finds_an_overcommitted_node_and_an_untolerated_taint() -> None:
    from perf import _pods_workload as w
    from perf.child_pods import overcommitted

    node = w.full_nodes(1, cpu=8)[0]
    name = str(node.metadata.name)
    maker = w.PodMaker()
    pods = {f"bench/p{i}": maker.make(f"p{i}", w.Shape("2", "1Gi")) for i in range(5)}
    fits = dict.fromkeys(list(pods)[:4], name)  # 8 cpu of 8
    assert overcommitted([node], pods, fits) == {"overcommitted_nodes": 0, "misplaced_pods": 0}
    every = dict.fromkeys(pods, name)  # 10 cpu of 8
    assert overcommitted([node], pods, every)["overcommitted_nodes"] == 1
    spot = next(n for n in w.nodes(50, seed=3) if n.spec.taints)
    placed = overcommitted([spot], pods, {"bench/p0": str(spot.metadata.name)})
    assert placed == {"overcommitted_nodes": 0, "misplaced_pods": 1}


def test_a_merged_run_keeps_the_earlier_cases_of_the_scenarios_it_did_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import perf.__main__ as runner

    hub = case(CYCLE, "loop", 1_000, [0.002])
    stale = Case(POD_ENGINE, "engine", 50, 300, [10.0], unit="pods/s")
    write_report(tmp_path, [hub, stale], {"cpu": "test"}, {"started": "earlier"})
    fresh = Case(POD_ENGINE, "engine", 50, 300, [3_000.0], unit="pods/s")

    def steps(settings: Settings, only: object) -> list[Step]:
        return [Step(POD_ENGINE, "engine", 50, 300, lambda: fresh)]

    monkeypatch.setattr(runner, "plan", steps)
    argv = ["--smoke", "--no-progress", "--only", POD_ENGINE, "--out", str(tmp_path)]
    assert main([*argv, "--merge"]) == 0
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [(c["scenario"], c["values"]) for c in saved["cases"]] == [
        (CYCLE, [0.002]),
        (POD_ENGINE, [3_000.0]),
    ]
    assert saved["header"]["merged"].startswith("cycle from the run started earlier")
    assert main(argv) == 0  # without --merge the folder holds this run only
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [c["scenario"] for c in saved["cases"]] == [POD_ENGINE]


def _kube_case(scenario: str, label: str, value: float, unit: str = "pods/s") -> Case:
    from perf.targets import KUBE_FULL

    nodes, running, measured = KUBE_FULL[scenario]
    pods = running * measured if scenario == KUBE_GANGS else measured
    c = Case(scenario, label, nodes, pods, [value], unit=unit)
    c.details.update(
        timeline=[[[0.5, pods // 4], [1.0, pods // 2], [2.0, pods]]],
        samples=[[pods / 2, pods / 2]],
        throughput=[{"Average": pods / 2, "Perc50": pods / 2, "Perc90": pods / 2}],
        load_average=[2.5],
        running=running,
    )
    return c


def test_kube_workloads_are_judged_beside_kube_threshold_with_their_curves(
    tmp_path: Path,
) -> None:
    cases = [
        _kube_case(KUBE_BASIC, ENGINE, 2_040.0),
        _kube_case(KUBE_BASIC, E2E, 1_360.0),
        _kube_case(KUBE_PREEMPTION, ENGINE, 0.032, unit="s"),
        _kube_case(KUBE_PREEMPTION, E2E, 120.0, unit="preemptions/s"),
        _kube_case(KUBE_GANGS, E2E, 3.5, unit="s"),
    ]
    by_text = {t.text: (shown, verdict) for t, shown, verdict in verdicts(cases)}
    assert by_text["SchedulingBasic, engine: 5,000 nodes x 10,000 pods >= 5,000 pods/s"] == (
        "2,040 pods/s",
        "**missed**",
    )
    assert by_text["SchedulingBasic, end to end: 5,000 nodes x 10,000 pods >= 1,000 pods/s"][1] == (
        "**met**"
    )
    text = write_report(tmp_path, cases, {"cpu": "test"}, {"run": "test"}).read_text()
    assert (
        "| SchedulingBasic | 2,040 pods/s (≥ 5,000 pods/s; 3.0× kube's 680) | "
        "1,360 pods/s (≥ 1,000 pods/s; 2.0× kube's 680) | 2.5 / 2.5 | engine **missed**, e2e met |"
    ) in text
    preemption = "| PreemptionBasic | 32.0 ms (≤ 20.0 ms) | 120 preemptions/s (≥ 100 preemptions/s)"
    assert preemption in text
    assert "| gangs | not run | 3.50 s (≤ 4.00 s) |" in text
    assert "| SchedulingBasic | engine | 5,000 | 1000 | 10,000 | 2,040 pods/s | 5,000 |" in text
    for scenario in (KUBE_BASIC, KUBE_PREEMPTION, KUBE_GANGS):
        assert f"![{scenario}-throughput.png]" in text
        assert (tmp_path / f"{scenario}-throughput.png").read_bytes().startswith(PNG)
