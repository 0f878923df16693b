"""CEL cluster selectors as OCM evaluates them, on cel-expr-python (Google's C++ runtime).

* One environment per process: the variable `managedCluster` (map(string, dyn)), CEL's
  standard library, the strings extension, optional types, the Kubernetes libraries and OCM's
  `parseJSON` and `managedCluster.scores(name)` (`placement.cel.k8s`).
* `compile_selector(expressions)` compiles once per distinct list of expressions (a small
  LRU: a placement's generation changes its expressions, nothing else does) and returns a
  `CelSelector`, or the first compile error in OCM's words (`compilation failed: ERROR: ...`).
* `CelSelector.evaluate(cluster, scores)` runs the expressions in order, ANDed, with OCM's
  budgets: 1,000,000 per expression (cel-go's PerCallLimit) and 10,000,000 in total for one
  cluster (RuntimeCELCostBudget). An error, a non-boolean or a spent budget is "not matched";
  the `Verdict` says which expression decided and why, for explain.

The engine keeps no per-call state we could hand it, so the meter and the score lookup of the
evaluation in progress live in this module (evaluation is synchronous and single-threaded).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel  # type: ignore[import-untyped]
from cel_expr_python.ext import ext_optional, ext_strings  # type: ignore[import-untyped]

from placement.cel import k8s
from placement.cel.columns import ColumnNode, column_plan
from placement.cel.declarations import KINDS, declare
from placement.cel.messages import celgo
from placement.cel.overloads import Function, Meter
from placement.cel.reads import LabelReads, label_reads
from placement.cel.source import METER, instrument, node_count, score_names, tokenize

__all__ = [
    "PER_CALL_LIMIT",
    "TOTAL_BUDGET",
    "CelCompileError",
    "CelSelector",
    "ScoreLookup",
    "Verdict",
    "compile_selector",
]

PER_CALL_LIMIT = 1_000_000
"""cel-go's cost limit for one expression (k8s `celconfig.PerCallLimit`)."""
TOTAL_BUDGET = 10_000_000
"""OCM's budget for all expressions of one selector on one cluster (`RuntimeCELCostBudget`)."""

ScoreLookup = Callable[[str, str], Sequence[Mapping[str, Any]] | None]
"""(cluster name, AddOnPlacementScore name) -> the score's `[{name, value}]`, None if absent."""


_NATIVE_UNDECLARED = [
    cel.FunctionDecl(
        "unwrapOpt", [cel.Overload("list_unwrapOpt", KINDS["list"], [KINDS["list"]], True)]
    ),
    cel.FunctionDecl(
        "optional.unwrap", [cel.Overload("optional_unwrap", KINDS["list"], [KINDS["list"]])]
    ),
]
"""cel-go's optional library v2 functions that the engine runs but its checker lacks:
declared without an implementation, the engine's own one is used."""


