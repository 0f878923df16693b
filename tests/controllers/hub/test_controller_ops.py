"""The controller in operation: leader election between two replicas, the HTTP endpoint of a
running controller, decisions moving between PlacementDecisions without a gap, `placement run`
as a process (SIGTERM), and `placement demo`."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from apis.cluster import ManagedClusterSet
from apis.meta import KubeObject
from apis.placements import PLACEMENT_LABEL, Placement, PlacementDecision
from controllers.cli.demo import run_demo
from controllers.hub.manager import CONTROLLER_NAME, Manager
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway
from controllers.runtime.leader import LeaderConfig
from controllers.runtime.queue import LoopClock
from placement.testing import binding, cluster, cluster_set, placement
from tests.controllers.embedded.hub import eventually
from tests.controllers.hub.controller_hub import Hub, hub
from tests.controllers.hub.test_controller import TWO_TEAMS, create

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[3]


# --- leader election ---------------------------------------------------------------------------


def lease(identity: str) -> LeaderConfig:
    return LeaderConfig(
        name=CONTROLLER_NAME,
        namespace="placement-system",
        identity=identity,
        lease_duration=0.6,
        renew_deadline=0.4,
        retry_period=0.05,
    )


async def replica(h: Hub, identity: str) -> Manager:
    """A replica on the real clock (lease timings are real seconds)."""
    h.clock = LoopClock()  # type: ignore[assignment]
    return await h.manager(leader=lease(identity))


async def test_of_two_replicas_only_the_leader_writes_and_the_other_takes_over_on_stop() -> None:
    async with hub(namespaces=["placement-system"]) as h:  # the lease's namespace
        await create(h, TWO_TEAMS)
        one = await replica(h, "one")
        two = await replica(h, "two")
        await eventually(lambda: one.leading or two.leading)
        leader, standby = (one, two) if one.leading else (two, one)
        await leader.wait_idle()
        assert await h.decided("ns-a", "all") == ["a1", "a2"]
        assert leader.reconciler.history
        assert not standby.reconciler.history  # a standby schedules and writes nothing
        assert standby.ready() == (True, "standby")
        assert leader.ready() == (True, "leader")

        await h.stop(leader)  # releases the lease
        await eventually(lambda: standby.leading, timeout=2.0)
        await h.relabel("a2", {"env": "prod"})
        await eventually(lambda: h.decided("ns-a", "prod"), timeout=5.0)

        async def both_prod() -> bool:
            return await h.decided("ns-a", "prod") == ["a1", "a2"]

        await eventually(both_prod)
        assert standby.reconciler.history


# --- the HTTP endpoint -------------------------------------------------------------------------


async def get(address: str, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(f"http://{address}{path}") as r:
        return r.status, await r.text()


async def test_a_running_controller_answers_health_readiness_metrics_and_debug() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager(http_addr="127.0.0.1:0", debug_addr="127.0.0.1:0")
        await manager.wait_idle()
        await manager.recorder.flush()
        address = manager.http_address
        assert await get(address, "/healthz") == (200, "ok")
        status, text = await get(address, "/readyz")
        assert (status, text) == (200, "ok (leader)")

        status, text = await get(address, "/metrics")
        assert status == 200
        for line in (
            'scheduling_scheduling_duration_seconds_count{name="placement_scheduling"}',
            'scheduling_bind_duration_seconds_count{name="placement_scheduling"}',
            'scheduling_plugin_duration_seconds_count{name="placement_scheduling",'
            'plugin_name="Balance",plugin_type="prioritizer"}',
            "placement_queue_depth 0.0",
            'placement_reconciles_total{result="success"}',
            'placement_events_total{outcome="created",reason="DecisionCreate"}',
            'placement_writes_total{kind="PlacementDecision",verb="create"}',
        ):
            assert line in text, line
        count = next(
            line
            for line in text.splitlines()
            if line.startswith('scheduling_scheduling_duration_seconds_count{name="placement')
        )
        assert float(count.split()[-1]) >= 3  # one per placement at least
        # The debug API listens apart (on loopback), never where the metrics are scraped.
        assert (await get(address, "/debug/placements/ns-a/prod"))[0] == 404
        address = manager.debug_address

        status, text = await get(address, "/debug/placements/ns-a/prod")
        assert status == 200
        doc = json.loads(text)
        assert doc["placement"]["metadata"] == {"name": "prod", "namespace": "ns-a"}
        assert doc["filteredPipelineResults"][-1] == {
            "name": "Predicate,TaintToleration",
            "filteredClusters": ["a1"],
        }
        assert [s["clusterName"] for s in doc["aggregatedScores"]] == ["a1"]
        assert doc["error"] == ""
        status, _ = await get(address, "/debug/placements/ns-a/missing")
        assert status == 404
        async with aiohttp.ClientSession() as session:
            body = placement("ns-b", "what-if").to_wire()
            async with session.post(f"http://{address}/debug/placements/", json=body) as r:
                assert r.status == 200
                dry = await r.json()
        assert sorted(s["clusterName"] for s in dry["aggregatedScores"]) == ["b1", "b2"]
        assert not await h.decided("ns-b", "what-if")  # a dry run writes nothing
        bad = placement("ns-b", "bad").to_wire()
        bad["spec"]["numberOfClusters"] = -1
        url = f"http://{address}/debug/placements/"
        async with aiohttp.ClientSession() as session, session.post(url, json=bad) as r:
            assert r.status == 400
            assert "spec.numberOfClusters" in (await r.json())["error"]


# --- no transient disappearance through the controller ------------------------------------------


async def test_moving_150_clusters_across_decisions_never_drops_a_still_selected_one() -> None:
    old = [f"c{i:03d}" for i in range(100, 350)]  # 250 selected: 3 PDs
    new = [f"a{i:03d}" for i in range(150)]  # sort first: every page shifts
    objects: list[KubeObject] = [
        *(cluster(n, labels={"team": "x"}) for n in old),
        *(cluster(n, labels={"team": "y"}) for n in new),
        cluster_set("team", {"matchLabels": {"team": "x"}}),
        binding("apps", "team"),
        placement("apps", "wide"),
    ]
    async with hub() as h:
        await create(h, objects)
        manager = await h.manager()
        await manager.wait_idle()
        assert await h.decided("apps", "wide") == old
        start = await h.gateway.list(PlacementDecision, "apps")
        state = {pd.name: _clusters(pd) for pd in start.items}
        gaps: list[str] = []
        largest = 0
        writes = 0

        async def watch() -> None:
            nonlocal largest, writes
            async for event in h.gateway.watch(
                PlacementDecision, start.resource_version, "apps", bookmarks=False
            ):
                pd = event.object
                assert pd is not None
                writes += 1
                if event.type == "DELETED":
                    state.pop(pd.name, None)
                else:
                    state[pd.name] = _clusters(pd)
                largest = max(largest, *(len(c) for c in state.values()))
                present = set().union(*state.values())
                gaps.extend(c for c in old if c not in present)

        watcher = asyncio.create_task(watch())
        await h.gateway.merge_patch(
            ManagedClusterSet,
            "team",
            {
                "spec": {
                    "clusterSelector": {
                        "selectorType": "LabelSelector",
                        "labelSelector": {
                            "matchLabels": None,  # a merge patch: drop the old rule
                            "matchExpressions": [
                                {"key": "team", "operator": "In", "values": ["x", "y"]}
                            ],
                        },
                    }
                }
            },
        )

        async def all_400() -> bool:
            return await h.decided("apps", "wide") == sorted(new + old)

        await eventually(all_400)
        await manager.wait_idle()
        await asyncio.sleep(0.1)  # let the watch deliver the last events
        watcher.cancel()
        assert writes >= 4
        assert gaps == []
        assert largest <= 100
        pds = await h.gateway.list(PlacementDecision, "apps")
        assert sorted(pd.name for pd in pds.items) == [f"wide-decision-{k}" for k in (1, 2, 3, 4)]


def _clusters(pd: PlacementDecision) -> set[str]:
    return {d.cluster_name for d in pd.status.decisions} if pd.status else set()


# --- placement run as a process, placement demo ---------------------------------------------------


async def spawn_run(*args: str) -> asyncio.subprocess.Process:
    """`placement run ARGS` on an embedded hub (no kubeconfig in sight), ports picked free."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controllers.cli.main",
        "run",
        *args,
        "--http-addr",
        "127.0.0.1:0",
        "--debug-addr",
        "127.0.0.1:0",
        "--log-format",
        "json",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )


