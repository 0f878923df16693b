"""Plugin registry (name -> factory) and the profile saying which plugins run.

The registry is passed to the `Scheduler`; `placement/` never imports `plugins/`. A name is the
plugin's `name` attribute, never derived from a class name.

A plugin registered for an extension point must implement that point's method: a factory that
is a class (or a `functools.partial` of one) is checked when it is added, and every plugin a
factory builds is checked when the scheduler builds it (`build_*`), so a plugin that names a
point it does not implement is a `RegistryError`, never a method silently not called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from apis.placements import Placement, ScoreCoordinate
from placement.framework import Filter, Prioritizer, Selector

__all__ = ["Profile", "Registry", "RegistryError"]

FilterFactory = Callable[[], Filter]
PrioritizerFactory = Callable[[ScoreCoordinate], Prioritizer]
SelectorFactory = Callable[[], Selector]


class RegistryError(ValueError):
    """A plugin name registered twice, a plugin registered for a point it does not implement,
    or a profile naming an unknown plugin."""


# Each extension point's Protocol and the one method a plugin of that point implements.
_POINTS: dict[str, tuple[type[Any], str]] = {
    "filter": (Filter, "filter"),
    "prioritizer": (Prioritizer, "score"),
    "selector": (Selector, "select"),
}


def _factory_class(factory: object) -> type[Any] | None:
    """The class a factory builds when that is known before calling it (a class, or a partial
    of one), else None."""
    while isinstance(factory, partial):
        factory = factory.func
    return factory if isinstance(factory, type) else None


def _missing(point: str, cls: type[Any]) -> str | None:
    """Why instances of `cls` are not plugins of `point`, or None when they are."""
    protocol, method = _POINTS[point]
    found = getattr(cls, method, None)
    if not callable(found) or found is getattr(protocol, method):
        return f"does not implement {protocol.__name__}.{method}"
    return None


def _check(point: str, name: str, plugin: object) -> None:
    """Raise RegistryError unless `plugin` (a class, or a built plugin) implements `point`."""
    cls = plugin if isinstance(plugin, type) else type(plugin)
    problem = _missing(point, cls)
    if problem is None and not isinstance(plugin, type):
        built_name = getattr(plugin, "name", None)
        if not isinstance(built_name, str):
            problem = "has no `name`"
    if problem is not None:
        raise RegistryError(f"{point} plugin {name!r} ({cls.__qualname__}) {problem}")


@dataclass
class Registry:
    """Factories of filters, prioritizers (built from a score coordinate) and selectors."""

    filters: dict[str, FilterFactory] = field(default_factory=dict)
    prioritizers: dict[str, PrioritizerFactory] = field(default_factory=dict)
    selectors: dict[str, SelectorFactory] = field(default_factory=dict)

    @staticmethod
    def _add(point: str, table: dict[str, Any], name: str, factory: object) -> None:
        if name in table:
            raise RegistryError(f"plugin {name!r} is already registered")
        cls = _factory_class(factory)
        if cls is not None:
            _check(point, name, cls)
        table[name] = factory

    def add_filter(self, name: str, factory: FilterFactory) -> None:
        self._add("filter", self.filters, name, factory)

    def add_prioritizer(self, name: str, factory: PrioritizerFactory) -> None:
        self._add("prioritizer", self.prioritizers, name, factory)

    def add_selector(self, name: str, factory: SelectorFactory) -> None:
        self._add("selector", self.selectors, name, factory)

    def build_filter(self, name: str) -> Filter:
        """A new filter `name`; RegistryError if what its factory built is not a filter."""
        plugin = self.filters[name]()
        _check("filter", name, plugin)
        return plugin

    def build_prioritizer(self, name: str, coordinate: ScoreCoordinate) -> Prioritizer:
        """A new prioritizer `name` for `coordinate`; RegistryError if what its factory built
        is not a prioritizer."""
        plugin = self.prioritizers[name](coordinate)
        _check("prioritizer", name, plugin)
        return plugin

    def build_selector(self, name: str) -> Selector:
        """A new selector `name`; RegistryError if what its factory built is not a selector."""
        plugin = self.selectors[name]()
        _check("selector", name, plugin)
        return plugin


@dataclass(frozen=True)
class Profile:
    """Which filters run (in order), the Additive-mode default weights, the default selector.

    `addon_prioritizer` names the registry entry that serves `type: AddOn` coordinates.
    """

    filters: tuple[str, ...]
    default_weights: Mapping[str, int]
    selector: str
    addon_prioritizer: str = "AddOn"
    spread_selector: str | None = None
    selector_coordinates: frozenset[str] = frozenset()
    """builtIn names whose weight a selector reads (Spread); valid, but not prioritizers."""

    def selector_for(self, placement: Placement) -> str:
        """The spread selector for placements with spread constraints, else the default."""
        spread = placement.spec.spread_policy
        if self.spread_selector and spread and spread.spread_constraints:
            return self.spread_selector
        return self.selector

    def check(self, registry: Registry) -> None:
        """Raise RegistryError if the profile names a plugin the registry does not have."""
        missing = [n for n in self.filters if n not in registry.filters]
        missing += [n for n in self.default_weights if n not in registry.prioritizers]
        for selector in (self.selector, self.spread_selector):
            if selector is not None and selector not in registry.selectors:
                missing.append(selector)
        if missing:
            raise RegistryError(f"profile names unregistered plugins: {', '.join(missing)}")
