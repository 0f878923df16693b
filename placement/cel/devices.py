"""Device selectors of dynamic resource allocation: kube's DRA CEL environment, on the same
engine and libraries as the cluster selectors (`placement.cel.engine`).

* The one variable is `device`: `driver` (string), `allowMultipleAllocations` (bool),
  `attributes` (domain -> id -> int, bool, string or semver) and `capacity` (domain -> id ->
  quantity). The C++ checker has no object types without protobuf, so each field is declared as
  a variable of its own qualified name (`device.driver`...): the checker resolves the select
  chain to it, with the field's type, as cel-go's checker does on kube's `kubernetes.DRADevice`.
* The libraries are kube's base environment (strings, lists, regex, URLs, quantity, IP, CIDR,
  format, semver, optional types) and `cel.bind`; not OCM's `parseJSON` or `scores`.
* A bare attribute or capacity name of a ResourceSlice belongs to the driver's domain. Looking
  up a domain the device lacks gives an empty map (kube's default), so
  `device.attributes["x"].y` is "no such key: y" and `.?y.orValue(...)` its default.
* Compile errors say what kube-apiserver says (`compilation failed: ERROR: <input>:1:7:
  undefined field 'foo'`, `must evaluate to bool or the unknown type, not string`); an evaluation
  has kube's budget (`resourceapi.CELSelectorExpressionMaxCost`) and cel-go's error words.

`DeviceSelectors.mask` runs a selector once per distinct (driver, attributes, capacity) of the
devices: the GPUs of one node pool share one attribute set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from cel_expr_python import cel  # type: ignore[import-untyped]
from cel_expr_python.ext import (  # type: ignore[import-untyped]
    ext_bindings,
    ext_optional,
    ext_strings,
)

from apis.resource import DeviceAttribute, DeviceCapacity
from placement.arrays import BoolMask
from placement.cel import k8s, quantity
from placement.cel.declarations import KINDS, declare
from placement.cel.device_library import extras
from placement.cel.device_text import (
    kube_words,
    literal_domains,
    presence_tests,
    result_type_name,
)
from placement.cel.k8s_values import SEMVER
from placement.cel.messages import celgo
from placement.cel.overloads import Function, Meter, opaque
from placement.cel.source import METER, instrument, node_count, tokenize

__all__ = [
    "MAX_COST",
    "MAX_EXPRESSION_BYTES",
    "DeviceProgram",
    "DeviceSelectorError",
    "DeviceSelectors",
    "DeviceView",
    "compile_device_selector",
]

MAX_COST = 1_000_000
"""kube's runtime cost limit of one device selector (`CELSelectorExpressionMaxCost`)."""
MAX_EXPRESSION_BYTES = 10 * 1024
"""kube's length limit of a selector's expression (`CELSelectorExpressionMaxLength`)."""

_OMITTED = frozenset({"parseJSON"})  # OCM's, not in kube's DRA environment
_MAP = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
_FIELDS = {
    "driver": cel.Type.STRING,
    "allowMultipleAllocations": cel.Type.BOOL,
    "attributes": cel.Type.Map(cel.Type.STRING, _MAP),
    "capacity": cel.Type.Map(cel.Type.STRING, cel.Type.Map(cel.Type.STRING, _MAP)),
}
FIELDS = frozenset(_FIELDS)


class DeviceSelectorError(ValueError):
    """A selector that does not compile (`runtime` False) or that failed on a device (True);
    `str(e)` is kube's message for it (`compilation failed: ...`, `no such key: model`)."""

    def __init__(self, message: str, runtime: bool = False) -> None:
        super().__init__(message)
        self.runtime = runtime

    def describe(self, owner: str, index: int) -> str:
        """The allocator's words for it: `class gpu: selector #0: CEL runtime error: ...`
        (`owner` is `class <name>` or `claim <namespace>/<name>`)."""
        kind = "runtime" if self.runtime else "compile"
        return f"{owner}: selector #{index}: CEL {kind} error: {self}"


class DeviceView(Protocol):
    """What a selector reads of one device (H3's inventory entries satisfy it)."""

    @property
    def driver(self) -> str: ...

    @property
    def attributes(self) -> Mapping[str, DeviceAttribute] | None: ...

    @property
    def capacity(self) -> Mapping[str, DeviceCapacity] | None: ...


