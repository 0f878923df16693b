"""Finding the API server as kubectl and controller-runtime do: `$KUBECONFIG` lists files merged
kubectl's way (missing ones skipped, the first file to set current-context or to name a context
wins), `~/.kube/config` by default, the pod's service account in a pod, nothing at all when none
of them exists; connected through the real client to embedded servers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from apis.cluster import ManagedCluster
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess, ClusterAccessError, find_access
from controllers.kube.gateway import Gateway
from tests.controllers.embedded.hub import cluster, hub


def only_context(path: Path, server: EmbeddedApiServer, name: str) -> Path:
    """A kubeconfig with one context `name` (its cluster and user too), no current-context."""
    doc = yaml.safe_load(server.kubeconfig(path, context=name).read_text())
    del doc["current-context"]
    path.write_text(yaml.safe_dump(doc))
    return path


def current_only(path: Path, context: str) -> Path:
    """A kubeconfig that only sets current-context (as `kubectl config use-context` writes to
    the first file of $KUBECONFIG)."""
    path.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": context})
    )
    return path


async def names(access: ClusterAccess) -> list[str]:
    async with await Gateway.connect(access) as gateway:
        return [c.name for c in (await gateway.list(ManagedCluster)).items]


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No hub in the environment; an empty home. The home folder."""
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.asyncio
async def test_kubeconfig_lists_files_merged_the_first_current_context_winning(
    clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with hub() as (a, gw_a), hub() as (b, gw_b):
        await gw_a.create(cluster("on-a"))
        await gw_b.create(cluster("on-b"))
        first = current_only(tmp_path / "first", "b")
        second = only_context(tmp_path / "second", a, "a")
        third = b.kubeconfig(tmp_path / "third", context="b")  # its current-context "b" too
        fourth = a.kubeconfig(tmp_path / "fourth", context="a")  # says "a": too late to count
        listed = [first, tmp_path / "missing", second, third, fourth]
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join(str(p) for p in listed))
        access = find_access()
        assert access == ClusterAccess()
        assert await names(access) == ["on-b"]
        assert await names(ClusterAccess(context="a")) == ["on-a"]


@pytest.mark.asyncio
async def test_kubeconfig_files_none_of_which_exists_are_one_error_naming_them(
    clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = os.pathsep.join(str(tmp_path / name) for name in ("x", "y"))
    monkeypatch.setenv("KUBECONFIG", listed)
    with pytest.raises(ClusterAccessError) as failure:
        await Gateway.connect(ClusterAccess())
    assert str(failure.value) == f"kubeconfig {listed} ($KUBECONFIG): none of the files exists"


@pytest.mark.asyncio
async def test_the_default_kubeconfig_is_found_when_nothing_else_is_configured(
    clean: Path,
) -> None:
    assert find_access() is None
    async with hub() as (server, gw):
        await gw.create(cluster("c1"))
        (clean / ".kube").mkdir()
        server.kubeconfig(clean / ".kube" / "config")
        access = find_access()
        assert access == ClusterAccess()
        assert await names(access) == ["c1"]


def test_a_pod_uses_its_service_account_before_the_default_kubeconfig(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (clean / ".kube").mkdir()
    (clean / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert find_access() == ClusterAccess(in_cluster=True)
    monkeypatch.setenv("KUBECONFIG", "/k")
    assert find_access() == ClusterAccess()
    assert find_access(Path("/flag")) == ClusterAccess(kubeconfig=Path("/flag"))
