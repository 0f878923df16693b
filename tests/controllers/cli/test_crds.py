"""The CRDs in config/crds agree with the models: same fields, required fields, enums, ranges,
patterns, lengths and defaults. The CRDs are generated from the models' JSON schema; this test
walks the models' Python type annotations instead, so a generator bug cannot hide itself."""

from __future__ import annotations

import types
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import pytest
import yaml
from pydantic import BaseModel, WithJsonSchema
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from apis.meta import IntRange, KubeObject
from apis.placements import IntOrString
from apis.quantity import QUANTITY_PATTERN, Quantity
from apis.registry import CUSTOM_KINDS
from controllers.cli.crds import CRD_DIR, build_crd, crd_file_name, main

CONSTRAINT_KEYS = (
    "enum",
    "minimum",
    "maximum",
    "maxLength",
    "minLength",
    "maxItems",
    "maxProperties",
    "pattern",
    "default",
)


def load_crd(cls: type[KubeObject]) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CRD_DIR / crd_file_name(cls)).read_text())
    return data


def unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """Strip Optional and Annotated; return the bare type and the metadata found on the way."""
    metadata: list[Any] = []
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *extra = get_args(annotation)
            metadata.extend(extra)
        elif origin in (Union, types.UnionType):
            options = [a for a in get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return annotation, metadata  # IntOrString: int | str
            annotation = options[0]
        else:
            return annotation, metadata


def expected_constraints(
    annotation: Any, metadata: list[Any], field: FieldInfo | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    metadata = [
        m for item in metadata for m in (item.metadata if isinstance(item, FieldInfo) else [item])
    ]
    if get_origin(annotation) is Literal:
        out["enum"] = list(get_args(annotation))
    if annotation is Quantity:
        out["pattern"] = QUANTITY_PATTERN
    for item in metadata:
        if isinstance(item, IntRange):
            if item.lo is not None:
                out["minimum"] = item.lo
            if item.hi is not None:
                out["maximum"] = item.hi
        elif isinstance(item, IntOrString):
            out["pattern"] = item.pattern
        elif isinstance(item, annotated_types.MaxLen):
            kinds = {list: "maxItems", dict: "maxProperties"}
            out[kinds.get(get_origin(annotation), "maxLength")] = item.max_length
        elif isinstance(item, annotated_types.MinLen):
            out["minLength"] = item.min_length
        elif getattr(item, "pattern", None):
            out["pattern"] = item.pattern
        elif isinstance(item, WithJsonSchema) and "maxLength" in (item.json_schema or {}):
            out["maxLength"] = (item.json_schema or {})["maxLength"]  # BoundedQuantityField
    if field is not None and field.default not in (PydanticUndefined, None):
        out["default"] = field.default
    return out


def check_type(
    annotation: Any,
    metadata: list[Any],
    node: dict[str, Any],
    path: str,
    field: FieldInfo | None = None,
) -> None:
    bare, more = unwrap(annotation)
    metadata = [*metadata, *more]
    if field is not None:
        metadata.extend(field.metadata)
    got = {k: node[k] for k in CONSTRAINT_KEYS if k in node}
    assert got == expected_constraints(bare, metadata, field), path
    origin = get_origin(bare)
    if any(isinstance(m, IntOrString) for m in metadata) or bare is Quantity:
        assert node.get("x-kubernetes-int-or-string") is True, path
    elif isinstance(bare, type) and issubclass(bare, BaseModel):
        check_model(bare, node, path)
    elif origin is list:
        assert node["type"] == "array", path
        (item,) = get_args(bare)
        check_type(item, [], node["items"], f"{path}[]")
    elif origin is dict:
        assert node["type"] == "object", path
        _, value = get_args(bare)
        if value is Any:
            assert node.get("x-kubernetes-preserve-unknown-fields") is True, path
        else:
            check_type(value, [], node["additionalProperties"], f"{path}{{}}")
    elif origin is Literal or bare is str:
        assert node["type"] == "string", path
    elif bare is datetime:
        assert (node["type"], node["format"]) == ("string", "date-time"), path
    elif bare is bool:
        assert node["type"] == "boolean", path
    elif bare is int:
        assert node["type"] == "integer", path
    else:
        pytest.fail(f"{path}: no rule for {bare!r}")


def check_model(model: type[BaseModel], node: dict[str, Any], path: str) -> None:
    assert node["type"] == "object", path
    fields = {
        (info.alias or name): info
        for name, info in model.model_fields.items()
        if not (issubclass(model, KubeObject) and name in ("api_version", "kind", "metadata"))
    }
    props = {
        k: v
        for k, v in node["properties"].items()
        if not (issubclass(model, KubeObject) and k in ("apiVersion", "kind", "metadata"))
    }
    assert set(props) == set(fields), path
    required = {alias for alias, info in fields.items() if info.is_required()}
    assert set(node.get("required", [])) == required, path
    for alias, info in fields.items():
        check_type(info.annotation, [], props[alias], f"{path}.{alias}", info)


@pytest.mark.parametrize("cls", CUSTOM_KINDS, ids=[c.KIND for c in CUSTOM_KINDS])
def test_crd_schema_agrees_with_model(cls: type[KubeObject]) -> None:
    crd = load_crd(cls)
    (version,) = crd["spec"]["versions"]
    check_model(cls, version["schema"]["openAPIV3Schema"], cls.KIND)


@pytest.mark.parametrize("cls", CUSTOM_KINDS, ids=[c.KIND for c in CUSTOM_KINDS])
def test_crd_names_scope_and_subresources_match_model(cls: type[KubeObject]) -> None:
    crd = load_crd(cls)
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{cls.PLURAL}.{cls.GROUP}"
    assert spec["group"] == cls.GROUP
    assert spec["names"]["kind"] == cls.KIND
    assert spec["names"]["plural"] == cls.PLURAL
    assert spec["scope"] == ("Namespaced" if cls.NAMESPACED else "Cluster")
    (version,) = spec["versions"]
    assert version["name"] == cls.VERSION
    assert ("status" in version.get("subresources", {})) == cls.HAS_STATUS
    assert version.get("additionalPrinterColumns"), "kubectl get should show something useful"


def test_committed_crds_are_what_the_generator_writes() -> None:
    assert main(["--check"]) == 0


def test_check_mode_reports_a_stale_crd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 0
    assert main(["--check", str(tmp_path)]) == 0
    placement_crd = tmp_path / "cluster.open-cluster-management.io_placements.yaml"
    placement_crd.write_text(placement_crd.read_text().replace("maximum: 10", "maximum: 11"))
    assert main(["--check", str(tmp_path)]) == 1
    assert "placements.yaml: out of date" in capsys.readouterr().err


def test_walker_notices_a_wrong_range() -> None:
    from apis.placements import Placement

    crd = build_crd(Placement)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    weight = schema["properties"]["spec"]["properties"]["prioritizerPolicy"]["properties"][
        "configurations"
    ]["items"]["properties"]["weight"]
    weight["maximum"] = 11
    with pytest.raises(AssertionError):
        check_model(Placement, schema, "Placement")


def test_every_schema_node_is_structural() -> None:
    def walk(node: dict[str, Any], path: str) -> None:
        assert "$ref" not in node and "title" not in node, path
        if node.get("x-kubernetes-int-or-string"):
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            return
        assert "type" in node, path
        for name, sub in node.get("properties", {}).items():
            walk(sub, f"{path}.{name}")
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{path}{{}}")

    for cls in CUSTOM_KINDS:
        walk(load_crd(cls)["spec"]["versions"][0]["schema"]["openAPIV3Schema"], cls.KIND)


def _fields(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    """(path, schema) of every field below `node`, through arrays and maps."""
    found = []
    for name, sub in (node.get("properties") or {}).items():
        found.append((f"{path}.{name}", sub))
        found += _fields(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            found += _fields(node[key], f"{path}[]")
    return found


@pytest.mark.parametrize("cls", CUSTOM_KINDS, ids=lambda c: c.KIND)
def test_every_field_of_every_crd_has_a_description_for_kubectl_explain(
    cls: type[KubeObject],
) -> None:
    schema = build_crd(cls)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    fields = _fields(schema, cls.KIND)
    assert len(fields) >= 8
    # metadata: kube-apiserver refuses a CRD that gives it more than its type, and serves
    # ObjectMeta's own schema and descriptions for it
    missing = [path for path, sub in fields if not sub.get("description")]
    assert missing == [f"{cls.KIND}.metadata"]


def test_no_crd_gives_metadata_more_than_its_type() -> None:
    # kube-apiserver: "must not specify anything other than name and generateName, but
    # metadata is implicitly specified"
    for cls in CUSTOM_KINDS:
        schema = load_crd(cls)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert schema["properties"]["metadata"] == {"type": "object"}, cls.KIND