class _Environment:
    """The environment and the meter of the evaluation in progress (single-threaded)."""

    def __init__(self) -> None:
        self.meter = Meter()
        functions = [f for f in k8s.build(self.meter) if f.name not in _OMITTED]
        functions += extras(functions, self.meter)
        functions.append(Function(METER, "dra_cost_meter", ("int",), "bool", self._tick))
        declarations = declare(functions)
        self.function_names = frozenset(f.name for f in functions) - {METER}
        self.env = cel.NewEnv(
            variables={f"device.{name}": kind for name, kind in _FIELDS.items()},
            functions=[
                cel.FunctionDecl(
                    "unwrapOpt",
                    [cel.Overload("list_unwrapOpt", KINDS["list"], [KINDS["list"]], True)],
                ),
            ],
            extensions=[
                ext_strings.ExtStrings(),
                ext_optional.ExtOptional(),
                ext_bindings.ExtBindings(),
                cel.CelExtension("kubernetes-dra", declarations),
            ],
        )

    def _tick(self, cost: int) -> bool:
        self.meter.charge(cost)
        return True


_ENV: _Environment | None = None


def _environment() -> _Environment:
    global _ENV
    if _ENV is None:
        _ENV = _Environment()
    return _ENV


def _engine_text(error: Exception) -> str:
    """The engine's status text without its status code wrapping; a missing key in cel-go's
    words (`no such key: model`)."""
    text = str(error)
    if "Iteration budget exceeded" in text:  # the engine's own stop of a runaway loop
        return "operation cancelled: actual cost limit exceeded"
    prefix = 'NOT_FOUND: Key not found in map : "'
    if text.startswith(prefix) and text.endswith('"'):
        return f"no such key: {text[len(prefix) : -1]}"
    for code in ("INVALID_ARGUMENT: ", "UNKNOWN: ", "OUT_OF_RANGE: ", "NOT_FOUND: "):
        text = text.removeprefix(code)
    return text.removesuffix(" [INVALID_ARGUMENT]").rstrip()


@dataclass(frozen=True)
class DeviceProgram:
    """One compiled selector."""

    expression: str
    _program: Any
    _base_cost: int
    _domains: frozenset[str]

    def matches(
        self,
        driver: str,
        attributes: Mapping[str, DeviceAttribute] | None,
        capacity: Mapping[str, DeviceCapacity] | None,
        allow_multiple_allocations: bool = False,
    ) -> bool:
        """Whether the device passes; raises `DeviceSelectorError` (runtime) with cel-go's
        words when the expression fails on it (a missing attribute, a spent budget)."""
        return self.evaluate(device_input(driver, attributes, capacity, allow_multiple_allocations))

    def evaluate(self, data: Mapping[str, Any]) -> bool:
        """`matches` on a device already as the engine's input (`device_input`)."""
        env = _environment()
        missing = self._domains.difference
        if self._domains:
            data = {
                **data,
                "device.attributes": _with_empty(data["device.attributes"], missing),
                "device.capacity": _with_empty(data["device.capacity"], missing),
            }
        env.meter.reset(MAX_COST, self._base_cost)
        try:
            value = self._program.eval(data=data)
            result = value.value()
        except (TypeError, RuntimeError, ValueError, OverflowError) as exc:
            raise DeviceSelectorError(_engine_text(exc), runtime=True) from None
        if result is True or result is False:
            return result
        if value.type() == cel.Type.ERROR:
            text = _engine_text(Exception(result)) if isinstance(result, str) else str(result)
            raise DeviceSelectorError(text, runtime=True)
        kind = value.type().name().lower()
        raise DeviceSelectorError(
            f"CEL result of type {kind} could not be converted to bool: "
            f"type conversion error from '{kind}' to 'bool'",
            runtime=True,
        )


def _with_empty(
    domains: Mapping[str, Any], missing: Callable[[Any], frozenset[str]]
) -> Mapping[str, Any]:
    absent = missing(domains.keys())
    if not absent:
        return domains
    return {**domains, **{domain: {} for domain in absent}}


def device_input(
    driver: str,
    attributes: Mapping[str, DeviceAttribute] | None,
    capacity: Mapping[str, DeviceCapacity] | None,
    allow_multiple_allocations: bool = False,
) -> dict[str, Any]:
    """The engine's input for one device: attributes and capacity by domain, a bare name in
    the driver's domain, versions and quantities as the Kubernetes values."""
    attrs: dict[str, dict[str, Any]] = {}
    for name, attribute in (attributes or {}).items():
        domain, _, ident = name.rpartition("/")
        attrs.setdefault(domain or driver, {})[ident] = _attribute_value(name, attribute)
    caps: dict[str, dict[str, Any]] = {}
    for name, cap in (capacity or {}).items():
        domain, _, ident = name.rpartition("/")
        caps.setdefault(domain or driver, {})[ident] = quantity.encode(cap.value.amount)
    return {
        "device.driver": driver,
        "device.allowMultipleAllocations": allow_multiple_allocations,
        "device.attributes": attrs,
        "device.capacity": caps,
    }


