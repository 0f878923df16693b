"""The design documents' examples (issue 21): the resource-based scheduling design's four
Placements (`config/samples/designs/resource-based/`) and the spread design's four examples
(`config/samples/designs/spread/`), each scheduled with its fleet to the outcome its story
describes; ResourceRatioCPU / ResourceRatioMemory scores; the v1alpha1 conversion and its notice.
Each file holds the v1beta1 form (a real hub serves no other) and, in a comment, the design's own
v1alpha1 text, which converts to exactly that form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from apis.cluster import ManagedCluster
from apis.conversion import V1BETA1, convert_placement
from apis.meta import KubeObject
from controllers.cli.manifests import _builtin_prioritizers, load_paths
from placement.simulate import Simulated, simulate
from placement.testing import NOW, cluster, global_set, placement, snapshot
from plugins import default_registry, default_scheduler
from plugins.resource import ResourceRatio
from tests.controllers.cli.samples import ROOT

DESIGNS = ROOT / "config" / "samples" / "designs"
RESOURCE = DESIGNS / "resource-based"
SPREAD = DESIGNS / "spread"


def load(*paths: Path) -> tuple[list[KubeObject], list[str]]:
    result = load_paths(list(paths))
    assert result.errors == []
    return [o.obj for o in result.objects], [str(w) for w in result.warnings]


def chosen(item: Simulated) -> list[str]:
    return [d.cluster_name for pd in item.decisions if pd.status for d in pd.status.decisions]


def run(objects: list[KubeObject]) -> Simulated:
    (item,) = simulate(objects, default_scheduler(), NOW)
    return item


def satisfied(item: Simulated) -> tuple[str, str]:
    status = item.placement.status
    assert status is not None
    (cond,) = [c for c in status.conditions or [] if c.type == "PlacementSatisfied"]
    return cond.status, cond.message


def with_cluster(objects: list[KubeObject], name: str, status: dict[str, Any]) -> list[KubeObject]:
    """The objects with one ManagedCluster's status changed (a new report from its agent)."""
    out: list[KubeObject] = []
    for obj in objects:
        if isinstance(obj, ManagedCluster) and obj.name == name:
            wire = obj.to_wire()
            wire["status"] = {**wire.get("status", {}), **status}
            obj = ManagedCluster.model_validate(wire)
        out.append(obj)
    return out


# --- ResourceRatio -----------------------------------------------------------------------------


def test_resource_ratio_scores_go_truncated_ratio_and_skips_missing_amounts() -> None:
    fleet = snapshot(
        [
            cluster("full", allocatable={"cpu": "8"}, capacity={"cpu": "8"}),
            cluster("half", allocatable={"cpu": "4"}, capacity={"cpu": "8"}),
            cluster("none", allocatable={"cpu": "0"}, capacity={"cpu": "8"}),
            cluster("odd", allocatable={"cpu": "7"}, capacity={"cpu": "16"}),  # 0.4375: -12.5
            cluster("no-capacity", allocatable={"cpu": "4"}),
            cluster("zero-capacity", allocatable={"cpu": "0"}, capacity={"cpu": "0"}),
            cluster("no-allocatable", capacity={"cpu": "8"}),
            *global_set("apps"),
        ]
    )
    rows = np.arange(fleet.size)
    result = ResourceRatio("ResourceRatioCPU").score(
        None,  # type: ignore[arg-type]  # the prioritizer does not read the cycle
        placement("apps", "p"),
        fleet,
        rows,
    )
    by_name = dict(zip(fleet.names, result.scores.tolist(), strict=True))
    assert by_name["full"] == 100
    assert by_name["half"] == 0
    assert by_name["none"] == -100
    assert by_name["odd"] == -12  # truncated toward zero, as Go's int64()
    assert result.scored is not None
    scored = dict(zip(fleet.names, result.scored.tolist(), strict=True))
    assert {n for n, ok in scored.items() if not ok} == {
        "no-capacity",
        "zero-capacity",
        "no-allocatable",
    }


def test_resource_ratio_names_are_builtin_prioritizers() -> None:
    assert {"ResourceRatioCPU", "ResourceRatioMemory"} <= set(default_registry().prioritizers)


# --- v1alpha1 conversion ------------------------------------------------------------------------


