"""The scale harness's workload generator: deterministic, realistic in its cardinalities and
shares, valid for our models, and a working input of `placement simulate` and its own CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from apis.cluster import CLUSTER_SET_LABEL, ManagedCluster
from apis.core import Namespace
from apis.meta import KubeObject, format_time
from apis.placements import Placement
from controllers.cli import main as cli
from controllers.cli.manifests import load_paths
from perf import workload
from perf._workload_fleet import (
    CLAIM_KUBEVERSION,
    CLAIM_REGION,
    SCORE_SHARE,
    TAINT_SHARES,
    TOPOLOGY,
    VALID_SCORE_SHARE,
)
from perf._workload_placements import (
    CLUSTER_SETS_SHARE,
    GROUPS_SHARE,
    NUMBERED_SHARE,
    SPREAD_SHARE,
    TOLERATION_SHARE,
)
from perf.workload import NOW, Workload, generate, write_yaml


@cache
def large() -> Workload:
    """Big enough for shares to settle (about a second to build)."""
    return generate(4000, 600, seed=11)


def wire(objects: list[KubeObject]) -> list[dict[str, Any]]:
    return [o.to_wire() for o in objects]


def share(flags: list[bool]) -> float:
    return sum(flags) / len(flags)


# --- determinism -------------------------------------------------------------------------------


def test_same_seed_gives_identical_objects() -> None:
    assert wire(generate(150, 30, seed=5).objects()) == wire(generate(150, 30, seed=5).objects())


def test_different_seeds_give_different_clusters_and_placements() -> None:
    one, two = generate(150, 30, seed=5), generate(150, 30, seed=6)
    assert wire(list(one.clusters)) != wire(list(two.clusters))
    assert wire(list(one.placements)) != wire(list(two.placements))


def test_fleet_does_not_depend_on_the_number_of_placements() -> None:
    few, many = generate(100, 5, seed=2), generate(100, 200, seed=2)
    assert wire(list(few.clusters)) == wire(list(many.clusters))
    assert wire(list(few.scores)) == wire(list(many.scores))


@pytest.mark.parametrize(
    ("clusters", "placements"),
    [
        pytest.param(0, 0, id="empty-hub"),
        pytest.param(0, 5, id="placements-without-clusters"),
        pytest.param(5, 0, id="clusters-without-placements"),
    ],
)
def test_empty_counts_give_an_empty_part(clusters: int, placements: int) -> None:
    made = generate(clusters, placements)
    assert (len(made.clusters), len(made.placements)) == (clusters, placements)
    assert len(made.bindings) > 0 if placements else made.bindings == ()


@pytest.mark.parametrize(
    ("clusters", "placements", "seed"),
    [
        pytest.param(-1, 1, 0, id="negative-clusters"),
        pytest.param(1, -1, 0, id="negative-placements"),
        pytest.param(1, 1, -1, id="negative-seed"),
    ],
)
def test_negative_arguments_are_refused(clusters: int, placements: int, seed: int) -> None:
    with pytest.raises(ValueError, match="negative"):
        generate(clusters, placements, seed)


# --- validity ----------------------------------------------------------------------------------


def test_every_object_round_trips_through_model_validation() -> None:
    for obj in generate(300, 80, seed=9).objects():
        again = type(obj).model_validate(obj.to_wire())
        assert again == obj
        assert again.to_wire() == obj.to_wire()


def test_references_between_objects_resolve() -> None:
    made = large()
    names = {c.name for c in made.clusters}
    sets = {s.name for s in made.cluster_sets}
    bound: dict[str, set[str]] = {}
    for b in made.bindings:
        assert b.name == b.spec.cluster_set and b.spec.cluster_set in sets
        bound.setdefault(b.namespace, set()).add(b.name)
    assert {s.namespace for s in made.scores} <= names
    for p in made.placements:
        assert set(p.spec.cluster_sets or []) <= bound[p.namespace]


def test_snapshot_holds_the_fleet_with_every_cluster_in_the_global_set() -> None:
    made = generate(200, 10, seed=4)
    fleet = made.snapshot()
    assert fleet.size == 200
    assert set(fleet.cluster_sets) == {s.name for s in made.cluster_sets}


# --- realism -----------------------------------------------------------------------------------


def test_catalog_has_a_handful_of_providers_tens_of_regions_and_over_a_hundred_zones() -> None:
    assert len(TOPOLOGY.providers) == 4
    assert 30 <= len(TOPOLOGY.regions) <= 60
    assert 100 <= len(TOPOLOGY.zones) <= 200
    assert len(set(TOPOLOGY.zones)) == len(TOPOLOGY.zones)


def test_clusters_spread_over_most_zones_with_skewed_sizes() -> None:
    labels = [c.metadata.labels or {} for c in large().clusters]
    per_zone: dict[str, int] = {}
    for item in labels:
        per_zone[item["zone"]] = per_zone.get(item["zone"], 0) + 1
    assert len({item["provider"] for item in labels}) == 4
    assert len({item["region"] for item in labels}) == len(TOPOLOGY.regions)
    assert len(per_zone) >= 110
    assert max(per_zone.values()) >= 10 * min(per_zone.values())


def cluster_flags(check: Callable[[ManagedCluster], bool]) -> float:
    return share([check(c) for c in large().clusters])


@pytest.mark.parametrize(
    ("measure", "expected"),
    [
        pytest.param(
            lambda: cluster_flags(lambda c: bool(c.spec.taints)), sum(TAINT_SHARES), id="tainted"
        ),
        pytest.param(
            lambda: cluster_flags(
                lambda c: any(t.effect == "NoSelect" for t in c.spec.taints or [])
            ),
            TAINT_SHARES[0],
            id="unreachable",
        ),
        pytest.param(lambda: len(large().scores) / len(large().clusters), SCORE_SHARE, id="scored"),
        pytest.param(
            lambda: share(
                [
                    s.status.valid_until > NOW
                    for s in large().scores
                    if s.status and s.status.valid_until
                ]
            ),
            VALID_SCORE_SHARE,
            id="scores-valid",
        ),
        pytest.param(
            lambda: cluster_flags(
                lambda c: (c.metadata.labels or {}).get(CLUSTER_SET_LABEL) == "default"
            ),
            0.85,
            id="exclusive-default-set",
        ),
    ],
)
def test_cluster_shares_are_as_documented(measure: Callable[[], float], expected: float) -> None:
    assert measure() == pytest.approx(expected, rel=0.35, abs=0.004)


def test_taints_carry_time_added_so_toleration_seconds_matter() -> None:
    taints = [t for c in large().clusters for t in c.spec.taints or []]
    assert taints
    assert all(t.time_added is not None for t in taints if t.effect == "NoSelect")
    assert all(t.time_added is None or t.time_added < NOW for t in taints)
    assert any(t.time_added is None for t in taints)


def test_allocatable_never_exceeds_capacity() -> None:
    for c in large().clusters[:500]:
        assert c.status and c.status.allocatable and c.status.capacity
        for resource in ("cpu", "memory"):
            assert 0 < c.status.allocatable[resource].value <= c.status.capacity[resource].value


# --- the placement mix -------------------------------------------------------------------------


def _claims(p: Placement) -> bool:
    return any(
        pr.required_cluster_selector and pr.required_cluster_selector.claim_selector
        for pr in p.spec.predicates or []
    )


def _operators(p: Placement) -> set[str]:
    found: set[str] = set()
    for pr in p.spec.predicates or []:
        selector = pr.required_cluster_selector
        if selector and selector.label_selector:
            found |= {e.operator for e in selector.label_selector.match_expressions or []}
        if selector and selector.claim_selector:
            found |= {e.operator for e in selector.claim_selector.match_expressions or []}
    return found


def _mode(p: Placement) -> str:
    return p.spec.prioritizer_policy.mode if p.spec.prioritizer_policy else ""


def _spread_terms(p: Placement) -> list[dict[str, Any]]:
    policy = p.spec.spread_policy
    return [t.to_wire() for t in (policy.spread_constraints or [])] if policy else []


def _coordinates(p: Placement) -> list[tuple[str, str | None]]:
    policy = p.spec.prioritizer_policy
    return [
        (c.score_coordinate.type, c.score_coordinate.built_in)
        for c in (policy.configurations or [] if policy else [])
    ]


def _per_group(p: Placement) -> list[int | str]:
    strategy = p.spec.decision_strategy
    group = strategy.group_strategy if strategy else None
    return (
        [group.clusters_per_decision_group]
        if group and "clusters_per_decision_group" in group.model_fields_set
        else []
    )


FEATURES = [
    pytest.param(lambda p: p.spec.spread_policy is not None, SPREAD_SHARE, id="spread"),
    pytest.param(
        lambda p: p.spec.decision_strategy is not None, GROUPS_SHARE, id="decision-groups"
    ),
    pytest.param(lambda p: bool(p.spec.tolerations), TOLERATION_SHARE, id="tolerations"),
    pytest.param(lambda p: bool(p.spec.cluster_sets), CLUSTER_SETS_SHARE, id="cluster-sets"),
    pytest.param(lambda p: p.spec.number_of_clusters is not None, NUMBERED_SHARE, id="numbered"),
    pytest.param(lambda p: _mode(p) == "Exact", 0.25, id="exact"),
    pytest.param(lambda p: _mode(p) == "Additive", 0.35, id="additive"),
    pytest.param(lambda p: _mode(p) == "", 0.4, id="default-prioritizers"),
    pytest.param(_claims, 0.2, id="claim-predicates"),
]


@pytest.mark.parametrize(("feature", "expected"), FEATURES)
def test_placement_feature_shares_are_as_documented(
    feature: Callable[[Placement], bool], expected: float
) -> None:
    assert share([feature(p) for p in large().placements]) == pytest.approx(expected, rel=0.35)


RARE = [
    pytest.param(lambda p: "In" in _operators(p), id="operator-in"),
    pytest.param(lambda p: "NotIn" in _operators(p), id="operator-notin"),
    pytest.param(lambda p: "Exists" in _operators(p), id="operator-exists"),
    pytest.param(lambda p: len(p.spec.predicates or []) > 1, id="ored-predicates"),
    pytest.param(
        lambda p: any(t.toleration_seconds for t in p.spec.tolerations or []),
        id="toleration-seconds",
    ),
    pytest.param(lambda p: ("AddOn", None) in _coordinates(p), id="addon-prioritizer"),
    pytest.param(lambda p: ("BuiltIn", "Spread") in _coordinates(p), id="spread-weight"),
    pytest.param(lambda p: any(isinstance(v, int) for v in _per_group(p)), id="groups-of-n"),
    pytest.param(lambda p: any(isinstance(v, str) for v in _per_group(p)), id="groups-percent"),
    pytest.param(
        lambda p: bool(
            p.spec.decision_strategy
            and p.spec.decision_strategy.group_strategy
            and p.spec.decision_strategy.group_strategy.decision_groups
        ),
        id="named-decision-groups",
    ),
    pytest.param(
        lambda p: any(t.get("whenUnsatisfiable") == "DoNotSchedule" for t in _spread_terms(p)),
        id="spread-do-not-schedule",
    ),
    pytest.param(
        lambda p: any(t["topologyKey"] == CLAIM_REGION for t in _spread_terms(p)),
        id="spread-over-a-claim",
    ),
    pytest.param(lambda p: len(_spread_terms(p)) == 3, id="spread-three-levels"),
]


@pytest.mark.parametrize("feature", RARE)
def test_placement_mix_contains_the_feature(feature: Callable[[Placement], bool]) -> None:
    assert any(feature(p) for p in large().placements)


def test_placements_refer_to_claims_and_values_the_fleet_has() -> None:
    versions = {
        claim.value
        for c in large().clusters
        for claim in (c.status.cluster_claims or [] if c.status else [])
        if claim.name == CLAIM_KUBEVERSION
    }
    for p in large().placements:
        for pr in p.spec.predicates or []:
            claims = (
                pr.required_cluster_selector.claim_selector
                if pr.required_cluster_selector
                else None
            )
            for e in claims.match_expressions or [] if claims else []:
                if e.key == CLAIM_KUBEVERSION:
                    assert set(e.values or []) <= versions


# --- YAML, simulate and the command line -------------------------------------------------------


def test_written_yaml_loads_back_as_the_same_objects(tmp_path: Path) -> None:
    made = generate(40, 10, seed=3)
    paths = write_yaml(made, tmp_path)
    assert [p.name for p in paths] == [
        "00-namespaces.yaml",
        "clusters.yaml",
        "clustersets.yaml",
        "bindings.yaml",
        "scores.yaml",
        "placements.yaml",
    ]
    loaded = load_paths([tmp_path])
    assert loaded.errors == []
    namespaces = [o.obj for o in loaded.objects if isinstance(o.obj, Namespace)]
    others = [o.obj for o in loaded.objects if not isinstance(o.obj, Namespace)]
    assert sorted(json.dumps(d, sort_keys=True) for d in wire(others)) == sorted(
        json.dumps(d, sort_keys=True) for d in wire(made.objects())
    )
    assert {n.name for n in namespaces} >= {s.namespace for s in made.scores} | {
        p.namespace for p in made.placements
    }


def test_placement_simulate_schedules_every_generated_placement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = generate(60, 12, seed=1)
    write_yaml(made, tmp_path)
    code = cli.main(["simulate", "-f", str(tmp_path), "--now", format_time(NOW)])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_OK, err
    items = json.loads(out)["items"]
    placements = [i for i in items if i["kind"] == "Placement"]
    assert len(placements) == 12
    for p in placements:
        conditions = {c["type"]: c for c in p["status"]["conditions"]}
        assert conditions["PlacementMisconfigured"]["status"] == "False"
        assert conditions["PlacementSatisfied"]["status"] in ("True", "False")
    assert any(i["kind"] == "PlacementDecision" for i in items)
    assert "Namespace" in err  # skipped with a warning, not an error


def test_command_line_writes_the_files_and_prints_counts_per_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "hub"
    code = workload.main(
        ["--clusters", "20", "--placements", "4", "--seed", "2", "-o", str(folder)]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert "20 ManagedCluster" in out and "4 Placement" in out and str(folder) in out
    assert (folder / "clusters.yaml").read_text().count("kind: ManagedCluster") == 20


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--clusters", "-3", "--placements", "1"], "must not be negative", id="negative"
        ),
        pytest.param(
            ["--clusters", "ten", "--placements", "1"], "not an integer", id="not-a-number"
        ),
        pytest.param(
            ["--clusters", "1", "--placements", "1", "--now", "noon"], "RFC 3339", id="bad-now"
        ),
        pytest.param(["--placements", "1"], "--clusters", id="missing-count"),
    ],
)
def test_command_line_refuses_bad_arguments_with_usage_exit_code(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        workload.main([*argv, "-o", str(tmp_path)])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_command_line_reports_an_unwritable_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = workload.main(["--clusters", "1", "--placements", "1", "-o", str(blocker / "hub")])
    assert code == 1
    assert f"error: cannot write to {blocker / 'hub'}" in capsys.readouterr().err
