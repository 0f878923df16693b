"""Workload expansion: the pods the Deployment, ReplicaSet, StatefulSet and Job controllers
create, with kube's names, labels and owner references, the same for the same input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest

from apis.core import Pod
from apis.meta import KubeObject
from placement.pods.simulator.workloads import (
    CONTROLLER_REVISION_HASH_LABEL,
    JOB_COMPLETION_INDEX,
    JOB_CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    POD_TEMPLATE_HASH_LABEL,
    STATEFULSET_POD_INDEX_LABEL,
    STATEFULSET_POD_NAME_LABEL,
    expand,
    safe_encode,
    template_hash,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
ALPHABET = set("bcdfghjklmnpqrstvwxz2456789")


# Stand-ins for the apps/v1 and batch/v1 models: expansion reads only the wire form and KIND.
class Deployment(KubeObject):
    GROUP: ClassVar[str] = "apps"
    KIND: ClassVar[str] = "Deployment"


class ReplicaSet(KubeObject):
    GROUP: ClassVar[str] = "apps"
    KIND: ClassVar[str] = "ReplicaSet"


class StatefulSet(KubeObject):
    GROUP: ClassVar[str] = "apps"
    KIND: ClassVar[str] = "StatefulSet"


class Job(KubeObject):
    GROUP: ClassVar[str] = "batch"
    KIND: ClassVar[str] = "Job"


TEMPLATE = {
    "metadata": {"labels": {"app": "web"}, "annotations": {"team": "shop"}},
    "spec": {
        "schedulerName": "ocm-pod-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
    },
}


def workload(cls: type[KubeObject], name: str = "web", **spec: Any) -> KubeObject:
    return cls.model_validate(
        {
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"template": TEMPLATE, **spec},
        }
    )


def names(pods: tuple[Pod, ...]) -> list[str]:
    return [p.name for p in pods]


def test_a_deployment_makes_a_replica_set_named_after_its_template_hash() -> None:
    expansion = expand(
        workload(Deployment, replicas=3, selector={"matchLabels": {"app": "web"}}), NOW
    )
    (rs,) = expansion.objects
    hashed = template_hash(TEMPLATE)
    assert set(hashed) <= ALPHABET and 1 <= len(hashed) <= 10
    assert rs.kind == "ReplicaSet" and rs.name == f"web-{hashed}" and rs.namespace == "shop"
    wire = rs.to_wire()
    assert wire["metadata"]["labels"] == {"app": "web", POD_TEMPLATE_HASH_LABEL: hashed}
    assert wire["spec"]["replicas"] == 3
    assert wire["spec"]["selector"]["matchLabels"] == {
        "app": "web",
        POD_TEMPLATE_HASH_LABEL: hashed,
    }
    (owner,) = wire["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Deployment", "web", True)

    assert len(expansion.pods) == 3
    for pod in expansion.pods:
        prefix, _, suffix = pod.name.rpartition("-")
        assert prefix == rs.name and len(suffix) == 5 and set(suffix) <= ALPHABET
        assert pod.metadata.labels == {"app": "web", POD_TEMPLATE_HASH_LABEL: hashed}
        assert pod.metadata.annotations == {"team": "shop"}
        (ref,) = pod.metadata.owner_references or []
        assert (ref.kind, ref.name, ref.uid, ref.controller) == (
            "ReplicaSet",
            rs.name,
            rs.metadata.uid,
            True,
        )
        assert pod.metadata.creation_timestamp == NOW
        assert pod.spec.scheduler_name == "ocm-pod-scheduler"
        assert pod.status is not None and pod.status.phase == "Pending"
    assert len(set(names(expansion.pods))) == 3
    assert len({p.metadata.uid for p in expansion.pods}) == 3


def test_expansion_is_the_same_for_the_same_input() -> None:
    one = expand(workload(Deployment, replicas=4), NOW)
    two = expand(workload(Deployment, replicas=4), NOW + timedelta(hours=1))
    assert names(one.pods) == names(two.pods)
    assert [p.metadata.uid for p in one.pods] == [p.metadata.uid for p in two.pods]
    assert two.pods[0].metadata.creation_timestamp == NOW + timedelta(hours=1)


def test_a_changed_template_gets_another_hash_and_other_names() -> None:
    changed = {**TEMPLATE, "metadata": {"labels": {"app": "web", "v": "2"}}}
    assert template_hash(changed) != template_hash(TEMPLATE)
    one = expand(workload(Deployment, replicas=1), NOW)
    two = Deployment.model_validate(
        {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"template": changed}}
    )
    assert one.objects[0].name != expand(two, NOW).objects[0].name


def test_a_deployment_without_replicas_has_one_and_zero_means_none() -> None:
    assert len(expand(workload(Deployment), NOW).pods) == 1
    assert expand(workload(Deployment, replicas=0), NOW).pods == ()


def test_a_replica_set_owns_its_pods_directly() -> None:
    expansion = expand(workload(ReplicaSet, name="cache", replicas=2), NOW)
    assert expansion.objects == ()
    for pod in expansion.pods:
        assert pod.name.startswith("cache-") and len(pod.name) == len("cache-") + 5
        (ref,) = pod.metadata.owner_references or []
        assert (ref.kind, ref.name, ref.api_version) == ("ReplicaSet", "cache", "apps/v1")
        assert pod.metadata.labels == {"app": "web"}  # no hash label added by a bare RS


def test_a_stateful_set_makes_ordinal_pods_in_order() -> None:
    expansion = expand(workload(StatefulSet, name="db", replicas=3, serviceName="db"), NOW)
    assert names(expansion.pods) == ["db-0", "db-1", "db-2"]
    assert expansion.ordered  # OrderedReady is the default policy
    revision = f"db-{template_hash(TEMPLATE)}"
    for ordinal, pod in enumerate(expansion.pods):
        assert pod.metadata.labels == {
            "app": "web",
            CONTROLLER_REVISION_HASH_LABEL: revision,
            STATEFULSET_POD_NAME_LABEL: f"db-{ordinal}",
            STATEFULSET_POD_INDEX_LABEL: str(ordinal),
        }
        spec = pod.to_wire()["spec"]
        assert (spec["hostname"], spec["subdomain"]) == (f"db-{ordinal}", "db")
        (ref,) = pod.metadata.owner_references or []
        assert (ref.kind, ref.name, ref.controller) == ("StatefulSet", "db", True)


def test_a_parallel_stateful_set_is_not_ordered_and_ordinals_may_start_later() -> None:
    expansion = expand(
        workload(
            StatefulSet,
            name="db",
            replicas=2,
            podManagementPolicy="Parallel",
            ordinals={"start": 5},
        ),
        NOW,
    )
    assert names(expansion.pods) == ["db-5", "db-6"] and not expansion.ordered


@pytest.mark.parametrize(
    ("spec", "count"),
    [
        pytest.param({}, 1, id="defaults-to-one"),
        pytest.param({"parallelism": 4}, 4, id="parallelism"),
        pytest.param({"parallelism": 4, "completions": 2}, 2, id="capped-by-completions"),
        pytest.param({"parallelism": 4, "suspend": True}, 0, id="suspended"),
    ],
)
def test_a_job_makes_parallelism_pods(spec: dict[str, Any], count: int) -> None:
    job = workload(Job, name="reports", **spec)
    expansion = expand(job, NOW)
    assert len(expansion.pods) == count
    for pod in expansion.pods:
        labels = pod.metadata.labels or {}
        uid = labels[JOB_CONTROLLER_UID_LABEL]
        assert labels[JOB_NAME_LABEL] == "reports" and labels["job-name"] == "reports"
        assert labels["controller-uid"] == uid
        (ref,) = pod.metadata.owner_references or []
        assert (ref.kind, ref.name, ref.uid, ref.api_version) == ("Job", "reports", uid, "batch/v1")
        assert pod.name.startswith("reports-") and len(pod.name) == len("reports-") + 5


def test_an_indexed_job_names_and_labels_each_index() -> None:
    job = workload(Job, name="shard", parallelism=3, completions=3, completionMode="Indexed")
    pods = expand(job, NOW).pods
    for index, pod in enumerate(pods):
        assert pod.name.startswith(f"shard-{index}-")
        assert (pod.metadata.labels or {})[JOB_COMPLETION_INDEX] == str(index)
        assert (pod.metadata.annotations or {})[JOB_COMPLETION_INDEX] == str(index)


def test_a_given_uid_is_the_owner_uid() -> None:
    job = Job.model_validate(
        {
            "metadata": {"name": "j", "namespace": "b", "uid": "1234"},
            "spec": {"template": TEMPLATE},
        }
    )
    (pod,) = expand(job, NOW).pods
    assert (pod.metadata.owner_references or [])[0].uid == "1234"


def test_a_recreated_pod_gets_a_new_name_except_in_a_stateful_set() -> None:
    rs = expand(workload(ReplicaSet, name="cache", replicas=2), NOW)
    later = NOW + timedelta(seconds=30)
    again = rs.recreate(rs.pods[0], 0, later)
    assert again.name not in names(rs.pods) and again.name.startswith("cache-")
    assert again.metadata.creation_timestamp == later
    sts = expand(workload(StatefulSet, name="db", replicas=2), NOW)
    again = sts.recreate(sts.pods[1], 0, later)
    assert again.name == "db-1" and again.metadata.uid != sts.pods[1].metadata.uid


def test_other_kinds_are_not_workloads() -> None:
    with pytest.raises(ValueError, match="Pod: not a workload"):
        expand(Pod.model_validate({"metadata": {"name": "p"}}), NOW)


def test_safe_encode_uses_kubes_alphabet() -> None:
    # Each byte modulo 27: "0" is 48, 48 % 27 = 21, the 22nd character.
    assert safe_encode("0123456789") == "456789bcdf"
    assert set(safe_encode("4294967295")) <= ALPHABET