def test_v1alpha1_forms_convert_to_score_coordinates() -> None:
    doc: dict[str, Any] = {
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
        "kind": "Placement",
        "metadata": {"name": "p", "namespace": "ns1"},
        "spec": {
            "prioritizerPolicy": {
                "mode": "Exact",
                "configurations": [
                    {"name": "balance", "weight": 2},
                    {"type": "AddOnScore", "scoreResourceName": "r", "scoreName": "s"},
                    {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Steady"}},
                ],
            },
            "prioritizerConfigs": [{"name": "ResourceRatioCPU", "weight": 3}],
        },
    }
    converted, notice = convert_placement(doc, ["Balance", "Steady", "ResourceRatioCPU"])
    assert converted["apiVersion"] == V1BETA1
    assert "prioritizerConfigs" not in converted["spec"]
    assert converted["spec"]["prioritizerPolicy"] == {
        "mode": "Exact",
        "configurations": [
            {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Balance"}, "weight": 2},
            {
                "scoreCoordinate": {
                    "type": "AddOn",
                    "addOn": {"resourceName": "r", "scoreName": "s"},
                }
            },
            {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Steady"}},
            {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceRatioCPU"}, "weight": 3},
        ],
    }
    assert notice == (
        "Placement ns1/p: cluster.open-cluster-management.io/v1alpha1 converted to "
        "cluster.open-cluster-management.io/v1beta1 (prioritizerConfigs → "
        "prioritizerPolicy.configurations; balance → Balance)"
    )
    assert doc["apiVersion"].endswith("v1alpha1")  # the input is left alone


def test_other_documents_are_not_converted() -> None:
    beta = {"apiVersion": V1BETA1, "kind": "Placement", "metadata": {"name": "p"}}
    assert convert_placement(beta, []) == (beta, None)
    score = {
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
        "kind": "AddOnPlacementScore",
    }
    assert convert_placement(score, []) == (score, None)


def test_unknown_builtin_keeps_its_name_and_is_misconfigured_as_ocm(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "apiVersion: cluster.open-cluster-management.io/v1alpha1\nkind: Placement\n"
        "metadata: {name: p, namespace: apps}\nspec:\n  prioritizerConfigs:\n"
        "    - name: Magic\n"
    )
    objects, warnings = load(path)
    item = run([*objects, *global_set("apps"), cluster("a")])
    status = item.placement.status
    assert status is not None
    (cond,) = [c for c in status.conditions or [] if c.type == "PlacementMisconfigured"]
    assert cond.message == ":incorrect builtin prioritizer: Magic"
    assert len(warnings) == 1 and "converted" in warnings[0]


# --- the resource-based scheduling design's examples --------------------------------------------


def story(number: int) -> tuple[list[KubeObject], list[str]]:
    return load(RESOURCE / "fleet.yaml", RESOURCE / f"story-{number}.yaml")


DESIGN_FORM = "# The design writes it in the v1alpha1 form"


def design_form(path: Path) -> dict[str, Any]:
    """The design's own v1alpha1 text, kept in the file's comment under DESIGN_FORM."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(DESIGN_FORM))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith("#"):
            break
        if line.startswith("#   "):
            body.append(line[4:])
    doc: dict[str, Any] = yaml.safe_load("\n".join(body))
    return doc


DESIGN_PLACEMENTS = sorted(p for p in DESIGNS.rglob("*.yaml") if "kind: Placement" in p.read_text())


@pytest.mark.parametrize("path", DESIGN_PLACEMENTS, ids=lambda p: p.name)
def test_the_designs_own_form_converts_to_the_placement_the_file_holds(path: Path) -> None:
    original = design_form(path)
    assert original["apiVersion"] == "cluster.open-cluster-management.io/v1alpha1"
    converted, notice = convert_placement(original, _builtin_prioritizers())
    (held,) = yaml.safe_load_all(path.read_text())
    assert held["apiVersion"] == V1BETA1
    assert converted == held
    assert notice is not None and "converted to" in notice
    _, warnings = load(path)
    assert warnings == []  # the file itself needs no conversion


def test_the_resource_stories_were_written_with_prioritizer_configs() -> None:
    for number in (1, 2, 3, 4):
        assert "prioritizerConfigs" in design_form(RESOURCE / f"story-{number}.yaml")["spec"]


def test_story_1_selects_the_clusters_with_the_largest_cpu_and_memory_ratios() -> None:
    objects, _ = story(1)
    item = run(objects)
    assert sorted(chosen(item)) == ["rb-cluster-1", "rb-cluster-2", "rb-cluster-4"]
    assert satisfied(item)[0] == "True"


def test_story_2_selects_the_cluster_with_the_most_allocatable_memory() -> None:
    objects, _ = story(2)
    assert chosen(run(objects)) == ["rb-cluster-2"]


def test_story_3_follows_resource_changes() -> None:
    objects, _ = story(3)
    first = run(objects)
    assert sorted(chosen(first)) == ["rb-cluster-1", "rb-cluster-4"]
    # rb-cluster-4's cpu fills up: the resource prioritizers (weight 2) outweigh Steady (1).
    changed = with_cluster(objects, "rb-cluster-4", {"allocatable": {"cpu": "1", "memory": "28Gi"}})
    second = run([*changed, *first.decisions])
    assert sorted(chosen(second)) == ["rb-cluster-1", "rb-cluster-2"]


def test_story_4_pins_the_decisions() -> None:
    objects, _ = story(4)
    _, notice = convert_placement(design_form(RESOURCE / "story-4.yaml"), _builtin_prioritizers())
    assert notice is not None and "steady → Steady" in notice
    first = run(objects)
    assert sorted(chosen(first)) == ["rb-cluster-1", "rb-cluster-2", "rb-cluster-3", "rb-cluster-4"]
    # rb-cluster-5 now has almost the most cpu; Steady (weight 3) keeps the decisions.
    changed = with_cluster(objects, "rb-cluster-5", {"allocatable": {"cpu": "29", "memory": "6Gi"}})
    second = run([*changed, *first.decisions])
    assert sorted(chosen(second)) == sorted(chosen(first))
    # Without the earlier decisions (no Steady bonus) rb-cluster-5 would be chosen.
    assert "rb-cluster-5" in chosen(run(changed))


# --- the spread design's examples ----------------------------------------------------------------


ALL = "All cluster decisions scheduled"
ONE_SHORT = "1 cluster decisions unscheduled"


def spread_example(name: str) -> Simulated:
    objects, _ = load(SPREAD / "fleet.yaml", SPREAD / name)
    return run(objects)


def zones(item: Simulated, objects: list[KubeObject]) -> dict[str, int]:
    zone_of = {
        o.name: (o.metadata.labels or {}).get("zone")
        for o in objects
        if isinstance(o, ManagedCluster)
    }
    counts: dict[str, int] = {}
    for name in chosen(item):
        zone = zone_of[name] or ""
        counts[zone] = counts.get(zone, 0) + 1
    return counts


@pytest.mark.parametrize(
    ("name", "expected", "state"),
    [
        (
            "use-case-2-even-spread.yaml",
            {"us-east-1a": 2, "us-east-1b": 2},
            ("True", "All cluster decisions scheduled"),
        ),
        (
            "use-case-3-max-skew.yaml",
            {"us-east-1a": 2, "us-east-1b": 1},
            ("False", "1 cluster decisions unscheduled"),
        ),
        (
            "use-case-5-joint-spread.yaml",
            {"us-east-1a": 1, "us-east-1b": 1, "us-west-1a": 2},
            ("True", "All cluster decisions scheduled"),
        ),
    ],
)
def test_spread_use_cases_spread_as_the_design_says(
    name: str, expected: dict[str, int], state: tuple[str, str]
) -> None:
    objects, _ = load(SPREAD / "fleet.yaml", SPREAD / name)
    item = run(objects)
    assert zones(item, objects) == expected
    assert satisfied(item) == state


def test_spread_implementation_example_picks_c1_then_c5() -> None:
    item = spread_example("implementation-example.yaml")
    assert sorted(chosen(item)) == ["c1", "c5"]
    # Without the spread policy the prioritizer scores alone would take c1 and c2.
    objects, _ = load(SPREAD / "fleet.yaml", SPREAD / "implementation-example.yaml")
    plain = []
    for obj in objects:
        if obj.KIND == "Placement":
            wire = obj.to_wire()
            del wire["spec"]["spreadPolicy"]
            wire["spec"]["prioritizerPolicy"]["configurations"].pop()  # the Spread weight
            obj = type(obj).model_validate(wire)
        plain.append(obj)
    assert sorted(chosen(run(plain))) == ["c1", "c2"]
