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
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from apis.conversion import convert_placement
from apis.crdvalidation import crd_problems, merge_problems
from apis.errors import FieldProblem, ModelError, ObjectValidationError, UnknownKindError
from apis.kubevalidation import kube_problems
from apis.meta import KubeObject
from apis.registry import describe, parse_object, unknown_fields
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

# How deep a document may nest. The deepest path of any kind read here is about a dozen levels;
# the API server's JSON decoder stops at 10,000, but the walks over a document here recurse
# (Python's limit is 1,000 frames, and libyaml's composer has no check at all: 100,000 levels
# of `[` end in SIGSEGV), so the bound is much lower and checked before anything recurses.
MAX_DEPTH = 100
# How many nodes aliases may add to a document beyond its own: the expanded size of an alias is
# that of its anchor's node, so ten aliases of ten aliases ... of a list is a billion nodes to
# every walk ("billion laughs"). A document may always add as many nodes as it has (or 10,000).
MAX_ALIAS_NODES = 10_000

# kubectl's `--validate` levels: what an unknown field is (error, warning, nothing).
Validation = Literal["strict", "warn", "ignore"]
VALIDATIONS: tuple[Validation, ...] = get_args(Validation)


# libyaml's parser and emitter when PyYAML was built with them: reading a 10,000-cluster file
# takes ~3 s instead of ~24 s.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _KubeYamlLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """Safe YAML without timestamp resolution: Kubernetes keeps times as strings."""


_KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


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
    """Decode every document of `text`: (index, data) pairs, or a LoadError where decoding stops."""
    if source.endswith(".json"):
        decoder = json.JSONDecoder()
        pos, index = 0, 0
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                return
            index += 1
            try:
                data, pos = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as exc:
                yield LoadError(source, index, f"invalid JSON: {exc}")
                return
            except RecursionError:
                yield LoadError(source, index, _too_deep())
                return
            except ValueError as exc:  # an integer of more digits than Python converts
                yield LoadError(source, index, f"invalid JSON: {_digits_problem(exc)}")
                return
            if _depth_exceeds(data, MAX_DEPTH):
                yield LoadError(source, index, _too_deep())
                return
            yield index, data
    hostile = _hostile_yaml(text)
    index = 0
    loader = _KubeYamlLoader(text)
    try:
        # Document by document, so that a hostile one is never composed (libyaml's composer
        # recurses without a check) and the ones before it are read.
        while loader.check_data():
            if hostile is not None and index + 1 == hostile[0]:
                break
            data = loader.get_data()
            index += 1
            yield index, data
    except yaml.YAMLError as exc:
        yield LoadError(source, index + 1, f"invalid YAML: {_yaml_problem(exc)}")
        return
    except ValueError as exc:  # an integer of more digits than Python converts
        yield LoadError(source, index + 1, f"invalid YAML: {_digits_problem(exc)}")
        return
    finally:
        loader.dispose()
    if hostile is not None:
        yield LoadError(source, hostile[0], hostile[1])


def _digits_problem(exc: ValueError) -> str:
    """Python's refusal of an integer literal of more than 4,300 digits, in a line (no int64
    has more than 19, so the value would be refused anyway)."""
    return " ".join(str(exc).split(";")[0].split())


def _too_deep() -> str:
    return f"the document nests deeper than {MAX_DEPTH} levels"


