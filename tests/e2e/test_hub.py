"""The hub controller on a real control plane, as an operator runs it: the samples installed with
the two commands of config/samples/hub/README.md, `placement run --kubeconfig ...` as a
subprocess, and everything asserted through the API: each Placement's conditions and
PlacementDecisions equal what `placement simulate -f config/samples/hub -o json` computes
offline, the spread samples select what the README's table says, Events are written, and a
placement over more than 100 clusters gets its decisions in pages of 100.

The controller runs as the `placement-controller` ServiceAccount with the shipped RBAC
(`config/rbac`), so every request it makes is checked by the real RBAC authorizer, and with its
default 16 workers: the Balance prioritizer counts the decisions of the placements scheduled
before, the moment they are scheduled, so the placements are decided in key order, as
`placement simulate` does, however the 16 reconciles overlap.

The control plane is shared: the samples may already be there (apply is idempotent, and they
stay at the end), and so may PlacementDecisions written by another test's controller; those,
and objects of other tests that the samples' `global` set takes in, are given to the oracle as
the hub's current state (`placement simulate -f config/samples/hub -f <the rest of the hub>`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.core import Event
from apis.meta import KubeObject
from apis.placements import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    PLACEMENT_LABEL,
    Placement,
    PlacementDecision,
)
from controllers.kube.gateway import Gateway
from placement.simulate import simulate as offline
from placement.testing import placement
from plugins import default_scheduler
from tests.controllers.embedded.hub import eventually
from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.hub_helpers import (
    PLACEMENT,
    PlacementRun,
    as_user,
    connect,
    create_all,
    decided,
    delete_all,
    private_fleet,
    readable,
    service_account_token,
    tolerate_private,
)

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "config" / "samples" / "hub"
KINDS: tuple[type[KubeObject], ...] = (
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    AddOnPlacementScore,
    Placement,
    PlacementDecision,
)
SETTLE = 20.0  # seconds for the controller to schedule every placement of the hub


def sample_docs() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(SAMPLES.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict)
    ]


def ident(doc: dict[str, Any]) -> tuple[str, str, str]:
    meta = doc["metadata"]
    return doc["kind"], meta.get("namespace") or "", meta["name"]


@dataclass
class Installed:
    """The samples on the hub, the oracle's answer, and the controller scheduling them."""

    run: PlacementRun
    expected: dict[tuple[str, str, str], dict[str, Any]]
    sample_placements: list[tuple[str, str]]


def install_samples(plane: ControlPlane) -> None:
    """The README's two commands, verbatim. Another test may have written a sample's status
    field under another field manager (`kubectl patch --subresource=status`, as the README
    also shows): server-side apply then reports a conflict, and the samples' values win."""
    plane.kubectl("apply", "-f", str(SAMPLES))
    status = ["apply", "--server-side", "--subresource=status", "-f", str(SAMPLES)]
    done = plane.kubectl(*status, check=False)
    if done.returncode != 0:
        assert "conflict" in done.stderr.lower(), done.stderr
        plane.kubectl(*status, "--force-conflicts")


async def rest_of_the_hub(gateway: Gateway, samples: set[tuple[str, str, str]]) -> list[Any]:
    """What the hub holds besides the samples' files that scheduling reads: other tests'
    objects, and every PlacementDecision (the current state)."""
    out: list[Any] = []
    for kind in KINDS:
        for obj in await readable(gateway, kind):
            wire = obj.to_wire()
            wire["metadata"].pop("managedFields", None)
            if kind is PlacementDecision or ident(wire) not in samples:
                out.append(wire)
    return out


