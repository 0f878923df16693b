"""What of `managedCluster` an expression reads, when it reads only labels by literal keys,
the name and the claims list: then its verdict on a cluster depends on those values alone, and
clusters sharing them share the verdict (`placement.cel.groups` runs the interpreter once per
distinct set of values, on a document holding just them, instead of once per cluster on its
whole object).

Found token by token: every occurrence of the identifier `managedCluster` must be the start
of `managedCluster.metadata.name`, of `managedCluster.status.clusterClaims` (the whole list, as
written: whatever follows reads nothing but it) or of `managedCluster.metadata.labels` followed
by `["K"]` or `.K` (a field, not a method call), or be the right operand of `"K" in`, or of
`managedCluster.metadata.annotations` followed by `["K"]` or `.K`: one annotation, and whether
there are any, or of `managedCluster.scores("N")`: the items of the cluster's
AddOnPlacementScore N (or that it has none). Anything else (the whole labels or annotations map,
an optional selection, another field, `scores` of a computed name, the variable alone or
shadowed by a comprehension's) and the expressions are not grouped.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.cel.claim_reads import ClaimNames, claim_names
from placement.cel.source import Token, string_value, tokenize

__all__ = ["LabelReads", "label_reads"]

_VARIABLE = "managedCluster"
_BEFORE_MEMBERSHIP = frozenset({"", "(", "[", ",", "&&", "||", "?", ":"})
_AFTER_MEMBERSHIP = frozenset({"", ")", "]", ",", "&&", "||", "?", ":", "==", "!="})
"""Tokens around `"K" in managedCluster.metadata.labels` that bind looser than `in` (or as
loosely, to the left), so that neither operand is part of a larger one."""
_NAME = "\0name"
"""What `_read` gives for `metadata.name` (compared by identity: no key is this object)."""
_CLAIMS = "\0claims"
_ANNOTATIONS = "\0annotations"
"""What `_read` gives for `status.clusterClaims` (compared by identity too)."""
_SCORES = "\0scores"
"""With the score's name, what `_read` gives for `scores("N")`."""


@dataclass(frozen=True)
class LabelReads:
    """The label keys the expressions read, whether they read the name, and the claims:
    `claim_names` when only the claims of some names matter (`placement.cel.claim_reads`),
    None for the whole list."""

    keys: frozenset[str]
    name: bool
    claims: bool = False
    claim_names: ClaimNames | None = None
    annotations: frozenset[str] = frozenset()
    """The annotation keys read (by literal key, with `.`, `.?`, `[...]` or `[?...]`)."""
    scores: frozenset[str] = frozenset()
    """The AddOnPlacementScores read (`scores("N")`, N a literal)."""
    score_items: tuple[tuple[str, ClaimNames], ...] = ()
    """For a score of `scores` whose every use tests its items' names first (the shapes of
    `placement.cel.claim_reads`), the item names that matter; the others' items all do."""


def label_reads(expressions: tuple[str, ...]) -> LabelReads | None:
    """What the expressions read, None when it is more than label values and the name."""
    keys: set[str] = set()
    annotations: set[str] = set()
    scores: set[str] = set()
    name = claims = False
    parsed: list[list[Token]] = []
    uses: list[list[int]] = []
    score_uses: dict[str, list[list[int]]] = {}
    for source in expressions:
        tokens = [t for t in tokenize(source) if t.kind != "space"]
        if any(t.kind == "other" for t in tokens):
            return None
        parsed.append(tokens)
        uses.append([])
        for listed in score_uses.values():
            listed.append([])
        for at, token in enumerate(tokens):
            if token.kind != "ident" or token.text != _VARIABLE:
                continue
            read = _read(tokens, at)
            if read is None:
                return None
            if read is _NAME:
                name = True
            elif read is _CLAIMS:
                claims = True
                uses[-1].append(at)
            elif isinstance(read, tuple) and read[0] is _SCORES:
                scores.add(read[1])
                listed = score_uses.setdefault(read[1], [[] for _ in parsed])
                listed[-1].append(at)
            elif isinstance(read, tuple):
                annotations.add(read[1])
            else:
                keys.add(read)
    names = claim_names(parsed, uses) if claims else None
    items = []
    for score in sorted(score_uses):
        found = claim_names(parsed, score_uses[score], length=6)
        if found is not None:
            items.append((score, found))
    return LabelReads(
        frozenset(keys),
        name,
        claims,
        names,
        frozenset(annotations),
        frozenset(scores),
        tuple(items),
    )


def _text(tokens: list[Token], at: int) -> str:
    return tokens[at].text if 0 <= at < len(tokens) else ""


def _annotation_key(tokens: list[Token], after: int) -> str | None:
    """The key of `["K"]` or `.K` at `after` (past `annotations`): what depends only on that
    annotation and on whether the cluster has annotations at all. (The optional forms would
    too, but stay with the interpreter, as for labels.)"""
    bracket = _text(tokens, after)
    if bracket == "[" and _text(tokens, after + 2) == "]":
        literal = tokens[after + 1]
        return string_value(literal.text) if literal.kind == "string" else None
    if bracket == "." and after + 1 < len(tokens) and tokens[after + 1].kind == "ident":
        return tokens[after + 1].text if _text(tokens, after + 2) != "(" else None
    return None


def _read(tokens: list[Token], at: int) -> str | tuple[str, str] | None:
    """The label key read by the variable at `at` (`_NAME` for the name, `_CLAIMS` for the
    claims, (`_ANNOTATIONS`, key) for an annotation, (`_SCORES`, name) for a score), None if
    something else."""
    if _text(tokens, at - 1) in (".", ".?"):
        return None  # a field of something else called managedCluster, or a qualified name
    path = [_text(tokens, at + i) for i in range(1, 5)]
    if path[:3] == [".", "scores", "("] and _text(tokens, at + 5) == ")":
        score = tokens[at + 4]  # `scores("N")`: what the cluster's score N holds
        named = string_value(score.text) if score.kind == "string" else None
        return None if named is None else (_SCORES, named)
    if path == [".", "status", ".", "clusterClaims"] and tokens[at + 4].kind == "ident":
        return _CLAIMS if _text(tokens, at + 5) not in ("(", ".?", "[?") else None
    if path[:3] != [".", "metadata", "."]:
        return None
    if path[3] == "name" and tokens[at + 4].kind == "ident":
        return _NAME if _text(tokens, at + 5) not in ("(", ".?", "[?") else None
    if path[3] == "annotations":
        key = _annotation_key(tokens, at + 5)
        return None if key is None else (_ANNOTATIONS, key)
    if path[3] != "labels":
        return None
    after = at + 5
    if _text(tokens, after) == "[" and _text(tokens, after + 2) == "]":
        literal = tokens[after + 1] if after + 1 < len(tokens) else None
        return string_value(literal.text) if literal and literal.kind == "string" else None
    if (
        at >= 2
        and tokens[at - 1].kind == "ident"
        and tokens[at - 1].text == "in"
        and tokens[at - 2].kind == "string"
        and _text(tokens, at - 3) in _BEFORE_MEMBERSHIP
        and _text(tokens, after) in _AFTER_MEMBERSHIP
    ):
        # `"K" in managedCluster.metadata.labels`, both operands whole: whether K is there
        return string_value(tokens[at - 2].text)
    if _text(tokens, after) == "." and after + 1 < len(tokens):
        field = tokens[after + 1]
        if field.kind == "ident" and _text(tokens, after + 2) != "(":
            return field.text
    return None
