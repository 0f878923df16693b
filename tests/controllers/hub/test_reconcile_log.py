"""The reconciler's log line says what it wrote as text a person reads: names comma-separated,
never a Python list (issue 48, item 9)."""

from __future__ import annotations

import logging

import pytest

from controllers.hub.writer import WriteReport
from placement.testing import binding, cluster, cluster_set, placement
from tests.controllers.hub.controller_hub import hub
from tests.controllers.hub.test_controller import create


def test_a_write_report_reads_as_comma_separated_names() -> None:
    report = WriteReport(created=["p-decision-1", "p-decision-2"], deleted=["p-decision-3"])
    report.status_patched = True
    assert report.summary() == (
        "decisions created p-decision-1, p-decision-2; deleted p-decision-3; status patched"
    )
    assert WriteReport(status_patched=True).summary() == "status patched"


@pytest.mark.asyncio
async def test_the_scheduled_log_line_names_the_decisions_without_brackets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="controllers.hub.reconciler")
    async with hub() as h:
        await create(
            h,
            [
                cluster("c1", cluster_set="team"),
                cluster("c2", cluster_set="team"),
                cluster_set("team"),
                binding("ns", "team"),
                placement("ns", "web"),
            ],
        )
        manager = await h.manager()
        await manager.wait_idle()
        assert await h.decided("ns", "web") == ["c1", "c2"]
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("scheduled:")]
    assert lines == ["scheduled: 2 selected; decisions created web-decision-1; status patched"]
