"""The controller's CEL and `simulate`'s decide alike (issue 33): random clusters written as
agents and users write them (quantities as strings or JSON numbers, claims, annotations,
conditions, a version) and random CEL selectors over them, scheduled once from a snapshot
built from the objects (`simulate`) and once from a `FleetIndex` fed rows as the controller
feeds it (`placement run`)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apis.cluster import ManagedCluster
from placement.index.fleet_index import FleetIndex, cluster_row
from placement.snapshot.fleet_snapshot import FleetSnapshot
from placement.testing import NOW, binding, cluster_set, placement, predicate
from plugins import default_scheduler

FAST = settings(max_examples=60, deadline=None)

QUANTITIES = st.one_of(
    st.sampled_from(["500m", "1.5", "1500m", "2", "4", "1024Mi", "1Gi", "0.5Gi", "1e3", "+1"]),
    st.sampled_from([1, 2, 4, 16, 1.5, 0.25]),
)
WORDS = st.sampled_from(["a", "b", "prod", "dev", ""])


@st.composite
def clusters(draw: st.DrawFn) -> list[ManagedCluster]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        status: dict[str, Any] = {}
        if draw(st.booleans()):
            cpu, memory = draw(QUANTITIES), draw(QUANTITIES)
            status["allocatable"] = {"cpu": cpu, "memory": memory}
            status["capacity"] = {"cpu": cpu, "memory": memory}
        if draw(st.booleans()):
            status["clusterClaims"] = [
                {"name": name, "value": draw(WORDS)}
                for name in draw(st.lists(st.sampled_from(["id", "region"]), unique=True))
            ]
        if draw(st.booleans()):
            status["version"] = {"kubernetes": draw(st.sampled_from(["v1.30.1", "v1.29.0"]))}
        if draw(st.booleans()):
            status["conditions"] = [
                {
                    "type": "ManagedClusterConditionAvailable",
                    "status": draw(st.sampled_from(["True", "False"])),
                    "reason": "R",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        metadata: dict[str, Any] = {
            "name": f"c{i}",
            "labels": {
                k: draw(WORDS) for k in draw(st.lists(st.sampled_from(["env", "x"]), unique=True))
            },
        }
        if draw(st.booleans()):
            metadata["annotations"] = {"note": draw(WORDS)}
        out.append(ManagedCluster.model_validate({"metadata": metadata, "status": status}))
    return out


EXPRESSIONS = st.sampled_from(
    [
        'managedCluster.metadata.labels["env"] == "prod"',
        'managedCluster.metadata.?labels.?x.orValue("") == ""',
        "has(managedCluster.metadata.labels)",
        'quantity(managedCluster.status.allocatable.cpu).isGreaterThan(quantity("1"))',
        'quantity(managedCluster.status.allocatable.cpu).compareTo(quantity("1500m")) == 0',
        'managedCluster.status.allocatable.cpu == "1500m"',
        'managedCluster.status.allocatable.memory == "1Gi"',
        "quantity(managedCluster.status.allocatable.memory).isInteger()",
        'managedCluster.status.?allocatable.?cpu.orValue("0") == "4"',
        'managedCluster.status.clusterClaims.exists(c, c.name == "id" && !has(c.value))',
        'managedCluster.status.version.?kubernetes.orValue("") == "v1.30.1"',
        'managedCluster.status.conditions.exists(c, c.status == "True")',
        "managedCluster.status.conditions == null",
        'managedCluster.metadata.?annotations.?note.orValue("none") == "prod"',
        "managedCluster.spec.hubAcceptsClient == false",
    ]
)


def _index_snapshot(objects: list[ManagedCluster]) -> FleetSnapshot:
    index = FleetIndex()
    for c in objects:
        index.upsert_cluster(cluster_row(c))
    index.upsert_cluster_set(cluster_set("global", {}))
    index.upsert_binding(binding("apps", "global"))
    return index.snapshot()


@FAST
@given(clusters(), st.lists(EXPRESSIONS, min_size=1, max_size=2))
def test_the_controller_and_simulate_select_the_same_clusters(
    fleet: list[ManagedCluster], expressions: list[str]
) -> None:
    p = placement("apps", "p", predicates=[predicate(cel=expressions)])
    scheduler = default_scheduler()
    built = FleetSnapshot.build(fleet, [cluster_set("global", {})], [binding("apps", "global")])
    simulated = scheduler.schedule(p, built, NOW)
    run = scheduler.schedule(p, _index_snapshot(fleet), NOW)
    assert built.rows_to_names(simulated.selected) == _index_snapshot(fleet).rows_to_names(
        run.selected
    )
    assert simulated.status == run.status