async def started_lines(process: asyncio.subprocess.Process) -> dict[str, str]:
    """The lines `placement run` prints on stdout until it says the controller runs, by their
    first word (`embedded`, `export`, `controller`)."""
    lines: dict[str, str] = {}
    assert process.stdout is not None
    async with asyncio.timeout(30):
        while "controller" not in lines:
            line = (await process.stdout.readline()).decode()
            assert line, "placement run exited early"
            lines[line.split()[0]] = line.strip()
    return lines


async def test_placement_run_starts_an_embedded_hub_schedules_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    process = await spawn_run("--load", str(ROOT / "config" / "samples" / "hub"))
    try:
        lines = await started_lines(process)
        kubeconfig = lines["export"].split("=", 1)[1]
        address = lines["controller"].rsplit(" ", 1)[1]
        async with await Gateway.connect(ClusterAccess(kubeconfig=Path(kubeconfig))) as gateway:

            async def decided() -> bool:
                pds = await gateway.list(
                    PlacementDecision, "platform", label_selector=f"{PLACEMENT_LABEL}=select-all"
                )
                return bool(pds.items and pds.items[0].status and pds.items[0].status.decisions)

            await eventually(decided, timeout=20)
            placements = (await gateway.list(Placement)).items
            assert any(p.status and p.status.conditions for p in placements)
        assert (await get(address, "/readyz"))[0] == 200
        process.send_signal(signal.SIGTERM)
        # communicate() keeps reading the logs, so a full pipe cannot block the shutdown.
        _, stderr = await asyncio.wait_for(process.communicate(), 15)
        assert process.returncode == 0
        logs = [json.loads(x) for x in stderr.decode().splitlines() if x.startswith("{")]
        assert any(entry["msg"] == "stopped" for entry in logs)
        assert any(entry.get("placement") for entry in logs)  # reconcile lines carry the key
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_placement_run_elects_itself_leader_on_an_embedded_hub() -> None:
    # The embedded hub has no open-cluster-management-hub namespace of its own: the Lease
    # needs one, as on a real hub where config/default creates it.
    process = await spawn_run("--leader-elect")
    try:
        address = (await started_lines(process))["controller"].rsplit(" ", 1)[1]

        async def leading() -> bool:
            return await get(address, "/readyz") == (200, "ok (leader)")

        await eventually(leading, timeout=20)
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 15)
        assert process.returncode == 0, stderr.decode()[-2000:]
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_placement_demo_schedules_every_sample_and_shows_a_live_change() -> None:
    out = io.StringIO()
    assert await run_demo(out) == 0
    text = out.getvalue()
    assert "200 clusters" in text
    for key in ("apps/web-label-predicate", "platform/select-all", "spread-demo/spread-even-zones"):
        assert key in text
    assert "live change: taint" in text
    assert "left every decision" in text
    changes = [line for line in text.splitlines() if line.startswith("  ") and ": -" in line]
    assert changes  # at least one placement dropped the tainted cluster