def _depth_exceeds(data: Any, limit: int) -> bool:
    """Whether decoded `data` nests deeper than `limit` (without recursing)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _hostile_yaml(text: str) -> tuple[int, str] | None:
    """The first document (1-based) that nests deeper than MAX_DEPTH, whose aliases expand
    beyond MAX_ALIAS_NODES more nodes than it has, or that holds an alias of a node inside
    itself (a cycle every walk would follow forever), and why; None when none does. Read from
    the parser's events, which never recurse: a broken stream ends the check where it breaks,
    and loading reports it."""
    if "&" not in text and not _may_nest(text):
        return None  # no anchor, and no document long enough to nest that deep
    index = 0
    depth = 0
    nodes = 0  # nodes of the document as written
    added = 0  # nodes its aliases add
    sizes: dict[str, int] = {}  # anchor -> expanded size of its node
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, expanded size at its start)
    try:
        for event in yaml.parse(text, Loader=_KubeYamlLoader):
            if isinstance(event, yaml.DocumentStartEvent):
                index += 1
                depth = nodes = added = 0
                sizes.clear()
            elif isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                nodes += 1
                if depth > MAX_DEPTH:
                    return index, _too_deep()
                if event.anchor is not None:
                    sizes.pop(event.anchor, None)  # an alias inside refers to this node
                open_nodes.append((event.anchor, nodes + added))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                anchor, start = open_nodes.pop()
                if anchor is not None:
                    sizes[anchor] = nodes + added - start + 1
            elif isinstance(event, yaml.ScalarEvent):
                nodes += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                size = sizes.get(event.anchor or "")
                if size is None:
                    if any(anchor == event.anchor for anchor, _ in open_nodes):
                        return index, f"the alias *{event.anchor} refers to a node containing it"
                    continue  # an undefined alias: loading reports it
                added += size
                if added > max(MAX_ALIAS_NODES, nodes):
                    return index, (
                        f"aliases expand the document beyond {max(MAX_ALIAS_NODES, nodes)} "
                        "more nodes than it has (an alias bomb?)"
                    )
    except yaml.YAMLError as exc:
        if "exceeded maximum nesting depth" in str(exc):
            # PyYAML 6.0.4 and newer stop deep flow collections in the scanner, before any
            # CollectionStartEvent past our limit: the same refusal, in our words.
            return max(index, 1), _too_deep()
        return None
    return None


# A line that starts a document (`---`) or ends one (`...`): YAML forbids either at the start of
# a line inside any content, so splitting there gives each document's text exactly.
_DOCUMENT_MARKER = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.MULTILINE)


def _may_nest(text: str) -> bool:
    """Cheaply: whether a document of `text` could nest deeper than MAX_DEPTH. A collection
    starts at a flow bracket, after a `- ` or `? ` indicator, or at the first key of a line,
    so their count in a document bounds its depth; most documents are far too short to come
    near the bound, and only files with one that is not are scanned."""
    for part in _DOCUMENT_MARKER.split(text):
        bound = part.count("\n") + 1
        for opener in ("[", "{", "- ", "-\t", "? ", "?\t"):
            bound += part.count(opener)
        if bound > MAX_DEPTH:
            return True
    return False


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        context = f"{exc.context}, " if exc.context else ""
        return f"{context}{exc.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())


def _expand(data: Any) -> list[Any]:
    # kubectl's `v1 List` (and `<Kind>List`) wrap objects in `items`.
    if (
        isinstance(data, dict)
        and isinstance(data.get("kind"), str)
        and data["kind"].endswith("List")
        and isinstance(data.get("items"), list)
    ):
        return list(data["items"])
    return [data]


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


def _missing_name(doc: Any) -> list[FieldProblem]:
    # The API server's rule for a create; objects read back from it always have a name.
    meta = doc.get("metadata", {}) if isinstance(doc, dict) else None
    if not isinstance(meta, dict) or meta.get("name") or meta.get("generateName"):
        return []  # not a mapping: validation says so
    return [FieldProblem("metadata.name", "Required value: name or generateName is required")]


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
        message = str(exc)
        if _is_kustomization(doc):
            message += f"; a kustomization is built, not applied: {KUSTOMIZE_HINT}"
        api_kind = (str(exc.api_version), str(exc.kind))
        result.errors.append(LoadError(source, index, message, True, api_kind))
        return
    except ObjectValidationError as exc:
        object_id = exc.object_id
        problems = [*merge_problems(crd, exc.problems), *_missing_name(doc)]
    except ModelError as exc:
        result.errors.append(LoadError(source, index, str(exc)))
        return
    else:
        object_id = describe(doc, obj.KIND, obj.NAMESPACED)
        problems = [*crd, *_missing_name(doc), *kube_problems(doc)]
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
        for doc in _expand(data):
            _load_document(source, index, doc, validation, result)


class _PlainDumper(_SafeDumper):  # type: ignore[valid-type,misc]
    """Safe YAML output without anchors and aliases, which Kubernetes tools do not expect."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(docs: Iterable[Any]) -> str:
    """Multi-document YAML, keys in the order given (as kubectl prints)."""
    return yaml.dump_all(list(docs), Dumper=_PlainDumper, sort_keys=False, width=100)
