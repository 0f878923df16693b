"""One engine, two shells: `scheduler simulate` and `scheduler run` place the same world alike.

The world is made on an embedded API server in its own process (nodes of several sizes, labels
and taints; pods of several priorities, shapes, selectors and tolerations; two gangs, one that
fits and one that cannot; pods that fit nowhere). The objects as the server stored them (with
their uids and creation times) are run through `scheduler simulate`'s path; then the real
scheduler runs against the server through the real client. Every pod ends on the same node, or
unbound in both, with the same PodScheduled reason.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from apis.core import Node, Pod
from apis.meta import KubeObject
from apis.registry import parse_as
from apis.scheduling import POD_GROUP_LABEL, PodGroup, PriorityClass
from controllers.addons.gateway import PodGateway
from controllers.addons.scheduler import PodScheduler, load_scheduler_config
from controllers.cli.scheduler import scheduler_profiles
from controllers.cli.scheduler_simulate import simulate_objects
from controllers.kube.config import ClusterAccess, new_api_client
from tests.controllers.addons.cluster import create_all, node, pod, server_process
from tests.controllers.embedded.hub import eventually

INSTANT = datetime(2026, 1, 1, tzinfo=UTC)
TAINT = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
TOLERATE = [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]


def priority_class(name: str, value: int) -> PriorityClass:
    return parse_as(
        PriorityClass,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        },
    )


def group(name: str, min_member: int) -> PodGroup:
    return parse_as(
        PodGroup,
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member},
        },
    )


def labelled(p: Pod, labels: dict[str, str]) -> Pod:
    return p.model_copy(update={"metadata": p.metadata.model_copy(update={"labels": labels})})


def world() -> tuple[list[KubeObject], list[Pod]]:
    nodes: list[KubeObject] = [
        *(node(f"small-{i}", cpu="2", memory="4Gi", labels={"zone": "a"}) for i in range(4)),
        *(node(f"big-{i}", cpu="8", memory="16Gi", labels={"zone": "b"}) for i in range(3)),
        node("batch-0", cpu="16", memory="32Gi", labels={"zone": "c"}, taints=TAINT),
    ]
    others: list[KubeObject] = [
        priority_class("high", 1000),
        priority_class("low", 10),
        priority_class("gang", 500),
        group("fits", 3),
        group("too-big", 2),
    ]
    pods: list[Pod] = []
    for i in range(30):
        shape = i % 5
        name = f"app-{i:02d}"
        if shape == 0:
            pods.append(pod(name, "250m", "256Mi", priorityClassName="high"))
        elif shape == 1:
            pods.append(pod(name, "500m", "512Mi", nodeSelector={"zone": "b"}))
        elif shape == 2:
            pods.append(pod(name, "1", "1Gi", tolerations=TOLERATE, priorityClassName="low"))
        elif shape == 3:
            pods.append(pod(name, "100m", "64Mi"))
        else:
            pods.append(pod(name, "700m", "128Mi", priorityClassName="high"))
    # Gangs of their own priority: the queue orders a gang by its group's creation time, which
    # `at_once` leaves alone, so they must not tie with plain pods.
    gang = {"priorityClassName": "gang"}
    pods += [
        labelled(pod(f"fits-{i}", "1", "1Gi", **gang), {POD_GROUP_LABEL: "fits"}) for i in range(3)
    ]
    pods += [
        labelled(pod(f"too-big-{i}", "12", "1Gi", **gang), {POD_GROUP_LABEL: "too-big"})
        for i in range(2)
    ]
    pods += [pod("huge", "64", "1Gi"), pod("nowhere", "100m", "64Mi", nodeSelector={"zone": "z"})]
    return nodes + others, pods


def at_once(p: Pod) -> Pod:
    """The pod as if created at one instant with every other: simulate orders pods of one
    priority by creation time, and the running scheduler's first sync puts every pod in its
    queue at one instant (then both order by name)."""
    meta = p.metadata.model_copy(update={"creation_timestamp": INSTANT})
    return p.model_copy(update={"metadata": meta})


def outcome(p: Pod) -> tuple[str, str]:
    """(node, PodScheduled reason) of a pod."""
    reason = ""
    for c in (p.status.conditions if p.status else None) or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            reason = str(c.get("reason", ""))
    return p.spec.node_name or "", reason


@pytest.mark.asyncio
async def test_simulate_and_run_put_every_pod_on_the_same_node() -> None:
    objects, pods = world()
    async with server_process("--kubelet") as (url, gw):
        await create_all(gw, objects)
        await create_all(gw, list(pods))
        stored: list[KubeObject] = [
            *(await gw.list(Node)).items,
            *(await gw.list(PriorityClass)).items,
            *(await gw.list(PodGroup, "default")).items,
            *(at_once(p) for p in (await gw.list(Pod, "default")).items),
        ]
        config = load_scheduler_config(None)
        profiles = scheduler_profiles(config)
        simulated = simulate_objects(stored, config, profiles, datetime.now(UTC))
        expected = {p.name: outcome(p) for p in simulated.pods}
        assert expected["fits-0"][0] and expected["huge"] == ("", "Unschedulable")
        assert expected["too-big-0"] == ("", "Unschedulable")
        assert len({node for node, _ in expected.values() if node}) >= 6  # spread, not piled

        gateway = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
        running = PodScheduler(gateway, load_scheduler_config(None), http_addr=None)
        try:
            await running.start(sync_timeout=20)

            async def settled() -> dict[str, tuple[str, str]]:
                now = {p.name: outcome(p) for p in (await gw.list(Pod, "default")).items}
                done = all(any(o) for o in now.values())
                return now if done and now == expected else {}

            try:
                await eventually(settled, timeout=30)
            except TimeoutError:
                got = {p.name: outcome(p) for p in (await gw.list(Pod, "default")).items}
                differ = {
                    k: (expected[k], got.get(k)) for k in expected if got.get(k) != expected[k]
                }
                pytest.fail(f"run and simulate differ (simulate, run): {differ}")
        finally:
            await running.stop()
            await gateway.close()
