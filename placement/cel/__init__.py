"""CEL cluster selectors (`celSelector.celExpressions`) as OCM evaluates them."""

from placement.cel.engine import (
    PER_CALL_LIMIT,
    TOTAL_BUDGET,
    CelCompileError,
    CelSelector,
    ScoreLookup,
    Verdict,
    compile_selector,
)

__all__ = [
    "PER_CALL_LIMIT",
    "TOTAL_BUDGET",
    "CelCompileError",
    "CelSelector",
    "ScoreLookup",
    "Verdict",
    "compile_selector",
]
