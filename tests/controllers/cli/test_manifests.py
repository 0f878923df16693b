"""Loading manifests: samples, the corpus of malformed objects, folders, lists and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from apis import ManagedCluster, Placement
from apis.conversion import convert_placement
from controllers.cli.manifests import Validation, dump_yaml, load_paths, read_documents
from plugins import default_registry

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "config" / "samples"
INVALID = ROOT / "tests" / "data" / "invalid"
INVALID_FILES = sorted(p for p in INVALID.iterdir() if p.suffix in (".yaml", ".json"))


def expectations(path: Path) -> list[str]:
    source = path.with_suffix(".expect") if path.suffix == ".json" else path
    return [
        line.split("# expect:", 1)[1].strip()
        for line in source.read_text(encoding="utf-8").splitlines()
        if line.startswith("# expect:")
    ]


def test_invalid_corpus_is_large_enough() -> None:
    assert len(INVALID_FILES) >= 30


@pytest.mark.parametrize("path", INVALID_FILES, ids=[p.name for p in INVALID_FILES])
def test_malformed_object_gets_an_error_naming_file_object_and_field(path: Path) -> None:
    expected = expectations(path)
    assert expected, f"{path.name} states no expected error"
    result = load_paths([path])
    assert result.errors, f"{path.name} was accepted"
    text = "\n".join(str(error) for error in result.errors)
    for fragment in expected:
        assert fragment in text
    for line in text.splitlines():
        assert line.startswith(f"{path}: "), line


def test_whole_invalid_folder_loads_without_raising_and_keeps_good_documents() -> None:
    result = load_paths([INVALID])
    assert len(result.errors) >= len(INVALID_FILES)
    # multi-doc-second-invalid.yaml: document 1 is fine and must not be lost
    assert any(o.source.endswith("multi-doc-second-invalid.yaml") for o in result.objects)


def test_every_sample_parses() -> None:
    result = load_paths([SAMPLES])
    assert result.errors == []
    kinds = {type(o.obj).__name__ for o in result.objects}
    assert {
        "ManagedCluster",
        "ManagedClusterSet",
        "ManagedClusterSetBinding",
        "Placement",
        "AddOnPlacementScore",
        "PodGroup",
        "ElasticQuota",
    } <= kinds


def sample_documents() -> list[tuple[str, int, dict[str, object]]]:
    docs = []
    for path in sorted(SAMPLES.rglob("*.yaml")):
        for index, data in enumerate(yaml.safe_load_all(path.read_text()), start=1):
            if data is not None:
                docs.append((str(path.relative_to(SAMPLES)), index, data))
    return docs


def test_every_sample_round_trips_exactly() -> None:
    # v1alpha1 Placements (the design documents' examples) round-trip in their v1beta1 form.
    builtins = list(default_registry().prioritizers)
    result = load_paths([SAMPLES])
    originals = {(s, i): d for s, i, d in sample_documents()}
    assert len(originals) == len(result.objects)
    for loaded in result.objects:
        source = str(Path(loaded.source).relative_to(SAMPLES))
        original, _ = convert_placement(originals[(source, loaded.index)], builtins)
        assert loaded.obj.to_wire() == original


def test_samples_cover_the_features_of_the_placement_api() -> None:
    objects = [o.obj for o in load_paths([SAMPLES / "hub"]).objects]
    clusters = [o for o in objects if isinstance(o, ManagedCluster)]
    placements = [o for o in objects if isinstance(o, Placement)]
    assert 15 <= len(clusters) <= 30
    assert any(c.spec.taints for c in clusters)
    assert all(c.status and c.status.cluster_claims for c in clusters)
    specs = [p.spec for p in placements]
    selectors = [
        pred.required_cluster_selector
        for s in specs
        for pred in s.predicates or []
        if pred.required_cluster_selector
    ]
    assert any(sel.label_selector for sel in selectors)
    assert any(sel.claim_selector for sel in selectors)
    assert any(s.tolerations for s in specs)
    modes = {s.prioritizer_policy.mode for s in specs if s.prioritizer_policy}
    assert {"Additive", "Exact"} <= modes
    coordinates = [
        c.score_coordinate
        for s in specs
        if s.prioritizer_policy
        for c in s.prioritizer_policy.configurations or []
    ]
    assert {"ResourceAllocatableCPU", "ResourceAllocatableMemory"} <= {
        c.built_in for c in coordinates
    }
    assert any(c.type == "AddOn" for c in coordinates)
    assert any(
        s.decision_strategy
        and s.decision_strategy.group_strategy
        and s.decision_strategy.group_strategy.decision_groups
        for s in specs
    )
    terms = [t for s in specs if s.spread_policy for t in s.spread_policy.spread_constraints or []]
    assert {t.topology_key_type for t in terms} == {"Label", "Claim"}
    assert {t.when_unsatisfiable for t in terms} == {"DoNotSchedule", "ScheduleAnyway"}
    assert any(
        s.spread_policy and len(s.spread_policy.spread_constraints or []) >= 2 for s in specs
    )


def test_list_documents_are_expanded(tmp_path: Path) -> None:
    items = [
        {
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {"name": f"c{i}"},
        }
        for i in range(3)
    ]
    (tmp_path / "list.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    )
    result = load_paths([tmp_path])
    assert result.ok
    assert [o.obj.name for o in result.objects] == ["c0", "c1", "c2"]


@pytest.mark.parametrize(
    ("items", "got"), [({"a": {"kind": "Pod"}}, "a mapping"), (5, "a scalar"), ("x", "a string")]
)
def test_a_list_whose_items_is_no_list_is_an_error(tmp_path: Path, items: object, got: str) -> None:
    """kubectl cannot decode it (`cannot unmarshal object into ... decodeList.items`): an error
    naming the file and document, not a List skipped as a kind without a model."""
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    result = load_paths([path])
    assert not result.ok
    assert [str(e) for e in result.errors] == [
        f"{path}: document 1: List: items must be a list of objects, not {got}"
    ]
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: List\nitems:\n")
    assert load_paths([empty]).ok  # null items: an empty list, as kubectl reads it


def test_concatenated_json_documents_are_numbered(tmp_path: Path) -> None:
    good = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "c1"},
    }
    bad = {**good, "metadata": {"name": "c2"}, "spec": {"hubAcceptsClient": "yes"}}
    path = tmp_path / "two.json"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad))
    result = load_paths([path])
    assert [o.obj.name for o in result.objects] == ["c1"]
    assert [str(e) for e in result.errors] == [
        f"{path}: document 2: ManagedCluster c2: spec.hubAcceptsClient: "
        "must be a boolean (got 'yes')"
    ]


def test_missing_path_and_empty_documents(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("---\n---\n# nothing\n")
    result = load_paths([tmp_path, tmp_path / "nope.yaml"])
    assert result.objects == []
    assert [str(e) for e in result.errors] == [
        f"{tmp_path / 'nope.yaml'}: no such file or directory"
    ]


def test_folders_are_read_recursively_in_name_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a/z.yml", "a/readme.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(
            f"apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\n"
            f"metadata: {{name: {Path(name).stem}}}\n"
        )
    assert [o.obj.name for o in load_paths([tmp_path]).objects] == ["z", "b"]


def test_yaml_times_stay_strings_as_in_kubernetes() -> None:
    docs = list(read_documents("t: 2026-11-01T00:00:00Z\n", "x.yaml"))
    assert docs == [(1, {"t": "2026-11-01T00:00:00Z"})]


def test_dump_yaml_writes_no_anchors() -> None:
    shared = {"a": 1}
    text = dump_yaml([{"x": shared, "y": shared}])
    assert "&" not in text and "*" not in text
    assert yaml.safe_load(text) == {"x": {"a": 1}, "y": {"a": 1}}


TYPO_CLUSTER = (
    "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\n"
    "metadata: {name: c1, lables: {env: prod}}\nspec: {hubAcceptsClient: true}\n"
)


@pytest.mark.parametrize(
    ("validation", "errors", "warnings", "objects"),
    [
        pytest.param("strict", 1, 0, 0, id="strict"),
        pytest.param("warn", 0, 1, 1, id="warn"),
        pytest.param("ignore", 0, 0, 1, id="ignore"),
    ],
)
def test_unknown_fields_are_errors_warnings_or_nothing(
    tmp_path: Path, validation: Validation, errors: int, warnings: int, objects: int
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(TYPO_CLUSTER)
    result = load_paths([path], validation)
    line = (
        f"{path}: document 1: ManagedCluster c1: "
        'metadata.lables: unknown field, did you mean "labels"?'
    )
    assert [str(e) for e in result.errors] == [line] * errors
    assert [str(w) for w in result.warnings] == [line] * warnings
    assert len(result.objects) == objects
    if objects:
        # The object keeps the unknown field, as one read from a server would.
        assert result.objects[0].obj.to_wire()["metadata"]["lables"] == {"env": "prod"}


def test_unknown_fields_come_before_the_problems_they_cause(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "apiVersion: cluster.open-cluster-management.io/v1beta2\n"
        "kind: ManagedClusterSetBinding\nmetadata: {name: prod, namespace: ns1}\n"
        "spec: {clusterset: prod}\n"
    )
    [error] = load_paths([path]).errors
    prefix = f"{path}: document 1: ManagedClusterSetBinding ns1/prod: "
    assert error.lines() == [
        prefix + 'spec.clusterset: unknown field, did you mean "clusterSet"?',
        prefix + "spec.clusterSet: is required",
    ]
