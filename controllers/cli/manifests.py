"""Reading objects from files: multi-document YAML and JSON, files and folders, `v1 List`s.

Every problem (a missing file, broken YAML, an unknown kind, a field breaking a rule, a field
the kind does not know, a missing name) becomes a `LoadError` naming the file, the 1-based
document index and, when known, the object and field; nothing raises past `load_paths`, so one
bad document never hides the others.

Unknown fields are errors by default, as `kubectl apply --validate=strict` makes them: a typo
such as `spec.numberOfCluster` would otherwise be dropped silently and the placement select
every cluster. `validation="warn"` reports them as warnings, `"ignore"` not at all.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from apis.conversion import convert_placement
from apis.crdvalidation import crd_problems, merge_problems
from apis.errors import FieldProblem, ModelError, ObjectValidationError, UnknownKindError
from apis.kubevalidation import kube_problems
from apis.meta import KubeObject
from apis.registry import KINDS, describe, parse_object, unknown_fields
from controllers.cli.strictness import VALIDATIONS, Validation
from controllers.kube.yamlfiles import MAX_ALIAS_NODES, MAX_DEPTH, Refused, decode_documents
from plugins import default_registry

__all__ = [
    "MANIFEST_SUFFIXES",
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "VALIDATIONS",
    "LoadError",
    "LoadResult",
    "LoadedObject",
    "Validation",
    "dump_yaml",
    "load_paths",
    "read_documents",
]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# libyaml's emitter when PyYAML was built with it.
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass(frozen=True)
class LoadedObject:
    """An object read from `source`, document `index` (1-based)."""

    source: str
    index: int
    obj: KubeObject


@dataclass(frozen=True)
class LoadError:
    """A document that could not be read; `message` may span several lines (one per field)."""

    source: str
    index: int | None
    message: str
    unknown_kind: bool = False
    api_kind: tuple[str, str] | None = None  # of an unknown kind: its (apiVersion, kind)

    def lines(self) -> list[str]:
        where = self.source if self.index is None else f"{self.source}: document {self.index}"
        return [f"{where}: {line}" for line in self.message.splitlines() or [""]]

    def __str__(self) -> str:
        return "\n".join(self.lines())


@dataclass
class LoadResult:
    """The objects read, the errors met and the warnings (unknown fields under
    `validation="warn"`), each in file and document order."""

    objects: list[LoadedObject] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)
    warnings: list[LoadError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _files(path: Path) -> Iterator[Path]:
    if path.is_dir():
        yield from sorted(
            p for p in path.rglob("*") if p.is_file() and p.name.endswith(MANIFEST_SUFFIXES)
        )
    else:
        yield path


def read_documents(text: str, source: str) -> Iterator[tuple[int, Any] | LoadError]:
    """Decode every document of `text`: (index, data) pairs, or a LoadError where decoding stops
    (the guards of `controllers.kube.yamlfiles`, shared by every file we read)."""
    for item in decode_documents(text, source.endswith(".json")):
        yield LoadError(source, item.index, item.message) if isinstance(item, Refused) else item


def _expand(data: Any) -> list[Any]:
    # kubectl's `v1 List` (and `<Kind>List`) wrap objects in `items`.
    if (
        isinstance(data, dict)
        and isinstance(data.get("kind"), str)
        and data["kind"].endswith("List")
        and "items" in data
        and isinstance(data["items"], list | None)
    ):
        return list(data["items"] or [])  # `items:` with nothing after it: an empty list
    return [data]


def _list_problem(data: Any) -> str | None:
    """Why a `v1 List` (or `<Kind>List`) cannot be read: its `items` is not a list (kubectl:
    `cannot unmarshal object into Go struct field decodeList.items`)."""
    if not (isinstance(data, dict) and str(data.get("kind", "")).endswith("List")):
        return None
    items = data.get("items")
    if items is None or isinstance(items, list):
        return None
    got = {dict: "a mapping", str: "a string", type(None): "null"}.get(type(items), "a scalar")
    return f"{data['kind']}: items must be a list of objects, not {got}"


STDIN = "-"
"""The path that reads the manifests from standard input (`kubectl kustomize DIR | placement
validate -f -`), as kubectl's `-f -`."""


def load_paths(paths: Iterable[str | Path], validation: Validation = "strict") -> LoadResult:
    """Read every manifest under `paths` (files, or folders searched recursively, `-` for
    standard input, read once); unknown fields are errors, warnings or nothing as `validation`
    says."""
    result = LoadResult()
    stdin_read = False
    for raw in paths:
        if str(raw) == STDIN:
            if not stdin_read:
                stdin_read = True
                _load_text(sys.stdin.read(), "STDIN", result, validation)
            continue
        path = Path(raw)
        if not path.exists():
            result.errors.append(LoadError(str(path), None, "no such file or directory"))
            continue
        for file in _files(path):
            _load_file(file, result, validation)
    _note_duplicates(result)
    return result


