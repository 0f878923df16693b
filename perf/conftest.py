"""Benchmark options shared by the files in perf/: with `--benchmark-disable` (the default in
CI, set in pyproject) the benchmarks run once as a smoke test and the largest sizes skip."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def benchmarking(pytestconfig: pytest.Config) -> bool:
    """True when benchmarks are measured (`--benchmark-enable` or `--benchmark-only`)."""
    enabled = pytestconfig.getoption("benchmark_enable") or pytestconfig.getoption("benchmark_only")
    return bool(enabled) or not pytestconfig.getoption("benchmark_disable")
