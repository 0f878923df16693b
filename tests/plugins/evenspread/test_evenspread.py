"""The EvenSpread selector against the spread design's worked example, its use cases, and a
line-by-line oracle of the spread rules (docs/hub-admins.md, 'Spread policy') on random
instances."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apis import ManagedCluster, Placement, parse_as, parse_object
from controllers.cli.manifests import load_paths
from placement.framework import Code, Cycle
from placement.simulate import simulate
from placement.snapshot.fleet_snapshot import FleetSnapshot
from plugins import default_scheduler
from plugins.evenspread.evenspread import EvenSpread, spread_weight
from tests.plugins.spread_oracle import Candidate, Term, oracle_select

NOW = datetime(2026, 11, 22, tzinfo=UTC)
SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples" / "hub"


def make_cluster(
    name: str, labels: dict[str, str], claims: dict[str, str] | None = None
) -> ManagedCluster:
    doc: dict[str, Any] = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": labels},
    }
    if claims:
        doc["status"] = {"clusterClaims": [{"name": k, "value": v} for k, v in claims.items()]}
    return parse_as(ManagedCluster, doc)


def make_placement(terms: list[dict[str, Any]], n: int | None, **spec: Any) -> Placement:
    body: dict[str, Any] = {"spreadPolicy": {"spreadConstraints": terms}, **spec}
    if n is not None:
        body["numberOfClusters"] = n
    return parse_as(
        Placement,
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": body,
        },
    )


def run(
    fleet: FleetSnapshot,
    placement: Placement,
    prio: dict[str, int],
    explain: bool = False,
    filtered_out: frozenset[str] = frozenset(),
) -> tuple[list[str], dict[str, Any]]:
    """Select with `prio` as the prioritizer total; `filtered_out` clusters are in the fleet
    but not candidates, as if an earlier filter had removed them."""
    total = np.zeros(fleet.size, dtype=np.int64)
    for name, value in prio.items():
        total[fleet.index[name]] = value
    candidates = np.ones(fleet.size, dtype=bool)
    for name in filtered_out:
        candidates[fleet.index[name]] = False
    rows = np.flatnonzero(candidates)
    selection = EvenSpread().select(
        Cycle(NOW, {"explain": explain}), placement, fleet, rows, total[rows]
    )
    assert selection.status.ok, selection.status
    return fleet.rows_to_names(selection.rows), selection.trace


WORKED = {
    "c1": (50, "us-east", "us-east-1a"),
    "c2": (50, "us-east", "us-east-1a"),
    "c3": (0, "us-east", "us-east-1b"),
    "c4": (0, "us-west", "us-west-1a"),
    "c5": (50, "us-west", "us-west-1a"),
}
WORKED_TERMS: list[dict[str, Any]] = [
    {"topologyKey": "region", "topologyKeyType": "Label"},
    {
        "topologyKey": "zone",
        "topologyKeyType": "Label",
        "maxSkew": 1,
        "whenUnsatisfiable": "DoNotSchedule",
    },
]


def test_worked_example_of_the_spread_design() -> None:
    fleet = FleetSnapshot.build(
        make_cluster(n, {"region": r, "zone": z}) for n, (_, r, z) in WORKED.items()
    )
    placement = make_placement(WORKED_TERMS, 2)
    picked, trace = run(fleet, placement, {n: p for n, (p, _, _) in WORKED.items()}, explain=True)
    assert picked == ["c1", "c5"]
    assert trace["weight"] == 2
    first, second = trace["steps"]
    assert first["picked"] == "c1"
    assert {c["spreadScore"] for c in first["candidates"]} == {0}
    step = {c["cluster"]: c for c in second["candidates"]}
    assert step["c2"]["excluded"] == {
        "term": 1,
        "topologyKey": "zone",
        "domain": ["us-east", "us-east-1a"],
        "skew": 2,
        "maxSkew": 1,
    }
    assert [step[c]["rawSpreadScore"] for c in ("c3", "c4", "c5")] == [63, 4032, 4032]
    assert [step[c]["spreadScore"] for c in ("c3", "c4", "c5")] == [-100, 100, 100]
    assert [step[c]["finalScore"] for c in ("c3", "c4", "c5")] == [-200, 200, 250]
    assert second["picked"] == "c5"


def zones_of(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in items:
        zone = name.rsplit("-", 1)[0]
        out[zone] = out.get(zone, 0) + 1
    return out


def sample_results() -> dict[str, tuple[list[str], str, str]]:
    objects = [o.obj for o in load_paths([SAMPLES]).objects]
    out: dict[str, tuple[list[str], str, str]] = {}
    for item in simulate(objects, default_scheduler(), NOW):
        if item.placement.namespace != "spread-demo":
            continue
        clusters = [
            d.cluster_name for pd in item.decisions if pd.status for d in pd.status.decisions
        ]
        status = item.placement.status
        assert status is not None and status.conditions is not None
        (satisfied,) = [c for c in status.conditions if c.type == "PlacementSatisfied"]
        out[item.placement.name] = (clusters, satisfied.status, satisfied.message)
    return out


def test_use_case_2_even_spread_takes_two_from_each_zone() -> None:
    clusters, satisfied, _ = sample_results()["spread-even-zones"]
    assert zones_of(clusters) == {"aws-us-east-1a": 2, "aws-us-east-1b": 2}
    assert satisfied == "True"


def test_use_case_3_max_skew_1_schedules_fewer_and_says_so() -> None:
    clusters, satisfied, message = sample_results()["spread-max-skew-1"]
    assert zones_of(clusters) == {"aws-us-east-1a": 2, "aws-us-east-1b": 1}
    assert (satisfied, message) == ("False", "1 cluster decisions unscheduled")


def test_use_case_3_max_skew_2_allows_three_and_one() -> None:
    clusters, satisfied, _ = sample_results()["spread-max-skew-2"]
    assert zones_of(clusters) == {"aws-us-east-1a": 3, "aws-us-east-1b": 1}
    assert satisfied == "True"


def test_use_case_4_joint_spread_goes_region_then_zone() -> None:
    clusters, _, _ = sample_results()["spread-region-zone"]
    assert zones_of(clusters) == {"aws-us-east-1a": 1, "aws-us-east-1b": 1, "aws-us-west-1a": 2}


def test_use_case_1_spreads_over_a_claim_topology() -> None:
    clusters, _, _ = sample_results()["spread-by-rack-claim"]
    assert len(clusters) == 4
    objects = {o.obj.name: o.obj for o in load_paths([SAMPLES / "fleet.yaml"]).objects}
    racks = set()
    for name in clusters:
        cluster = objects[name]
        assert isinstance(cluster, ManagedCluster) and cluster.status is not None
        racks |= {
            c.value
            for c in cluster.status.cluster_claims or []
            if c.name == "topology.example.com/rack"
        }
    assert racks == {"rack-1", "rack-2", "rack-3", "rack-4"}


def test_duplicate_topology_keys_are_a_misconfiguration() -> None:
    fleet = FleetSnapshot.build([make_cluster("a", {"zone": "z"})])
    placement = make_placement(
        [
            {"topologyKey": "zone", "topologyKeyType": "Label"},
            {"topologyKey": "zone", "topologyKeyType": "Claim"},
        ],
        1,
    )
    result = default_scheduler().schedule(placement, fleet, NOW)
    assert result.status.code == Code.MISCONFIGURED
    assert "spreadConstraints[1]: duplicate topologyKey 'zone'" in result.status.message


def test_spread_weight_defaults_and_configuration() -> None:
    terms = [{"topologyKey": "zone", "topologyKeyType": "Label"}]
    spread = {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Spread"}, "weight": 5}
    assert spread_weight(make_placement(terms, 1)) == 2
    assert spread_weight(make_placement(terms, 1, prioritizerPolicy={"mode": "Exact"})) == 0
    exact = {"mode": "Exact", "configurations": [spread]}
    assert spread_weight(make_placement(terms, 1, prioritizerPolicy=exact)) == 5


def test_weight_zero_keeps_the_do_not_schedule_exclusion() -> None:
    fleet = FleetSnapshot.build(
        [make_cluster(f"a{i}", {"zone": "a"}) for i in range(3)]
        + [make_cluster("b0", {"zone": "b"})]
    )
    terms = [
        {"topologyKey": "zone", "topologyKeyType": "Label", "whenUnsatisfiable": "DoNotSchedule"}
    ]
    placement = make_placement(terms, 4, prioritizerPolicy={"mode": "Exact"})
    picked, _ = run(fleet, placement, {"a0": 10, "a1": 9, "a2": 8})
    assert picked == ["a0", "b0", "a1"]


def test_unset_number_of_clusters_takes_as_many_as_do_not_schedule_allows() -> None:
    layout = {**WORKED, "c6": (0, "us-east", "us-east-1a")}
    clusters = [make_cluster(n, {"region": r, "zone": z}) for n, (_, r, z) in layout.items()]
    global_set = parse_object(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSet",
            "metadata": {"name": "global"},
            "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}},
        }
    )
    binding = parse_object(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "ns"},
            "spec": {"clusterSet": "global"},
        }
    )
    fleet = FleetSnapshot.build(clusters, [global_set], [binding])  # type: ignore[list-item]
    placement = make_placement(WORKED_TERMS, None, prioritizerPolicy={"mode": "Exact"})
    result = default_scheduler().schedule(placement, fleet, NOW)
    # us-east-1a has three clusters but us-east-1b only one: maxSkew 1 caps 1a at two.
    assert sorted(fleet.rows_to_names(result.selected)) == ["c1", "c2", "c3", "c4", "c5"]
    assert result.unscheduled == 1


# --- regressions: a higher score always beats a smaller name ----------------------------------


def test_higher_score_wins_over_name_when_filtered_clusters_sit_between() -> None:
    # Ten clusters between "a" and "z" were removed by a filter: rows 0 and 11 of the fleet but
    # only two candidates, each in a zone of its own (so not sorted inside one leaf). The name
    # tie-break must never outweigh a one-point score difference.
    names = ["a", *(f"m{i}" for i in range(10)), "z"]
    fleet = FleetSnapshot.build(make_cluster(name, {"zone": name}) for name in names)
    terms = [{"topologyKey": "zone", "topologyKeyType": "Label"}]
    placement = make_placement(terms, 1, prioritizerPolicy={"mode": "Exact"})
    filtered = frozenset(names[1:-1])
    picked, _ = run(fleet, placement, {"a": 0, "z": 1}, filtered_out=filtered)
    assert picked == ["z"]
    tied, _ = run(fleet, placement, {"a": 1, "z": 1}, filtered_out=filtered)
    assert tied == ["a"]


# Hypothesis's falsifying example for the oracle property (the other 23 clusters of the fleet
# lack every key, so the DoNotSchedule term on k2 makes them unselectable).
ORACLE_CASE_1 = {
    "c02": (-150, ("b", "c", "a")),
    "c08": (0, ("b", "a", "a")),
    "c11": (-100, ("b", "b", "a")),
    "c15": (100, ("b", "a", "a")),
    "c16": (0, ("b", "c", "a")),
    "c27": (100, ("a", "a", "a")),
}


def test_oracle_case_1_fourth_pick_is_the_higher_final_score() -> None:
    candidates = []
    for i in range(29):
        prio, values = ORACLE_CASE_1.get(f"c{i:02d}", (0, (None, None, None)))
        candidates.append(Candidate(f"c{i:02d}", prio, (*values, None, None, None)))
    hard = [False, False, True, False, False, False]
    terms = [
        {
            "topologyKey": f"k{k}",
            "topologyKeyType": "Label",
            "maxSkew": 1,
            "whenUnsatisfiable": "DoNotSchedule" if is_hard else "ScheduleAnyway",
        }
        for k, is_hard in enumerate(hard)
    ]
    spread = {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Spread"}, "weight": -1}
    placement = make_placement(terms, 4, prioritizerPolicy={"configurations": [spread]})
    fleet = fleet_for(candidates, terms)
    picked, trace = run(fleet, placement, {c.name: c.prio for c in candidates}, explain=True)
    expected = ["c15", "c08", "c16", "c27"]
    assert oracle_select(candidates, [Term(1, h) for h in hard], -1, 4) == expected
    assert picked == expected
    # Step 4: c27 (raw 63 at level 0, spread +100, final 0) beats c11 (-99, final -1) and c02.
    fourth = {c["cluster"]: c["finalScore"] for c in trace["steps"][3]["candidates"]}
    assert fourth == {"c02": -50, "c11": -1, "c27": 0}


# --- random instances against the oracle -------------------------------------------------------

VALUES = ["a", "b", "c", "d"]


@st.composite
def instances(
    draw: st.DrawFn,
) -> tuple[list[Candidate], list[dict[str, Any]], list[Term], int, int]:
    levels = draw(st.integers(1, 8))
    size = draw(st.integers(1, 30))
    alphabet = draw(st.integers(1, 4))
    terms = []
    oracle_terms = []
    for k in range(levels):
        hard = draw(st.booleans())
        skew = draw(st.integers(1, 3))
        kind = draw(st.sampled_from(["Label", "Claim"]))
        terms.append(
            {
                "topologyKey": f"k{k}",
                "topologyKeyType": kind,
                "maxSkew": skew,
                "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
            }
        )
        oracle_terms.append(Term(skew, hard))
    candidates = []
    for i in range(size):
        values = tuple(
            draw(st.one_of(st.none(), st.sampled_from(VALUES[:alphabet])))
            if draw(st.integers(0, 9)) == 0
            else draw(st.sampled_from(VALUES[:alphabet]))
            for _ in range(levels)
        )
        # coarse totals tie often; fine ones differ by a point or two, as floor normalization
        # makes spread scores do
        prio = draw(st.integers(-3, 3)) * 50 + draw(st.sampled_from([0, 0, 1, -1, 2]))
        candidates.append(Candidate(f"c{i:02d}", prio, values))
    weight = draw(st.integers(-2, 5))
    n = draw(st.integers(0, size + 2))
    return candidates, terms, oracle_terms, weight, n


def fleet_for(candidates: list[Candidate], terms: list[dict[str, Any]]) -> FleetSnapshot:
    clusters = []
    for c in candidates:
        labels = {
            t["topologyKey"]: v
            for t, v in zip(terms, c.values, strict=True)
            if v is not None and t["topologyKeyType"] == "Label"
        }
        claims = {
            t["topologyKey"]: v
            for t, v in zip(terms, c.values, strict=True)
            if v is not None and t["topologyKeyType"] == "Claim"
        }
        clusters.append(make_cluster(c.name, labels, claims))
    random.Random(len(candidates)).shuffle(clusters)
    return FleetSnapshot.build(clusters)


@settings(max_examples=300, deadline=None)
@given(instances(), st.data())
def test_vectorized_selector_matches_the_oracle(
    case: tuple[list[Candidate], list[dict[str, Any]], list[Term], int, int], data: st.DataObject
) -> None:
    candidates, terms, oracle_terms, weight, n = case
    # Some clusters were removed by earlier filters: in the fleet, not candidates. Filters that
    # keep few clusters make candidate rows sparse among the fleet's rows.
    rate = data.draw(st.sampled_from([0, 50, 80, 95]))
    filtered = frozenset(c.name for c in candidates if data.draw(st.integers(0, 99)) < rate)
    fleet = fleet_for(candidates, terms)
    spread = {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Spread"}, "weight": weight}
    placement = make_placement(terms, n, prioritizerPolicy={"configurations": [spread]})
    picked, _ = run(fleet, placement, {c.name: c.prio for c in candidates}, filtered_out=filtered)
    remaining = [c for c in candidates if c.name not in filtered]
    assert picked == oracle_select(remaining, oracle_terms, weight, n)


@settings(max_examples=200, deadline=None)
@given(instances(), st.data())
def test_explain_picks_what_the_selector_picks_without_it(
    case: tuple[list[Candidate], list[dict[str, Any]], list[Term], int, int], data: st.DataObject
) -> None:
    # Two code paths: without explain all levels are evaluated at once and the pick keys are
    # folded; explain goes level by level to report each exclusion. They must agree.
    candidates, terms, _, weight, n = case
    rate = data.draw(st.sampled_from([0, 50, 90]))
    filtered = frozenset(c.name for c in candidates if data.draw(st.integers(0, 99)) < rate)
    fleet = fleet_for(candidates, terms)
    spread = {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Spread"}, "weight": weight}
    placement = make_placement(terms, n, prioritizerPolicy={"configurations": [spread]})
    prio = {c.name: c.prio for c in candidates}
    quick, _ = run(fleet, placement, prio, filtered_out=filtered)
    explained, trace = run(fleet, placement, prio, filtered_out=filtered, explain=True)
    assert quick == explained
    assert [step["picked"] for step in trace.get("steps", [])] == explained


@settings(max_examples=200, deadline=None)
@given(instances())
def test_every_prefix_respects_max_skew_among_siblings(
    case: tuple[list[Candidate], list[dict[str, Any]], list[Term], int, int],
) -> None:
    candidates, terms, oracle_terms, _weight, n = case
    fleet = fleet_for(candidates, terms)
    placement = make_placement(terms, n)
    picked, _ = run(fleet, placement, {c.name: c.prio for c in candidates})
    by_name = {c.name: c for c in candidates}
    deepest = max((k for k, t in enumerate(oracle_terms) if t.hard), default=-1)
    usable = [c for c in candidates if all(v is not None for v in c.values[: deepest + 1])]
    for end in range(1, len(picked) + 1):
        chosen = [by_name[name] for name in picked[:end]]
        for k, term in enumerate(oracle_terms):
            if not term.hard:
                continue
            domains = {c.values[: k + 1] for c in usable}
            counts = {d: sum(1 for c in chosen if c.values[: k + 1] == d) for d in domains}
            for d in domains:
                siblings = [counts[e] for e in domains if e[:-1] == d[:-1]]
                assert max(siblings) - min(siblings) <= term.max_skew


@settings(max_examples=100, deadline=None)
@given(instances(), st.randoms())
def test_result_does_not_depend_on_cluster_input_order(
    case: tuple[list[Candidate], list[dict[str, Any]], list[Term], int, int], rnd: random.Random
) -> None:
    candidates, terms, _, _, n = case
    placement = make_placement(terms, n)
    prio = {c.name: c.prio for c in candidates}
    first, _ = run(fleet_for(candidates, terms), placement, prio)
    shuffled = list(candidates)
    rnd.shuffle(shuffled)
    second, _ = run(fleet_for(shuffled, terms), placement, prio)
    assert first == second
