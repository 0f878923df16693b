"""Plugin registry (name -> factory) and the profile saying which plugins run.

The registry is passed to the `Scheduler`; `placement/` never imports `plugins/`. A name is the
plugin's `name` attribute, never derived from a class name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from apis.placements import Placement, ScoreCoordinate
from placement.framework import Filter, Prioritizer, Selector

__all__ = ["Profile", "Registry", "RegistryError"]

FilterFactory = Callable[[], Filter]
PrioritizerFactory = Callable[[ScoreCoordinate], Prioritizer]
SelectorFactory = Callable[[], Selector]


class RegistryError(ValueError):
    """A plugin name registered twice, or a profile naming an unknown plugin."""


@dataclass
class Registry:
    """Factories of filters, prioritizers (built from a score coordinate) and selectors."""

    filters: dict[str, FilterFactory] = field(default_factory=dict)
    prioritizers: dict[str, PrioritizerFactory] = field(default_factory=dict)
    selectors: dict[str, SelectorFactory] = field(default_factory=dict)

    @staticmethod
    def _add(table: dict[str, object], name: str, factory: object) -> None:
        if name in table:
            raise RegistryError(f"plugin {name!r} is already registered")
        table[name] = factory

    def add_filter(self, name: str, factory: FilterFactory) -> None:
        self._add(self.filters, name, factory)  # type: ignore[arg-type]

    def add_prioritizer(self, name: str, factory: PrioritizerFactory) -> None:
        self._add(self.prioritizers, name, factory)  # type: ignore[arg-type]

    def add_selector(self, name: str, factory: SelectorFactory) -> None:
        self._add(self.selectors, name, factory)  # type: ignore[arg-type]


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
