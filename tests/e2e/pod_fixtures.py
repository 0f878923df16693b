"""The pod e2e modules' shared fixture, loaded as a plugin (`pytest_plugins`) so that it is
defined once: one `placement scheduler run` for the session, a profile per module."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.controlplane import ControlPlane
from tests.e2e.pod_helpers import SchedulerProcess, scheduler_config, scheduler_process


@pytest.fixture(scope="session")
def pod_scheduler(controller_manager: ControlPlane) -> Iterator[SchedulerProcess]:
    """One `placement scheduler run --config FILE` for the pod tests, a profile per module
    (`pod_helpers.PROFILES`), the PodGroup/ElasticQuota status controller beside it (the
    default)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as config:
        yaml.safe_dump(scheduler_config(), config)
    try:
        with scheduler_process(controller_manager, f"--config={config.name}") as process:
            yield process
    finally:
        Path(config.name).unlink(missing_ok=True)
