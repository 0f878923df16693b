"""`placement run` options that need no hub: where the Lease lives, which hub, usage errors.
Its failures against a hub are in test_bad_invocations.py (run as a subprocess)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.cli.main import EXIT_USAGE, main
from controllers.cli.run import DEFAULT_LEASE_NAMESPACE, RunOptions, hub_access, lease_namespace
from controllers.kube.config import ClusterAccess


def test_the_lease_namespace_comes_from_the_flag_then_the_pod_then_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.setattr("controllers.cli.run.SERVICE_ACCOUNT_NAMESPACE", Path("/nonexistent/ns"))
    assert lease_namespace(None) == DEFAULT_LEASE_NAMESPACE
    monkeypatch.setenv("POD_NAMESPACE", "hub-system")
    assert lease_namespace(None) == "hub-system"
    assert lease_namespace("explicit") == "explicit"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--workers", "0"],
            "argument --workers: expected a whole number above 0 (got '0')",
            id="workers",
        ),
        pytest.param(
            ["--resync", "0"], "argument --resync: expected a number above 0 (got '0')", id="resync"
        ),
        pytest.param(
            ["--sync-timeout", "-1"],
            "argument --sync-timeout: expected a number above 0 (got '-1')",
            id="sync-timeout",
        ),
        pytest.param(
            ["--http-addr", "8080"],
            "argument --http-addr: invalid listen address '8080'",
            id="http-addr",
        ),
        pytest.param(["--log-format", "xml"], "argument --log-format", id="log-format"),
    ],
)
def test_run_with_a_nonsense_option_is_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", *argv])
    assert exit_info.value.code == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_load_with_a_configured_hub_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    assert main(["run", "--load", str(tmp_path)]) == EXIT_USAGE
    assert "--load only applies to the embedded hub" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("env", "argv", "home_config", "expected"),
    [
        pytest.param({}, [], False, None, id="nothing-configured-embedded"),
        pytest.param({}, [], True, ClusterAccess(), id="default-kubeconfig"),
        pytest.param({"KUBECONFIG": "/k"}, ["--embedded"], True, None, id="embedded-wins"),
        pytest.param({}, ["--load", "/samples"], True, None, id="load-means-embedded"),
        pytest.param(
            {}, ["--kubeconfig", "/k"], True, ClusterAccess(kubeconfig=Path("/k")), id="flag"
        ),
        pytest.param({}, ["--context", "c"], False, ClusterAccess(context="c"), id="context"),
        pytest.param({"KUBECONFIG": "/k"}, [], True, ClusterAccess(), id="env"),
        pytest.param(
            {"KUBERNETES_SERVICE_HOST": "10.0.0.1"},
            [],
            True,
            ClusterAccess(in_cluster=True),
            id="pod-before-the-default-kubeconfig",
        ),
    ],
)
def test_the_hub_is_the_flags_then_kubeconfig_then_the_pod_then_the_default_kubeconfig(
    env: dict[str, str],
    argv: list[str],
    home_config: bool,
    expected: ClusterAccess | None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(tmp_path))
    if home_config:
        (tmp_path / ".kube").mkdir()
        (tmp_path / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\n")

    def given(flag: str) -> str | None:
        return argv[argv.index(flag) + 1] if flag in argv else None

    kubeconfig, load = given("--kubeconfig"), given("--load")
    options = RunOptions(
        kubeconfig=Path(kubeconfig) if kubeconfig else None,
        context=given("--context"),
        embedded="--embedded" in argv,
        load=Path(load) if load else None,
    )
    assert hub_access(options) == expected
