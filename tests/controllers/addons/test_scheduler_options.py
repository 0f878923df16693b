"""How `placement scheduler run` reads its configuration: a KubeSchedulerConfiguration file's
profiles and Lease, `--scheduler-name` against one or several profiles, and the cluster chosen
by flags, environment or the file's `clientConnection.kubeconfig`."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.addons.scheduler_options import (
    SchedulerOptions,
    cluster_access,
    configured,
    effective_config,
    scheduler_profiles,
)
from controllers.kube.config import ClusterAccess
from placement.pods.config.scheduler_config import ConfigError

KUBE = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: /etc/kubernetes/scheduler.conf}
leaderElection: {resourceNamespace: scheduling}
profiles:
- schedulerName: gangs
"""


@pytest.fixture(autouse=True)
def _no_cluster_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_a_kube_file_gives_its_profiles_and_lease(tmp_path: Path) -> None:
    config = effective_config(SchedulerOptions(config=write(tmp_path, KUBE)))
    assert config.scheduler_names == ("gangs",)
    assert (config.leader_election.lease_name, config.leader_election.lease_namespace) == (
        "gangs",
        "scheduling",
    )
    (profile,) = scheduler_profiles(config)
    assert profile.scheduler_name == "gangs"


def test_the_flag_renames_the_one_profile_but_not_several(tmp_path: Path) -> None:
    path = write(tmp_path, KUBE)
    renamed = effective_config(SchedulerOptions(config=path, scheduler_name="other"))
    assert renamed.scheduler_names == ("other",)
    two = write(tmp_path, KUBE + "- schedulerName: packer\n")
    kept = effective_config(SchedulerOptions(config=two, scheduler_name="packer"))
    assert kept.scheduler_names == ("gangs", "packer")  # already one of its names
    with pytest.raises(ConfigError, match="the configuration has 2 profiles"):
        effective_config(SchedulerOptions(config=two, scheduler_name="third"))


def test_the_files_kubeconfig_is_used_when_nothing_else_names_a_cluster(tmp_path: Path) -> None:
    loaded = effective_config(SchedulerOptions(config=write(tmp_path, KUBE)))
    options = SchedulerOptions(loaded=loaded)
    assert configured(options)
    assert cluster_access(options) == ClusterAccess(
        kubeconfig=Path("/etc/kubernetes/scheduler.conf")
    )
    flag = SchedulerOptions(loaded=loaded, kubeconfig=tmp_path / "mine")
    assert cluster_access(flag) == ClusterAccess(kubeconfig=tmp_path / "mine")
    assert not configured(SchedulerOptions(loaded=effective_config(SchedulerOptions())))
