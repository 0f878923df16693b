"""The pod e2e modules' shared fixture, loaded as a plugin (`pytest_plugins`) so that it is
defined once: one `placement scheduler run` for the session, a profile per module, running as a
ServiceAccount bound to the rules of the ClusterRole we ship (config/addons/pod-scheduler),
so every test also checks that those rules are enough on a real apiserver with RBAC."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.pod_helpers import (
    SchedulerProcess,
    scheduler_config,
    scheduler_process,
    service_account,
)


@pytest.fixture(scope="session")
def pod_scheduler(controller_manager: ControlPlane) -> Iterator[SchedulerProcess]:
    """One `placement scheduler run --config FILE` for the pod tests, a profile per module
    (`pod_helpers.PROFILES`), the PodGroup/ElasticQuota status controller beside it (the
    default), as a ServiceAccount with the shipped ClusterRole's rules."""
    name = unique_name("e2e-pod-scheduler")
    with tempfile.TemporaryDirectory(prefix="e2e-pod-scheduler-") as folder:
        workdir = Path(folder)
        config = workdir / "config.yaml"
        config.write_text(yaml.safe_dump(scheduler_config()))
        kubeconfig = service_account(controller_manager, name, workdir)
        try:
            with scheduler_process(
                controller_manager, f"--config={config}", kubeconfig=kubeconfig
            ) as process:
                yield process
        finally:
            controller_manager.kubectl(
                "delete", "clusterrolebinding,clusterrole", name, "--ignore-not-found", check=False
            )
            controller_manager.kubectl("delete", "namespace", name, "--wait=false", check=False)
