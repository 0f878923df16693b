"""Our KubeSchedulerConfiguration validation against the kube-scheduler binary's: the same bad
files (the rules of tests/controllers/cli/test_schedulerconfig_rules.py whose wording is kube's)
given to `kube-scheduler --config`, which refuses them at start-up before it connects to any
cluster; each line we print must appear in its error, path and words alike.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from controllers.addons.scheduler_options import load_scheduler_config
from placement.pods.config.profiles import ConfigError
from tests.controllers.cli.test_schedulerconfig_rules import CASES, HEAD
from tests.e2e.controlplane import assets_dir, missing_assets

SAME_AS_KUBE = (
    "burst",
    "parallelism",
    "percentage",
    "initial-backoff",
    "max-below-initial",
    "backoffs-both",
    "lock",
    "scheduler-name",
    "preemption-percentage",
    "preemption-absolute",
    "hard-weight",
    "balanced-weight",
    "spread-skew",
    "spread-action",
    "bind-timeout",
    "spread-duplicate",
    "match-fields-operator",
    "fit-type",
    "fit-type-missing",
    "removed-plugin",
    "duplicate-config",
    "preemption-both-zero",
    "spread-key",
    "spread-selector",
    "spread-system",
    "shape-score",
    "ignored-resource",
    "gt-integer",
    "match-fields-values",
)
PLUGIN_INIT = "profiles[0].pluginConfig[0].args."
"""kube checks NodeResourcesFit's args when it builds the plugin: its paths start at `args`."""

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def _kube_error(config: Path) -> str:
    """kube-scheduler's start-up error for `config` (it must exit 1 without a cluster)."""
    folder = assets_dir()
    assert folder is not None
    done = subprocess.run(
        [str(folder / "kube-scheduler"), f"--config={config}", "--secure-port=0"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    for line in done.stderr.splitlines():
        if '"command failed" err=' in line:
            return str(json.loads(line.split(" err=", 1)[1]))
    raise AssertionError(done.stderr[-2000:])


def test_our_lines_are_kube_schedulers(tmp_path: Path) -> None:
    reason = missing_assets("kube-scheduler")
    if reason:
        pytest.fail(reason)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    for name in SAME_AS_KUBE:
        fields, line = CASES[name]
        doc = {**HEAD, **fields, "clientConnection": {"kubeconfig": str(kubeconfig)}}
        if name == "burst":
            doc["clientConnection"] = {"kubeconfig": str(kubeconfig), "burst": -1}
        config = tmp_path / f"{name}.yaml"
        config.write_text(yaml.safe_dump(doc))
        with pytest.raises(ConfigError) as raised:
            load_scheduler_config(config)
        ours = [
            found.removeprefix(f"{config}: ")
            for found in str(raised.value).splitlines()
            if found.startswith(f"{config}: {line}")
        ]
        assert len(ours) == 1, (name, str(raised.value))
        kube = _kube_error(config)
        expected = ours[0]
        if "initializing plugin" in kube:
            expected = expected.removeprefix(PLUGIN_INIT)
        assert expected in kube, (name, expected, kube)
