"""Reading YAML and JSON files with the same guards for every file we read (manifests,
`--config` files, kubeconfigs): a document nesting deeper than MAX_DEPTH, an alias bomb, an
alias of a node containing itself or an integer of more digits than Python converts is refused
with one line saying so, before anything recurses over it (PyYAML's composer and every walk
over a decoded document recurse: a deep document was a RecursionError traceback, or SIGSEGV in
libyaml).

`decode_documents` reads the documents of a text one by one (the manifest reader,
`controllers.cli.manifests`, words its refusals with the file and the document);
`read_single_document` (`decode_single_document` for a text) reads a file that holds one
document (a configuration file, a
kubeconfig) and raises `YamlFileError` with one line naming the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "KubeYamlLoader",
    "Refused",
    "YamlFileError",
    "decode_documents",
    "decode_single_document",
    "read_single_document",
]

# How deep a document may nest. The deepest path of any kind read here is about a dozen levels;
# the API server's JSON decoder stops at 10,000, but the walks over a document here recurse
# (Python's limit is 1,000 frames, and libyaml's composer has no check at all: 100,000 levels
# of `[` end in SIGSEGV), so the bound is much lower and checked before anything recurses.
MAX_DEPTH = 100
# How many nodes aliases may add to a document beyond its own: the expanded size of an alias is
# that of its anchor's node, so ten aliases of ten aliases ... of a list is a billion nodes to
# every walk ("billion laughs"). A document may always add as many nodes as it has (or 10,000).
MAX_ALIAS_NODES = 10_000

# libyaml's parser when PyYAML was built with it: reading a 10,000-cluster file takes ~3 s
# instead of ~24 s.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class KubeYamlLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """Safe YAML without timestamp resolution: Kubernetes keeps times as strings."""


KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class Refused:
    """Document `index` (1-based) could not be read, and why (one line)."""

    index: int
    message: str


class YamlFileError(ValueError):
    """A file that cannot be read as one document: one line naming the file."""


def read_single_document(path: Path, *, json_text: bool | None = None) -> Any:
    """The one document of the file at `path` (None when empty), read with the guards of
    `decode_documents` (JSON when the name ends in `.json`, unless `json_text` says).
    YamlFileError: `<path>: <problem>` in one line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise YamlFileError(f"{path}: cannot read: {' '.join(reason.split())}") from None
    as_json = path.name.endswith(".json") if json_text is None else json_text
    try:
        return decode_single_document(text, as_json)
    except YamlFileError as exc:
        raise YamlFileError(f"{path}: {exc}") from None


def decode_single_document(text: str, json_text: bool = False) -> Any:
    """The one document of `text` (None when empty) with the guards of `decode_documents`;
    YamlFileError saying why not, in one line."""
    found: list[Any] = []
    for item in decode_documents(text, json_text):
        if isinstance(item, Refused):
            raise YamlFileError(item.message)
        if item[0] > 1:
            raise YamlFileError("holds more than one document (one is expected)")
        found.append(item[1])
    return found[0] if found else None


def decode_documents(text: str, json_text: bool = False) -> Iterator[tuple[int, Any] | Refused]:
    """Decode every document of `text` (YAML, or JSON when `json_text`): (index, data) pairs,
    or a Refused where decoding stops."""
    if json_text:
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
                yield Refused(index, f"invalid JSON: {exc}")
                return
            except RecursionError:
                yield Refused(index, _too_deep())
                return
            except ValueError as exc:  # an integer of more digits than Python converts
                yield Refused(index, f"invalid JSON: {_digits_problem(exc)}")
                return
            if _depth_exceeds(data, MAX_DEPTH):
                yield Refused(index, _too_deep())
                return
            yield index, data
    hostile = _hostile_yaml(text)
    index = 0
    loader = KubeYamlLoader(text)
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
        yield Refused(index + 1, f"invalid YAML: {_yaml_problem(exc)}")
        return
    except ValueError as exc:  # an integer of more digits than Python converts
        yield Refused(index + 1, f"invalid YAML: {_digits_problem(exc)}")
        return
    finally:
        loader.dispose()
    if hostile is not None:
        yield Refused(hostile[0], hostile[1])


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
        for event in yaml.parse(text, Loader=KubeYamlLoader):
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
