"""The collector thresholds each entry point sets: the hub's young collections are rarer than
the pod scheduler's (fewer in-flight objects moved to the middle generation)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from controllers.cli import run
from controllers.runtime import process


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_the_hub_entry_sets_the_hub_thresholds() -> None:
    run.tune_gc()
    assert gc.get_threshold() == process.HUB_GC_THRESHOLDS
    assert process.HUB_GC_THRESHOLDS[0] > process.GC_THRESHOLDS[0]


def test_the_shared_default_is_unchanged_for_the_other_entry_points() -> None:
    process.tune_gc()
    assert gc.get_threshold() == process.GC_THRESHOLDS == (50_000, 50, 100)