class CelCompileError(ValueError):
    """An expression the environment refuses; `index` is its position in the list."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


class _Runtime:
    """The environment and the state of the evaluation in progress."""

    def __init__(self) -> None:
        self.meter = Meter()
        self.scores: ScoreLookup = lambda cluster, name: None
        functions = list(k8s.build(self.meter))
        functions.append(
            Function("scores", "cluster_scores", ("dyn", "string"), "list", self._scores, True)
        )
        functions.append(Function(METER, "ocm_cost_meter", ("int",), "bool", self._tick))
        declarations = declare(functions)
        self.function_names = frozenset(f.name for f in functions) - {METER}
        self.env = cel.NewEnv(
            variables={"managedCluster": KINDS["map"]},
            functions=_NATIVE_UNDECLARED,
            extensions=[
                ext_strings.ExtStrings(),
                ext_optional.ExtOptional(),
                cel.CelExtension("ocm-placement", declarations),
            ],
        )

    def _tick(self, cost: int) -> bool:
        self.meter.charge(cost)
        return True

    def _scores(self, cluster: Any, name: str) -> list[dict[str, Any]]:
        """OCM's `scores`: the score object `name` in the namespace of the receiver's
        `metadata.name`; missing is an error (validUntil is not looked at, as in OCM)."""
        metadata = cluster.get("metadata") if isinstance(cluster, dict) else None
        if not isinstance(metadata, dict):
            raise LookupError("failed to get cluster metadata")
        cluster_name = metadata.get("name")
        if not isinstance(cluster_name, str):
            raise LookupError("failed to get cluster name")
        found = self.scores(cluster_name, name)
        if found is None:
            raise LookupError(
                # OCM's words: its lister's not-found error names the resource in the singular
                "failed to get score: addonplacementscore.cluster.open-cluster-management.io "
                f'"{name}" not found'
            )
        items = [{"name": item["name"], "value": item["value"]} for item in found]
        self.meter.charge(10 + len(items) * (1 + 30))  # OCM's CostEstimator for scores
        return items


_RUNTIME: _Runtime | None = None


def _runtime() -> _Runtime:
    global _RUNTIME
    if _RUNTIME is None:
        _RUNTIME = _Runtime()
    return _RUNTIME


_NO_SUCH_KEY = re.compile(r'^NOT_FOUND: Key not found in map : "(.*)"$', re.DOTALL)


def _engine_message(error: Exception) -> str:
    """The engine's status text without its status code wrapping, a missing key in cel-go's
    words (`no such key: env`)."""
    text = str(error)
    missing = _NO_SUCH_KEY.match(text)
    if missing is not None:
        return f"no such key: {missing[1]}"
    for prefix in ("INVALID_ARGUMENT: ", "UNKNOWN: ", "OUT_OF_RANGE: ", "NOT_FOUND: "):
        text = text.removeprefix(prefix)
    return text.removesuffix(" [INVALID_ARGUMENT]").rstrip()


@dataclass(frozen=True)
class Verdict:
    """A cluster's result for one selector: `failed` is None when every expression was true,
    else the index of the expression that decided, with `error` set when it did not evaluate
    to a boolean (an error, a spent budget) and `cost` the total spent."""

    failed: int | None
    error: str | None = None
    cost: int = 0

    @property
    def matched(self) -> bool:
        return self.failed is None


MATCHED = Verdict(None)


@dataclass(frozen=True)
class _Program:
    source: str
    program: Any
    base_cost: int


class CelSelector:
    """The compiled expressions of one `celSelector`, ANDed in order."""

    def __init__(self, expressions: tuple[str, ...], programs: tuple[_Program, ...]) -> None:
        self.expressions = expressions
        self._programs = programs
        names: set[str] = set()
        self._all_scores = False
        for source in expressions:
            found = score_names(source)
            if found is None:
                self._all_scores = True
            else:
                names |= found
        self._score_names = frozenset(names)
        self.column_plan: tuple[ColumnNode, ...] | None = column_plan(expressions)
        """The expressions as tests the snapshot's columns answer, None if one is not."""
        self.label_reads: LabelReads | None = label_reads(expressions)
        """The label keys (and the name) the expressions read, None if they read more."""

    @property
    def score_names(self) -> frozenset[str] | None:
        """The AddOnPlacementScore names the expressions read (None: any, some name is
        computed); empty when none calls `scores()`."""
        return None if self._all_scores else self._score_names

    def evaluate(self, cluster: Mapping[str, Any], scores: ScoreLookup | None = None) -> Verdict:
        """Run the expressions on one cluster (unstructured `metadata`/`spec`/`status`)."""
        runtime = _runtime()
        runtime.scores = scores or (lambda cluster, name: None)
        meter = runtime.meter
        activation = runtime.env.Activation({"managedCluster": cluster})
        remaining = TOTAL_BUDGET
        spent = 0
        for index, compiled in enumerate(self._programs):
            meter.reset(min(PER_CALL_LIMIT, remaining), compiled.base_cost)
            try:
                value = compiled.program.eval(activation)
                result = value.value()
                error = None
                if result is not True and result is not False:
                    error = _result_error(value, result)
            except (TypeError, RuntimeError, ValueError) as exc:  # a value the binding refuses
                result, error = None, _engine_message(exc)
            cost = meter.cost
            spent += cost
            if cost > PER_CALL_LIMIT:
                return Verdict(index, "operation cancelled: actual cost limit exceeded", spent)
            if cost > remaining:
                return Verdict(
                    index, f"cost budget exceeded (cost {cost}, budget {remaining})", spent
                )
            remaining -= cost
            if error is not None:
                return Verdict(index, error, spent)
            if result is not True:
                return Verdict(index, None, spent)
        return Verdict(None, None, spent)


def _result_error(value: Any, result: Any) -> str | None:
    """The error of a non-boolean result, None when it is a value (just not `true`)."""
    if value.type() == cel.Type.ERROR:
        return _engine_message(Exception(result)) if isinstance(result, str) else str(result)
    return f"expression evaluated to {value.type().name().lower()}, not bool"


_CACHE: OrderedDict[tuple[str, ...], CelSelector | CelCompileError] = OrderedDict()
_CACHE_SIZE = 512


def compile_selector(expressions: Sequence[str]) -> CelSelector:
    """The compiled selector for `expressions`, from the cache when seen before; raises
    `CelCompileError` with OCM's message for the first expression that does not compile."""
    key = tuple(expressions)
    found = _CACHE.get(key)
    if found is None:
        found = _compile(key)
        _CACHE[key] = found
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    if isinstance(found, CelCompileError):
        raise found
    return found


def _compile(expressions: tuple[str, ...]) -> CelSelector | CelCompileError:
    env = _runtime().env
    programs = []
    for index, source in enumerate(expressions):
        try:
            env.compile(source)  # the user's text: errors point into it
        except (RuntimeError, ValueError, TypeError) as exc:
            message = celgo(source, _engine_message(exc), _runtime().function_names)
            return CelCompileError(index, "compilation failed: " + message)
        try:
            program = env.compile(instrument(source))
        except (RuntimeError, ValueError, TypeError) as exc:  # pragma: no cover - a bug here
            return CelCompileError(index, "instantiation failed: " + _engine_message(exc))
        programs.append(_Program(source, program, node_count(tokenize(source))))
    return CelSelector(expressions, tuple(programs))
