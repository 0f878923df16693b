"""Unknown-field detection: which keys of a decoded document no field of its model names.

The models keep unknown fields (`extra="allow"`), so that an object read from a server running
a newer API loses nothing when written back. Files written by a person are another matter: a
typo such as `spec.numberOfCluster` would be kept, ignored, and every cluster selected. kubectl
rejects unknown fields by default (`--validate=strict`), and so does an API server asked for
`fieldValidation=Strict`; `unknown_fields_of` is the check both use, kept apart from the models.

The walk follows the models' wire names (aliases) through nested models, lists and maps of
models. Free-form values (`dict[str, Any]`, label maps, resource lists, `Any`) accept anything.
A model lists in `UNTYPED_FIELDS` the wire fields of its API type that it keeps without typing
them (their contents are not checked), and sets `ALL_FIELDS_KNOWN = False` when it types only a
small subset of a large Kubernetes type (then any field is accepted there).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from apis.errors import FieldProblem
from apis.meta import KubeModel

__all__ = ["UnknownField", "unknown_fields_of"]

# How close a known field name must be to an unknown one to be suggested (difflib's ratio).
_SUGGESTION_CUTOFF = 0.7


@dataclass(frozen=True)
class UnknownField:
    """A key of a document that no field of its model names.

    `path` is the full wire path (`spec.predicates[0].requiredClusterSelector.labelSelector.
    matchLabel`); `suggestion` the closest known field name at that level, if one is close.
    `str()` gives the API server's own wording, `unknown field "spec.numberOfCluster"`.
    """

    path: str
    suggestion: str | None = None

    def __str__(self) -> str:
        return f'unknown field "{self.path}"'

    @property
    def hint(self) -> str:
        """`unknown field`, with `, did you mean "x"?` when a known name is close."""
        if self.suggestion is None:
            return "unknown field"
        return f'unknown field, did you mean "{self.suggestion}"?'

    def problem(self) -> FieldProblem:
        """This unknown field as a FieldProblem (the path, then the hint)."""
        return FieldProblem(self.path, self.hint)


def unknown_fields_of(cls: type[KubeModel], data: Any) -> list[UnknownField]:
    """Every key of `data` (a decoded document of model `cls`) that no field of the model names,
    in document order. Values of the wrong type are not looked into (validation reports them)."""
    found: list[UnknownField] = []
    if isinstance(data, dict) and not _clean(cls, data):
        _walk_model(cls, data, "", found)
    return found


# --- the fast check --------------------------------------------------------------------------
# Nearly every document a server admits has no unknown field. `_clean` says so without building
# a path or reading a type annotation per value: each annotation is compiled once into a check
# of a value (None: nothing inside can be unknown). Only a True answer is trusted; on False (or
# anything unusual: a key that is no string, a nesting too deep) the walk above runs and words
# what it finds, so the answers are the walk's by construction.

_Check = Callable[[Any], bool]


def _clean(cls: type[KubeModel], data: dict[Any, Any]) -> bool:
    """True only if `data` (of model `cls`) holds no unknown field at any depth."""
    try:
        return _model_check(cls)(data)
    except RecursionError:
        return False


@cache
def _plan(cls: type[KubeModel]) -> tuple[dict[str, _Check | None], frozenset[str] | None]:
    """The check of each typed wire field's value, and the names besides them a document may
    hold (None: any, as the model does not type all fields of its API type)."""
    checks = {
        key: _compile(annotation)
        for key, annotation in _wire_fields(cls).items()
        if annotation is not None
    }
    return checks, (frozenset(cls.UNTYPED_FIELDS) if cls.ALL_FIELDS_KNOWN else None)


@cache
def _model_check(cls: type[KubeModel]) -> _Check:
    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True  # the walk does not look into it
        checks, untyped = _plan(cls)  # looked up here: models may refer to themselves
        for key, item in value.items():
            if type(key) is not str:
                return False
            if key in checks:
                inner = checks[key]
                if inner is not None and not inner(item):
                    return False
            elif untyped is not None and key not in untyped:
                return False
        return True

    return check


def _compile(annotation: Any) -> _Check | None:
    """The check `_walk(annotation, value, ...)` amounts to; None when it never finds one."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _compile(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return _union_check(get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, KubeModel):
        return _model_check(annotation)
    if origin is list:
        (item,) = get_args(annotation)
        inner = _compile(item)
        return None if inner is None else _list_check(inner)
    if origin is dict:
        _, item = get_args(annotation)
        inner = _compile(item)
        return None if inner is None else _dict_check(inner)
    return None