def _note_duplicates(result: LoadResult) -> None:
    """A warning for each object defined again: the last definition is the one used."""
    seen: dict[tuple[str, str, str], LoadedObject] = {}
    for item in result.objects:
        key = (item.obj.KIND, item.obj.metadata.namespace or "", item.obj.metadata.name or "")
        first = seen.setdefault(key, item)
        if first is not item and key[2]:
            where = f"{first.source}: document {first.index}"
            name = f"{key[1]}/{key[2]}" if key[1] else key[2]
            message = f"{key[0]} {name} is also defined at {where}; this later one is used"
            result.warnings.append(LoadError(item.source, item.index, message))


KUSTOMIZE_HINT = "kubectl kustomize DIR | placement validate -f -"


def _is_kustomization(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("kind") == "Kustomization"
        and str(doc.get("apiVersion", "")).startswith("kustomize.config.k8s.io/")
    )


@functools.cache
def _builtin_prioritizers() -> tuple[str, ...]:
    """The built-in prioritizer names (v1alpha1 conversion spells them as the scheduler does)."""
    return tuple(default_registry().prioritizers)


def _kube_problems(doc: Any) -> list[FieldProblem]:
    """kube-apiserver's validation, with the CEL device selectors of the DRA kinds compiled
    (the CEL engine loads only for those)."""
    problems = kube_problems(doc)
    if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith("resource.k8s.io/"):
        from placement.cel import selector_problems

        problems = [*problems, *(p for p in selector_problems(doc) if p not in problems)]
    return problems


def _missing_name(doc: Any) -> list[FieldProblem]:
    # The API server's rule for a create; objects read back from it always have a name.
    meta = doc.get("metadata", {}) if isinstance(doc, dict) else None
    if not isinstance(meta, dict) or meta.get("name") or meta.get("generateName"):
        return []  # not a mapping: validation says so
    return [FieldProblem("metadata.name", "Required value: name or generateName is required")]


def _other_versions(api_version: Any, kind: Any) -> str:
    """`; did you mean apiVersion 'v1'?` when `kind` is known under other apiVersions (all of
    them), else ''."""
    versions = [f"'{v}'" for v in sorted(v for v, k in KINDS if k == kind and v != api_version)]
    if not versions:
        return ""
    listed = " or ".join([", ".join(versions[:-1]), versions[-1]] if versions[1:] else versions)
    return f"; did you mean apiVersion {listed}?"


def _load_document(
    source: str, index: int, doc: Any, validation: Validation, result: LoadResult
) -> None:
    obj: KubeObject | None = None
    doc, notice = convert_placement(doc, _builtin_prioritizers())
    if notice is not None:
        result.warnings.append(LoadError(source, index, notice))
    # kube-apiserver's CRD validation (PodGroup, ElasticQuota) words a problem as kube does;
    # the model's problems about the same fields are then left out.
    crd = crd_problems(doc)
    try:
        obj = parse_object(doc)
    except UnknownKindError as exc:
        message = str(exc) + _other_versions(exc.api_version, exc.kind)
        if _is_kustomization(doc):
            message += f"; a kustomization is built, not applied: {KUSTOMIZE_HINT}"
        api_kind = (str(exc.api_version), str(exc.kind))
        result.errors.append(LoadError(source, index, message, True, api_kind))
        return
    except ObjectValidationError as exc:
        object_id = exc.object_id
        # kube's words first (CRD schema, kube-apiserver's validation), then the model's
        # about the other fields
        kube = merge_problems(crd, _kube_problems(doc))
        problems = [*merge_problems(kube, exc.problems), *_missing_name(doc)]
    except ModelError as exc:
        result.errors.append(LoadError(source, index, str(exc)))
        return
    else:
        object_id = describe(doc, obj.KIND, obj.NAMESPACED)
        problems = [*crd, *_missing_name(doc), *_kube_problems(doc)]
    unknown = [u.problem() for u in unknown_fields(doc)] if validation != "ignore" else []
    if validation == "strict":
        # First: an unknown field is often the cause of the other problems (a misspelt key
        # leaves a required one missing).
        problems = [*unknown, *problems]
    elif unknown:
        warning = ObjectValidationError(object_id, unknown)
        result.warnings.append(LoadError(source, index, str(warning)))
    if problems:
        error = ObjectValidationError(object_id, problems)
        result.errors.append(LoadError(source, index, str(error)))
    elif obj is not None:
        result.objects.append(LoadedObject(source, index, obj))


def _load_file(file: Path, result: LoadResult, validation: Validation) -> None:
    source = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        result.errors.append(LoadError(source, None, f"cannot read: {exc}"))
        return
    _load_text(text, source, result, validation)


def _load_text(text: str, source: str, result: LoadResult, validation: Validation) -> None:
    for item in read_documents(text, source):
        if isinstance(item, LoadError):
            result.errors.append(item)
            continue
        index, data = item
        if data is None:
            continue  # an empty document, e.g. after a trailing `---`
        problem = _list_problem(data)
        if problem:
            result.errors.append(LoadError(source, index, problem))
            continue
        for doc in _expand(data):
            _load_document(source, index, doc, validation, result)


class _PlainDumper(_SafeDumper):  # type: ignore[valid-type,misc]
    """Safe YAML output without anchors and aliases, which Kubernetes tools do not expect."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(docs: Iterable[Any]) -> str:
    """Multi-document YAML, keys in the order given (as kubectl prints)."""
    return yaml.dump_all(list(docs), Dumper=_PlainDumper, sort_keys=False, width=100)
