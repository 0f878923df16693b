"""The CEL types of our function signatures and the declarations the C++ runtime is given for
them, shared by the two environments built on it: OCM's placement selectors (`engine`) and
kube's DRA device selectors (`devices`)."""

from __future__ import annotations

from collections.abc import Iterable

from cel_expr_python import cel  # type: ignore[import-untyped]

from placement.cel.overloads import Function

__all__ = ["KINDS", "declare"]

KINDS = {
    "string": cel.Type.STRING,
    "int": cel.Type.INT,
    "bool": cel.Type.BOOL,
    "double": cel.Type.DOUBLE,
    "dyn": cel.Type.DYN,
    "list": cel.Type.List(cel.Type.DYN),
    "map": cel.Type.Map(cel.Type.STRING, cel.Type.DYN),
    # A Kubernetes-typed value (Quantity, Semver, IP...): a tagged map (placement.cel.overloads)
    "opaque": cel.Type.Map(cel.Type.STRING, cel.Type.DYN),
}
"""The type names of `Function` signatures, as the runtime's types."""


def declare(functions: Iterable[Function]) -> list[cel.FunctionDecl]:
    """One declaration per function name, holding every overload of that name in order."""
    by_name: dict[str, list[cel.Overload]] = {}
    for f in functions:
        by_name.setdefault(f.name, []).append(
            cel.Overload(
                f.overload,
                KINDS[f.result],
                [KINDS[p] for p in f.params],
                is_member=f.member,
                impl=f.impl,
            )
        )
    return [cel.FunctionDecl(name, overloads) for name, overloads in by_name.items()]