def _list_check(inner: _Check) -> _Check:
    return lambda value: not isinstance(value, list) or all(map(inner, value))


def _dict_check(inner: _Check) -> _Check:
    return lambda value: not isinstance(value, dict) or all(map(inner, value.values()))


def _union_check(arms: tuple[Any, ...]) -> _Check | None:
    """The walk looks into the first arm whose JSON shape the value has (`_fits`)."""
    for_dict = next((arm for arm in arms if _fits(arm, {})), None)
    for_list = next((arm for arm in arms if _fits(arm, [])), None)
    on_dict = None if for_dict is None else _compile(for_dict)
    on_list = None if for_list is None else _compile(for_list)
    if on_dict is None and on_list is None:
        return None

    def check(value: Any) -> bool:
        if isinstance(value, dict):
            return on_dict is None or on_dict(value)
        if isinstance(value, list):
            return on_list is None or on_list(value)
        return True

    return check


@cache
def _wire_fields(cls: type[KubeModel]) -> dict[str, Any]:
    """Wire name -> annotation of the model's typed fields."""
    return {(info.alias or name): info.annotation for name, info in cls.model_fields.items()}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _suggestion(key: str, known: list[str]) -> str | None:
    folded = key.replace("_", "").replace("-", "").lower()
    for name in known:
        if name.lower() == folded:
            return name  # `NumberOfClusters`, `number_of_clusters`
    close = difflib.get_close_matches(key, known, n=1, cutoff=_SUGGESTION_CUTOFF)
    return close[0] if close else None


def _walk_model(
    cls: type[KubeModel], data: dict[Any, Any], path: str, found: list[UnknownField]
) -> None:
    fields = _wire_fields(cls)
    for raw_key, value in data.items():
        key = str(raw_key)
        annotation = fields.get(key)
        if annotation is not None:
            _walk(annotation, value, _join(path, key), found)
        elif key not in cls.UNTYPED_FIELDS and cls.ALL_FIELDS_KNOWN:
            known = sorted({*fields, *cls.UNTYPED_FIELDS})
            found.append(UnknownField(_join(path, key), _suggestion(key, known)))


def _walk(annotation: Any, value: Any, path: str, found: list[UnknownField]) -> None:
    origin = get_origin(annotation)
    if origin is Annotated:
        _walk(get_args(annotation)[0], value, path, found)
    elif origin is Union or origin is types.UnionType:
        for arm in get_args(annotation):
            if _fits(arm, value):
                _walk(arm, value, path, found)
                return
    elif isinstance(annotation, type) and issubclass(annotation, KubeModel):
        if isinstance(value, dict):
            _walk_model(annotation, value, path, found)
    elif origin is list and isinstance(value, list):
        (item,) = get_args(annotation)
        for index, element in enumerate(value):
            _walk(item, element, f"{path}[{index}]", found)
    elif origin is dict and isinstance(value, dict):
        _, item = get_args(annotation)
        for key, element in value.items():
            _walk(item, element, f"{path}[{key}]", found)
    # Anything else is a leaf (str, int, Quantity, Any, ...): nothing to look into.


def _fits(annotation: Any, value: Any) -> bool:
    """Whether `value` has the JSON shape of `annotation` (object, list or scalar)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _fits(get_args(annotation)[0], value)
    if isinstance(annotation, type) and issubclass(annotation, KubeModel):
        return isinstance(value, dict)
    if origin is list:
        return isinstance(value, list)
    if origin is dict:
        return isinstance(value, dict)
    return False
