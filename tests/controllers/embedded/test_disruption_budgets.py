"""policy/v1 PodDisruptionBudget on the embedded server, through the real kubectl: served with
kube-apiserver's columns and refusals (checked against kube-apiserver v1.36.2), and a status
subresource the disruption controller writes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.controllers.embedded.hub import hub, kubectl

pytestmark = pytest.mark.asyncio


def _budget(name: str, spec: Mapping[str, object]) -> str:
    doc = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }
    return json.dumps(doc)


async def test_budgets_are_served_with_kubectl_columns_refusals_and_status(tmp_path: Path) -> None:
    async with hub() as (server, _):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        for name, spec in (
            ("web", {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
            ("db", {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "db"}}}),
        ):
            code, _, err = await kubectl(config, "create", "-f", "-", stdin=_budget(name, spec))
            assert code == 0, err
        status = {"status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2}}
        code, _, err = await kubectl(
            config, "patch", "pdb", "web", "--subresource=status", "--type=merge",
            "-p", json.dumps(status),
        )  # fmt: skip
        assert code == 0, err
        code, out, err = await kubectl(config, "get", "poddisruptionbudgets")
        assert code == 0, err
        rows = [line.split() for line in out.strip().splitlines()]
        header = "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE"
        assert rows[0] == header.split()
        assert [r[:4] for r in rows[1:]] == [["db", "N/A", "25%", "0"], ["web", "2", "N/A", "1"]]

        # a plain update does not write the status (a subresource)
        code, out, err = await kubectl(config, "get", "pdb", "web", "-o", "json")
        assert json.loads(out)["status"]["disruptionsAllowed"] == 1

        both = {"minAvailable": 1, "maxUnavailable": "50%", "selector": {"matchLabels": {"a": "b"}}}
        code, _, err = await kubectl(config, "create", "-f", "-", stdin=_budget("bad", both))
        assert code == 1
        assert err.strip() == (
            'The PodDisruptionBudget "bad" is invalid: spec: Invalid value: {"MinAvailable":1,'
            '"Selector":{"matchLabels":{"a":"b"}},"MaxUnavailable":"50%",'
            '"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set'
        )
        over = {"maxUnavailable": "150%", "minAvailable": None}
        code, _, err = await kubectl(config, "create", "-f", "-", stdin=_budget("bad", over))
        assert code == 1
        assert err.strip() == (
            'The PodDisruptionBudget "bad" is invalid: spec.maxUnavailable: Invalid value: '
            '"150%": must not be greater than 100%'
        )
