"""The pod e2e modules' shared fixture, loaded as a plugin (`pytest_plugins`) so that it is
defined once: one `placement scheduler run` for the session, a profile per module, running as a
ServiceAccount bound to the rules of the ClusterRole we ship (config/addons/pod-scheduler),
so every test also checks that those rules are enough on a real apiserver with RBAC."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.pod_helpers import SchedulerProcess, scheduler_config, scheduler_process

RBAC = Path(__file__).resolve().parents[2] / "config" / "addons" / "pod-scheduler" / "rbac.yaml"


def _shipped_rules() -> list[dict[str, Any]]:
    """The rules of the add-on's ClusterRole, as shipped."""
    docs = [d for d in yaml.safe_load_all(RBAC.read_text()) if d]
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def _service_account(plane: ControlPlane, name: str, workdir: Path) -> Path:
    """A ServiceAccount `name` (in its own namespace) bound to a copy of the shipped
    ClusterRole under its own name (other tests apply and delete the add-on's own objects);
    a kubeconfig with a token for it."""
    binding = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    subject = {"kind": "ServiceAccount", "name": name, "namespace": name}
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": name},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": _shipped_rules(),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": binding,
            "subjects": [subject],
        },
    ]
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    token = plane.kubectl("create", "token", name, "-n", name, "--duration=2h").stdout.strip()
    kubeconfig = yaml.safe_load(plane.kubeconfig.read_text())
    kubeconfig["users"] = [{"name": "admin", "user": {"token": token}}]
    path = workdir / "scheduler.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    return path


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
        kubeconfig = _service_account(controller_manager, name, workdir)
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