def _attribute_value(name: str, attribute: DeviceAttribute) -> Any:
    if attribute.int_value is not None:
        return attribute.int_value
    if attribute.bool_value is not None:
        return attribute.bool_value
    if attribute.string_value is not None:
        return attribute.string_value
    if attribute.version_value is not None:
        if SEMVER.fullmatch(attribute.version_value) is None:
            raise DeviceSelectorError(
                f"attribute {name}: parse semantic version: invalid semver "
                f"{attribute.version_value!r}",
                runtime=True,
            )
        return opaque("Semver", attribute.version_value.partition("+")[0])
    raise DeviceSelectorError(f"attribute {name}: unsupported attribute value", runtime=True)


def compile_device_selector(expression: str) -> DeviceProgram:
    """The compiled selector; raises `DeviceSelectorError` with kube-apiserver's message."""
    env = _environment()
    source = presence_tests(expression, FIELDS)
    try:
        checked = env.env.compile(source)
    except (RuntimeError, ValueError, TypeError) as exc:
        if [t.text for t in tokenize(expression)] == ["device"]:
            # kube's `device` is an object: it compiles, to the wrong type
            raise DeviceSelectorError(
                "must evaluate to bool or the unknown type, not kubernetes.DRADevice"
            ) from None
        text = kube_words(expression, _engine_text(exc), FIELDS)
        raise DeviceSelectorError(
            "compilation failed: " + celgo(expression, text, env.function_names)
        ) from None
    kind = checked.return_type()
    if kind != cel.Type.BOOL and kind != cel.Type.DYN:
        name = result_type_name(expression, kind.name())
        raise DeviceSelectorError(f"must evaluate to bool or the unknown type, not {name}")
    try:
        program = env.env.compile(instrument(source))
    except (RuntimeError, ValueError, TypeError) as exc:  # pragma: no cover - a bug here
        raise DeviceSelectorError("program instantiation failed: " + _engine_text(exc)) from None
    return DeviceProgram(
        expression, program, node_count(tokenize(expression)), literal_domains(expression)
    )


_CACHE_SIZE = 4096


class DeviceSelectors:
    """Compiled selectors by expression (one compile each, errors remembered too) and their
    evaluation over many devices."""

    def __init__(self) -> None:
        self._programs: dict[str, DeviceProgram | DeviceSelectorError] = {}

    def program(self, expression: str) -> DeviceProgram:
        """The compiled selector; raises `DeviceSelectorError` (compile)."""
        found = self._programs.get(expression)
        if found is None:
            try:
                found = compile_device_selector(expression)
            except DeviceSelectorError as exc:
                found = exc
            self._programs[expression] = found
            if len(self._programs) > _CACHE_SIZE:  # the oldest goes: expressions come and go
                del self._programs[next(iter(self._programs))]
        if isinstance(found, DeviceSelectorError):
            raise found
        return found

    def mask(self, expression: str, devices: Sequence[DeviceView]) -> BoolMask:
        """Which devices pass, evaluated once per distinct (driver, attributes, capacity);
        raises `DeviceSelectorError` (compile, or runtime on the first device that fails)."""
        program = self.program(expression)
        out = np.zeros(len(devices), dtype=bool)
        by_identity: dict[tuple[Any, ...], bool] = {}
        by_content: dict[tuple[Any, ...], bool] = {}
        for row, device in enumerate(devices):
            attributes, capacity = device.attributes, device.capacity
            multiple = bool(getattr(device, "allow_multiple_allocations", None))
            identity = (device.driver, id(attributes), id(capacity), multiple)
            verdict = by_identity.get(identity)
            if verdict is None:
                content = (device.driver, _content(attributes), _content(capacity), multiple)
                verdict = by_content.get(content)
                if verdict is None:
                    data = device_input(device.driver, attributes, capacity, multiple)
                    verdict = by_content[content] = program.evaluate(data)
                by_identity[identity] = verdict
            out[row] = verdict
        return out


def _content(values: Mapping[str, DeviceAttribute | DeviceCapacity] | None) -> tuple[Any, ...]:
    """A hashable form of attributes or capacity that tells apart what a selector can (each
    kind of attribute value in a place of its own: `true` is not `1`)."""
    if not values:
        return ()
    items: list[tuple[Any, ...]] = []
    for name, value in values.items():
        if isinstance(value, DeviceAttribute):
            items.append(
                (
                    name,
                    value.int_value,
                    value.bool_value,
                    value.string_value,
                    value.version_value,
                )
            )
        else:
            amount = value.value.amount
            items.append((name, amount.unscaled, amount.scale, amount.big))
    items.sort(key=lambda item: item[0])
    return tuple(items)
