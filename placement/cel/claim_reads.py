"""Which claims a use of `managedCluster.status.clusterClaims` depends on: when every use is a
macro whose predicate first tests the claim's name against literals, the verdict depends only
on the claims of those names (and on those without a name, whose `c.name` is an error), in
their order, and on whether the list is there at all, not on the other claims.

The shapes recognised, with V the macro's variable and T `V.name == "X"` or `V.name in ["X",
...]` (string literals):

* `exists(V, T && ...)`, `exists_one(V, T && ...)`, `filter(V, T && ...)`, the predicate's
  `&&` at its top level (no `||` nor `?` there): a claim named otherwise is `false` without
  the rest being evaluated, and `false` changes neither an `exists` (an OR), nor the count of
  `exists_one`, nor which claims `filter` keeps;
* `all(V, V.name != "X" || ...)` (no `?` at the top level): a claim named otherwise is `true`,
  which changes no `all` (an AND);
* `has(managedCluster.status.clusterClaims)`: whether the list is there.

A claim named otherwise costs the macro's per-iteration charge (`node_count(body) + 1`, as
`instrument` meters it) and nothing else, since the name test comes first and `&&`/`||` stop
there; `per_claim` sums those charges, so that the grouping can tell whether the claims left
out could have spent the budget. A use inside another comprehension (which would repeat it)
and a name starting with `,` or `]` (see `placement.cel.document.project_claims`) are not
recognised; anything not recognised reads the whole list.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.cel.source import COMPREHENSIONS, Token, closing, node_count, string_value

__all__ = ["ClaimNames", "claim_names"]

_TESTS_AND = frozenset({"exists", "exists_one", "filter"})


@dataclass(frozen=True)
class ClaimNames:
    """The claim names the uses depend on, and the budget charge of each claim left out."""

    names: frozenset[str]
    per_claim: int


def claim_names(
    expressions: list[list[Token]], uses: list[list[int]], length: int = 5
) -> ClaimNames | None:
    """For the token lists of the expressions and, in each, the positions of the
    `managedCluster` tokens starting `managedCluster.status.clusterClaims`: the names, None if
    one use is not a recognised shape. `length`: the tokens of the list's expression (6 for
    the items of `managedCluster.scores("N")`, whose names the same shapes test)."""
    names: set[str] = set()
    per_claim = 0
    for tokens, positions in zip(expressions, uses, strict=True):
        if not positions:
            continue
        spans = _macro_spans(tokens)
        for at in positions:
            if any(open_at < at < close for open_at, close in spans):
                return None  # inside a comprehension: the use could run more than once
            found = _use(tokens, at, length)
            if found is None:
                return None
            names |= found[0]
            per_claim += found[1]
    if any(name[:1] in (",", "]") for name in names):
        return None
    return ClaimNames(frozenset(names), per_claim)


def _text(tokens: list[Token], at: int) -> str:
    return tokens[at].text if 0 <= at < len(tokens) else ""


def _macro_spans(tokens: list[Token]) -> list[tuple[int, int]]:
    """The (open, close) parentheses of every comprehension macro call."""
    spans = []
    for i in range(1, len(tokens) - 1):
        if (
            tokens[i].kind == "ident"
            and tokens[i].text in COMPREHENSIONS
            and _text(tokens, i - 1) == "."
            and _text(tokens, i + 1) == "("
        ):
            spans.append((i + 1, closing(tokens, i + 1)))
    return spans


def _use(tokens: list[Token], at: int, length: int) -> tuple[frozenset[str], int] | None:
    """The names and per-claim charge of the use starting at `at`, None if not a shape."""
    after = at + length  # past managedCluster . status . clusterClaims
    if (
        length == 5
        and _text(tokens, at - 1) == "("
        and _text(tokens, at - 2) == "has"
        and _text(tokens, after) == ")"
    ):
        return (frozenset(), 0) if _text(tokens, at - 3) != "." else None
    macro = _text(tokens, after + 1)
    if _text(tokens, after) != "." or macro not in _TESTS_AND | {"all"}:
        return None
    if _text(tokens, after + 2) != "(" or _text(tokens, after + 4) != ",":
        return None
    variable = tokens[after + 3] if after + 3 < len(tokens) else None
    if variable is None or variable.kind != "ident" or variable.text == "managedCluster":
        return None
    close = closing(tokens, after + 2)
    body = tokens[after + 5 : close]
    parts = _top_level_split(body, "&&" if macro in _TESTS_AND else "||")
    if parts is None:
        return None
    found = _name_test(parts[0], variable.text, "==" if macro in _TESTS_AND else "!=")
    if found is None:
        return None
    return found, node_count(body) + 1


def _top_level_split(body: list[Token], operator: str) -> list[list[Token]] | None:
    """`body` split at its top-level `operator`; None if it has a top-level `,`, `?` or (for
    `&&`) `||`, which bind looser."""
    looser = {",", "?", ":"} | ({"||"} if operator == "&&" else set())
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in body:
        text = token.text if token.kind == "punct" else ""
        if text in ("(", "[", "{", "[?"):
            depth += 1
        elif text in (")", "]", "}"):
            depth -= 1
        elif depth == 0 and text in looser:
            return None
        elif depth == 0 and text == operator:
            parts.append([])
            continue
        parts[-1].append(token)
    return parts


def _name_test(part: list[Token], variable: str, operator: str) -> frozenset[str] | None:
    """The names of `V.name == "X"` (`!=` for `all`) or `V.name in [...]` (`==` only)."""
    texts = [t.text for t in part]
    if texts[:3] != [variable, ".", "name"] or part[0].kind != "ident":
        return None
    if len(part) == 5 and texts[3] == operator and part[4].kind == "string":
        value = string_value(texts[4])
        return None if value is None else frozenset({value})
    if operator != "==" or len(part) < 7 or texts[3:5] != ["in", "["] or texts[-1] != "]":
        return None
    items = part[5:-1]
    names = set()
    for i, token in enumerate(items):
        if i % 2:
            if token.text != "," or token.kind != "punct":
                return None
            continue
        value = string_value(token.text) if token.kind == "string" else None
        if value is None:
            return None
        names.add(value)
    return frozenset(names) if len(items) % 2 else None
