"""Built-in plugins, and the registry and profile that give OCM's behaviour."""

from functools import partial

from placement.registry import Profile, Registry
from placement.scheduler import Scheduler
from plugins.addon import AddOn
from plugins.balance import Balance
from plugins.evenspread.evenspread import SPREAD, EvenSpread
from plugins.predicate import Predicate
from plugins.resource import (
    RATIO_PRIORITIZERS,
    RESOURCE_PRIORITIZERS,
    ResourceAllocatable,
    ResourceRatio,
)
from plugins.steady import Steady
from plugins.tainttoleration import TaintToleration, TaintTolerationPrioritizer
from plugins.topn import TopN

__all__ = [
    "DEFAULT_PROFILE",
    "AddOn",
    "Balance",
    "EvenSpread",
    "Predicate",
    "ResourceAllocatable",
    "ResourceRatio",
    "Steady",
    "TaintToleration",
    "TaintTolerationPrioritizer",
    "TopN",
    "default_registry",
    "default_scheduler",
]

DEFAULT_PROFILE = Profile(
    filters=("Predicate", "TaintToleration"),
    # OCM's Additive defaults, plus the PreferNoSelect penalty (docs/replacing-ocm.md,
    # 'Differences from OCM').
    default_weights={"Balance": 1, "Steady": 1, "TaintToleration": 1},
    selector="TopN",
    spread_selector="EvenSpread",
    selector_coordinates=frozenset({SPREAD}),
)


def default_registry() -> Registry:
    """Every built-in plugin under its name."""
    registry = Registry()
    registry.add_filter("Predicate", Predicate)
    registry.add_filter("TaintToleration", TaintToleration)
    registry.add_prioritizer("Balance", Balance)
    registry.add_prioritizer("Steady", Steady)
    registry.add_prioritizer("TaintToleration", TaintTolerationPrioritizer)
    for name in RESOURCE_PRIORITIZERS:
        registry.add_prioritizer(name, partial(ResourceAllocatable, name))
    for name in RATIO_PRIORITIZERS:
        registry.add_prioritizer(name, partial(ResourceRatio, name))
    registry.add_prioritizer("AddOn", AddOn)
    registry.add_selector("TopN", TopN)
    registry.add_selector("EvenSpread", EvenSpread)
    return registry


def default_scheduler() -> Scheduler:
    """A scheduler with the built-in plugins and OCM's profile."""
    return Scheduler(default_registry(), DEFAULT_PROFILE)