def simulate(*paths: Path) -> list[dict[str, Any]]:
    argv = [PLACEMENT, "simulate", "-o", "json", "--validate=ignore"]
    for path in paths:
        argv += ["-f", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
    return items


def view(doc: dict[str, Any]) -> dict[str, Any]:
    """What a Placement or PlacementDecision says, as the oracle computes it (no server
    fields, no transition times)."""
    if doc["kind"] == "Placement":
        status = dict(doc.get("status") or {})
        status["conditions"] = sorted(
            (c["type"], c["status"], c["reason"], c["message"])
            for c in status.get("conditions") or []
        )
        return status
    meta = doc["metadata"]
    owners = [
        (o["kind"], o["name"], o.get("controller"), o.get("blockOwnerDeletion"))
        for o in meta.get("ownerReferences") or []
    ]
    return {
        "labels": meta.get("labels"),
        "owners": owners,
        "decisions": (doc.get("status") or {}).get("decisions"),
    }


async def live_views(
    gateway: Gateway, keys: set[tuple[str, str, str]]
) -> dict[tuple[str, str, str], dict[str, Any]]:
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for kind in (Placement, PlacementDecision):
        for obj in await readable(gateway, kind):
            wire = obj.to_wire()
            if ident(wire) in keys:
                out[ident(wire)] = view(wire)
    return out


@pytest.fixture(scope="module")
def installed(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Installed]:
    folder = tmp_path_factory.mktemp("hub")
    docs = sample_docs()
    install_samples(control_plane)
    # As a Deployment of it runs: the ServiceAccount of config/rbac, on the real authorizer.
    kubeconfig = as_user(control_plane, service_account_token(control_plane), folder / "sa")

    async def start() -> tuple[PlacementRun, list[dict[str, Any]]]:
        async with await connect(control_plane) as gateway:
            rest = await rest_of_the_hub(gateway, {ident(d) for d in docs})
        paths = [SAMPLES]
        if rest:
            (folder / "rest.yaml").write_text(yaml.safe_dump_all(rest))
            paths.append(folder / "rest.yaml")
        # The oracle computes while the controller starts (two processes, two cores).
        oracle = asyncio.create_task(asyncio.to_thread(simulate, *paths))
        try:
            run = await PlacementRun.start(kubeconfig, folder)
        finally:
            items = await oracle
        return run, items

    run, items = asyncio.run(start())
    try:
        sample_placements = [
            (d["metadata"]["namespace"], d["metadata"]["name"])
            for d in docs
            if d["kind"] == "Placement"
        ]
        yield Installed(run, {ident(d): view(d) for d in items}, sample_placements)
    finally:
        code = asyncio.run(run.stop())
        assert code == 0, run.stderr()


async def test_samples_are_scheduled_as_placement_simulate_computes(
    control_plane: ControlPlane, installed: Installed
) -> None:
    expected = installed.expected
    placements = {k for k in expected if k[0] == "Placement"}
    assert {(ns, name) for _, ns, name in placements} >= set(installed.sample_placements)
    assert len(installed.sample_placements) == 22
    async with await connect(control_plane) as gateway:
        live: dict[tuple[str, str, str], dict[str, Any]] = {}

        async def settled() -> bool:
            nonlocal live
            live = await live_views(gateway, set(expected))
            return live == expected

        with contextlib.suppress(TimeoutError):
            await eventually(settled, timeout=SETTLE)
        differ = {
            k: {"live": live.get(k), "simulate": v} for k, v in expected.items() if live.get(k) != v
        }
        assert differ == {}, installed.run.stderr()[-3000:]
        # Conditions of every kind the samples show, each with OCM's reason and message.
        satisfied = {
            c[2]
            for k in placements
            for c in expected[k]["conditions"]
            if c[0] == "PlacementSatisfied"
        }
        assert satisfied >= {
            "AllDecisionsScheduled",
            "NotAllDecisionsScheduled",
            "NoManagedClusterMatched",
        }
        assert ("apps", "rollout-groups-fixed") in installed.sample_placements
        groups = expected[("Placement", "apps", "rollout-groups-fixed")]["decisionGroups"]
        assert len(groups) > 1


def readme_spread_table() -> dict[str, tuple[list[str], str]]:
    """config/samples/hub/README.md's spread table: placement -> (clusters in pick order, the
    PlacementSatisfied column)."""
    text = (SAMPLES / "README.md").read_text()
    names = {d["metadata"]["name"] for d in sample_docs() if d["kind"] == "ManagedCluster"}
    rows: dict[str, tuple[list[str], str]] = {}
    for line in text.split("## Spread samples", 1)[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`spread-"):
            picked = [t for t in re.findall(r"[a-z0-9-]+", cells[2]) if t in names]
            rows[cells[0].strip("`")] = (picked, cells[3])
    return rows


async def test_spread_samples_select_what_the_readme_table_says(
    control_plane: ControlPlane, installed: Installed
) -> None:
    table = readme_spread_table()
    assert len(table) == 6
    async with await connect(control_plane) as gateway:
        for name, (picked, satisfied) in table.items():

            async def chosen(name: str = name, picked: list[str] = picked) -> bool:
                pages = await decided(gateway, "spread-demo", name)
                return sorted(c for cs in pages.values() for c in cs) == sorted(picked)

            await eventually(chosen, timeout=SETTLE)
            got = await gateway.get(Placement, name, "spread-demo")
            assert got.status is not None and got.status.conditions is not None
            condition = next(c for c in got.status.conditions if c.type == "PlacementSatisfied")
            if satisfied == "True":
                assert condition.status == "True", name
            else:
                status, reason, message = (s.strip(' `"') for s in satisfied.split(",", 2))
                assert (condition.status, condition.reason, condition.message) == (
                    status,
                    reason,
                    message,
                ), name
            assert got.status.number_of_selected_clusters == len(picked), name


async def events_of(gateway: Gateway, namespace: str, placement_name: str) -> list[Event]:
    return [
        e
        for e in await readable(gateway, Event, namespace)
        if e.regarding is not None
        and e.regarding.kind == "Placement"
        and e.regarding.name == placement_name
    ]


async def test_every_scheduled_sample_has_decision_and_score_events(
    control_plane: ControlPlane, installed: Installed
) -> None:
    async with await connect(control_plane) as gateway:
        for namespace, name in installed.sample_placements:
            pages = installed.expected.get(("Placement", namespace, name), {})
            groups = pages.get("decisionGroups") or []
            pd_names = {pd for g in groups for pd in g.get("decisions") or []}

            # An empty PlacementDecision is created, never updated: no DecisionUpdate, no
            # ScoreUpdate (as OCM).
            selected = bool(pages.get("numberOfSelectedClusters"))

            async def complete(
                ns: str = namespace, n: str = name, want: set[str] = pd_names, some: bool = selected
            ) -> bool:
                events = await events_of(gateway, ns, n)
                by_reason: dict[str, set[str]] = {}
                for e in events:
                    by_reason.setdefault(e.reason or "", set()).add(
                        (e.related.name or "") if e.related else ""
                    )
                if by_reason.get("DecisionCreate", set()) < want:
                    return False
                updated = by_reason.get("DecisionUpdate", set()) | by_reason.get(
                    "ScoreUpdate", set()
                )
                return bool(updated) == some

            await eventually(complete, timeout=SETTLE)
            for event in await events_of(gateway, namespace, name):
                assert event.reporting_controller == "placement-controller"
                assert event.action and event.type in ("Normal", "Warning")


async def test_a_placement_over_100_clusters_gets_pages_of_100(
    control_plane: ControlPlane, installed: Installed, tmp_path: Path
) -> None:
    """150 clusters of the test's own (see hub_helpers: no sample placement selects them),
    one placement selecting them all and one misconfigured; then 60 clusters leave."""
    namespace = unique_name("e2e-pages")
    fleet = private_fleet(unique_name("pages"), namespace, [{} for _ in range(150)])
    wide = placement(namespace, "wide", clusterSets=[fleet.name], tolerations=tolerate_private())
    unknown = {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "NoSuchPrioritizer"}}
    broken = placement(
        namespace,
        "broken",
        tolerations=tolerate_private(),
        prioritizerPolicy={"mode": "Additive", "configurations": [unknown]},
    )
    mine = [*fleet.objects, wide, broken]
    names = sorted(c.name for c in fleet.clusters)
    # The same oracle in process (what `placement simulate` runs), for the test's own objects.
    simulated = offline(mine, default_scheduler(), datetime.now(UTC))
    expected = {
        ident(o.to_wire()): view(o.to_wire())
        for item in simulated
        for o in (item.placement, *item.decisions)
    }
    async with await connect(control_plane) as gateway:
        try:
            await create_all(gateway, mine, width=24)
            placed = await gateway.get(Placement, "wide", namespace)
            assert len(expected) == 4  # two placements, wide's two pages, broken's empty one

            async def settled() -> bool:
                return await live_views(gateway, set(expected)) == expected

            with contextlib.suppress(TimeoutError):
                await eventually(settled, timeout=SETTLE)
            assert await live_views(gateway, set(expected)) == expected
            pages = await decided(gateway, namespace, "wide")
            assert pages == {"wide-decision-1": names[:100], "wide-decision-2": names[100:]}
            listed = await readable(
                gateway, PlacementDecision, namespace, label_selector=f"{PLACEMENT_LABEL}=wide"
            )
            for pd in listed:
                assert pd.metadata.labels == {
                    PLACEMENT_LABEL: "wide",
                    DECISION_GROUP_NAME_LABEL: "",
                    DECISION_GROUP_INDEX_LABEL: "0",
                }
                owners = pd.metadata.owner_references or []
                assert [(o.kind, o.name, o.uid, o.controller) for o in owners] == [
                    ("Placement", "wide", placed.metadata.uid, True)
                ]
            status = (await gateway.get(Placement, "wide", namespace)).to_wire()["status"]
            assert status["numberOfSelectedClusters"] == 150
            assert status["decisionGroups"] == [
                {
                    "decisionGroupIndex": 0,
                    "decisionGroupName": "",
                    "decisions": ["wide-decision-1", "wide-decision-2"],
                    "clusterCount": 150,
                }
            ]
            misconfigured = expected[("Placement", namespace, "broken")]["conditions"]
            assert ("PlacementMisconfigured", "True") in {c[:2] for c in misconfigured}
            # 60 clusters leave: one page is enough, the second is deleted.
            await delete_all(gateway, fleet.clusters[90:], width=24)

            # (The controller may see the deletions in several batches: 126, 99, 90 clusters.)
            async def shrunk() -> bool:
                return await decided(gateway, namespace, "wide") == {"wide-decision-1": names[:90]}

            with contextlib.suppress(TimeoutError):
                await eventually(shrunk, timeout=SETTLE)
            assert await decided(gateway, namespace, "wide") == {"wide-decision-1": names[:90]}

            async def reasons(name: str) -> set[tuple[str, str, str | None]]:
                events = await events_of(gateway, namespace, name)
                return {
                    (e.type or "", e.reason or "", e.related.name if e.related else None)
                    for e in events
                }

            wanted = {
                ("Normal", "DecisionCreate", "wide-decision-1"),
                ("Normal", "DecisionCreate", "wide-decision-2"),
                ("Normal", "ScoreUpdate", "wide-decision-1"),
                ("Normal", "DecisionDelete", "wide-decision-2"),
            }
            await eventually(lambda: _superset(reasons("wide"), wanted), timeout=SETTLE)
            warned = {("Warning", "PlacementMisconfigured", None)}
            await eventually(lambda: _superset(reasons("broken"), warned), timeout=SETTLE)
        finally:
            await delete_all(gateway, [wide, broken, *fleet.cluster_scoped], width=24)
    # The controller met no error on the way: every reconcile and every event went through.
    run = installed.run
    assert await run.metric("placement_reconcile_errors_total") == 0
    assert await run.metric("placement_events_total", outcome="failed") == 0
    assert await run.metric("placement_events_total", outcome="dropped") == 0
    assert await run.metric("placement_events_total", reason="DecisionDelete") >= 1
    logged = run.stderr()
    assert " ERROR " not in logged and "Traceback" not in logged, logged[-3000:]


async def _superset(found: Awaitable[set[Any]], wanted: set[Any]) -> bool:
    return await found >= wanted
