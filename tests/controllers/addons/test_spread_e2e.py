"""Topology spread end to end: an embedded API server in a separate process, the pod scheduler
through the real client. Pods created before the scheduler starts, bound with concurrent
binding cycles (assumed pods count toward their zone until the binding is seen), end up spread
within maxSkew; a pod with an invalid constraint is refused by the API server, in kube-apiserver's
words (the scheduler never sees it)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from apis.core import Pod
from controllers.kube.errors import InvalidError
from tests.controllers.addons.cluster import create_all, node, pod, server_process
from tests.controllers.addons.test_scheduler_e2e import pods, scheduler
from tests.controllers.embedded.hub import eventually

ZONE = "topology.kubernetes.io/zone"
SPREAD = {
    "maxSkew": 1,
    "topologyKey": ZONE,
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}


def web(name: str, **constraint: Any) -> Pod:
    made = pod(name, topologySpreadConstraints=[{**SPREAD, **constraint}])
    meta = made.metadata.model_copy(update={"labels": {"app": "web"}})
    return made.model_copy(update={"metadata": meta})


@pytest.mark.asyncio
async def test_pods_bound_by_the_scheduler_are_spread_over_zones() -> None:
    zones = {f"n{i}": "abc"[i % 3] for i in range(6)}
    async with server_process() as (url, gw):
        await create_all(gw, [node(name, labels={ZONE: z}) for name, z in zones.items()])
        await create_all(gw, [web(f"web-{i:02d}") for i in range(15)])
        with pytest.raises(InvalidError) as refused:
            await create_all(gw, [web("bad", maxSkew=0)])
        assert str(refused.value) == (
            'Pod "bad" is invalid: spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: '
            "must be greater than zero"
        )
        async with scheduler(url):

            async def settled() -> dict[str, Pod]:
                now = await pods(gw)
                bound = [p for p in now.values() if p.spec.node_name]
                return now if len(bound) == 15 else {}

            now = await eventually(settled, timeout=30)
            per_zone = Counter(zones[p.spec.node_name] for p in now.values() if p.spec.node_name)
            assert per_zone == {"a": 5, "b": 5, "c": 5}
