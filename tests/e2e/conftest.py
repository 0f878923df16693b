"""The real-control-plane tier: every test under tests/e2e/ carries the `e2e` marker and runs
against one kube-apiserver (and etcd) started for the whole test run from `$KUBEBUILDER_ASSETS`;
kube-controller-manager joins it the first time a test asks for `controller_manager`.

Without `$KUBEBUILDER_ASSETS` the tier is skipped, and the run's summary says so and why. With
it set, a control plane that cannot start fails every test of the tier (never a quiet skip).
`pytest -m e2e` runs the tier alone, `pytest -m "not e2e"` everything else.

Tests share the control plane: each works in namespaces and on cluster-scoped names of its own
(`unique_name`), and leaves cluster-scoped objects behind only when their names are its own.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.controlplane import ASSETS_ENV, ControlPlane, assets_dir, missing_assets

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
_not_run: list[str] = []
_counter = itertools.count(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _not_run:
        terminalreporter.write_sep("=", "e2e tier (real control plane)", yellow=True)
        terminalreporter.write_line(f"e2e tier did not run: {_not_run[0]}")
        terminalreporter.write_line(
            f"set {ASSETS_ENV} to a folder holding etcd, kube-apiserver and "
            "kube-controller-manager (docs/architecture.md, 'The e2e tier')"
        )


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver for the whole run, with our CRDs installed."""
    if assets_dir() is None:
        reason = missing_assets("etcd", "kube-apiserver")
        assert reason is not None
        _not_run.append(reason)
        pytest.skip(f"e2e tier: {reason}")
    plane = ControlPlane.from_env().start()
    try:
        plane.kubectl("apply", "-k", str(ROOT / "config" / "crds"))
        plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def controller_manager(control_plane: ControlPlane) -> ControlPlane:
    """The same control plane with kube-controller-manager running (pods from workloads, PV
    binding, garbage collection, ServiceAccounts)."""
    control_plane.start_controller_manager()
    return control_plane


@pytest.fixture
def kubeconfig(control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The control plane's kubeconfig, also as $KUBECONFIG for the test."""
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    return control_plane.kubeconfig


def unique_name(prefix: str) -> str:
    """A name no other test of this run uses (cluster-scoped objects outlive their test)."""
    return f"{prefix}-{os.getpid() % 1000}-{next(_counter)}"
