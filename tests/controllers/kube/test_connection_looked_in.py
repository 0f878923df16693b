"""What a command says about the cluster it connects to: every place `find_access` looked when
it found none (`looked_in`, true to what each place held), and, once per process, which
kubeconfig file (and where it came from), context and server a client was made for, never the
credential."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from controllers.kube import config
from controllers.kube.config import find_access, looked_in, new_api_client


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No cluster in the environment; an empty home. The home folder."""
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(config, "_announced", set())
    return home


def test_looked_in_names_each_place_and_what_it_held(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert find_access() is None
    assert looked_in() == (
        "--kubeconfig not given, $KUBECONFIG not set, not in a pod ($KUBERNETES_SERVICE_HOST "
        f"not set), ~/.kube/config ({clean}/.kube/config) does not exist"
    )
    (clean / ".kube" / "config").mkdir(parents=True)  # a folder is not a kubeconfig
    monkeypatch.setenv("KUBECONFIG", "")  # set, but to nothing: kubectl ignores it too
    assert find_access() is None
    assert looked_in() == (
        "--kubeconfig not given, $KUBECONFIG='', not in a pod ($KUBERNETES_SERVICE_HOST not "
        f"set), ~/.kube/config ({clean}/.kube/config) is not a file"
    )


@pytest.mark.asyncio
async def test_the_chosen_file_context_and_server_are_logged_once_without_the_token(
    clean: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = clean / "k.yaml"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://10.1.2.3:6443"}}],
        "users": [{"name": "u", "user": {"token": "secret-token"}}],
        "contexts": [
            {"name": "a", "context": {"cluster": "c", "user": "u"}},
            {"name": "b", "context": {"cluster": "c", "user": "u"}},
        ],
        "current-context": "a",
    }
    path.write_text(yaml.safe_dump(doc))
    monkeypatch.setenv("KUBECONFIG", str(path))
    caplog.set_level(logging.INFO, logger="controllers.kube.config")
    for _ in range(2):  # a command opening two clients says it once
        access = find_access()
        assert access is not None
        await (await new_api_client(access)).close()
    access = find_access(context="b")
    assert access is not None
    await (await new_api_client(access)).close()
    assert [r.getMessage() for r in caplog.records] == [
        f'cluster: kubeconfig {path} (from $KUBECONFIG), context "a" (its current-context), '
        "server https://10.1.2.3:6443",
        f'cluster: kubeconfig {path} (from $KUBECONFIG), context "b", server https://10.1.2.3:6443',
    ]
    assert "secret-token" not in caplog.text
