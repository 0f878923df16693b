"""Every built-in pod plugin declares exactly the extension points it implements.

A hook method without its Protocol among the class's bases would never be called (the profile
and the preemptor find plugins by declaration), and a declared point without its method would
be a plugin that cannot be instantiated: both are caught here for every built-in, and the
helpers that read declarations are held to their contract.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import plugins.pods
from placement.pods.framework.interface import (
    POINTS,
    EventHandler,
    Filter,
    PreemptionHooks,
    Score,
    declared_points,
    declares,
    overrides,
)


def built_ins() -> list[type]:
    """Every class defined in a module of plugins/pods (its family folders included) with a
    string `name` (a plugin)."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(plugins.pods.__path__, "plugins.pods."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and isinstance(vars(cls).get("name"), str):
                found[cls.__name__] = cls
    return [found[name] for name in sorted(found)]


BUILT_INS = built_ins()
HOOKS = tuple(
    name for name, _ in inspect.getmembers(PreemptionHooks) if name.startswith("preemption_")
)


def test_every_registered_plugin_is_checked() -> None:
    assert {vars(cls)["name"] for cls in BUILT_INS} >= set(plugins.pods.POD_PLUGINS)


@pytest.mark.parametrize("cls", BUILT_INS, ids=lambda cls: cls.__name__)
def test_plugin_declares_every_point_whose_method_it_has(cls: type) -> None:
    declared = set(POINTS) & set(cls.__mro__)
    for point, methods in POINTS.items():
        has = [m for m in methods if m in vars_of(cls)]
        if has:
            assert point in declared, f"{cls.__name__}.{has[0]} without declaring {point.__name__}"
    own_hooks = [m for m in HOOKS if m in vars_of(cls)]
    if own_hooks:
        assert PreemptionHooks in declared, f"{cls.__name__}.{own_hooks[0]} undeclared"
    misspelt = [m for m in vars_of(cls) if m.startswith("preemption_") and m not in HOOKS]
    assert misspelt == [], f"{cls.__name__}: no such preemption hook"


@pytest.mark.parametrize("cls", BUILT_INS, ids=lambda cls: cls.__name__)
def test_plugin_implements_every_point_it_declares(cls: type) -> None:
    for point in set(POINTS) & set(cls.__mro__):
        for method in POINTS[point]:
            assert method in vars_of(cls), f"{cls.__name__} declares {point.__name__}, no {method}"
    assert not inspect.isabstract(cls)


def vars_of(cls: type) -> set[str]:
    """The names the class and its non-Protocol bases define themselves."""
    names: set[str] = set()
    for base in cls.__mro__:
        if base is object or base in POINTS:
            continue
        names.update(vars(base))
    return names


class Quiet(Filter, EventHandler):
    name = "Quiet"

    def filter(self, cycle, pod, nodes, candidates):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def on_event(self, event, cluster):  # type: ignore[no-untyped-def]
        return False


class Restrictive(PreemptionHooks):
    name = "Restrictive"

    def preemption_eligible(self, cycle, pod, nodes, diagnosis):  # type: ignore[no-untyped-def]
        return "no"


class Undeclared:
    """Has a preemption hook's method but does not declare the Protocol."""

    name = "Undeclared"

    def preemption_eligible(self, cycle, pod, nodes, diagnosis):  # type: ignore[no-untyped-def]
        return "no"


def test_declared_points_are_read_from_the_class_in_points_order() -> None:
    assert declared_points(Quiet()) == (Filter, EventHandler)
    assert declares(Quiet(), Filter)
    assert not declares(Quiet(), Score)
    assert not declares(Undeclared(), PreemptionHooks)


def test_only_overridden_preemption_hooks_count() -> None:
    assert overrides(Restrictive(), "preemption_eligible")
    assert not overrides(Restrictive(), "preemption_victims")
    assert not overrides(Restrictive(), "preemption_complete")
