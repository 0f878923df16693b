"""Every problem of a KubeSchedulerConfiguration's profiles is one line naming the field as the
user wrote it: unknown plugins (with the closest name), plugins at a point they do not
implement, duplicates, the queue sort rule, the Lease timings."""

from __future__ import annotations

import pytest

from placement.pods.config.scheduler_config import ConfigError
from tests.placement.pods.test_profiles import HEAD, profile_with, profiles


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param(
            profile_with(
                "    filter:\n      enabled: [{name: X}, {name: Y}, {name: NodeResourceFit}]\n"
            ),
            'profiles[0].plugins.filter.enabled[2].name: unknown plugin "NodeResourceFit" '
            '(did you mean "NodeResourcesFit"?)',
            id="unknown-plugin",
        ),
        pytest.param(
            profile_with("    score:\n      enabled: [{name: NodeName}]\n"),
            'profiles[0].plugins.score.enabled[0].name: "NodeName" does not implement Score',
            id="not-a-score",
        ),
        pytest.param(
            profile_with("    permit:\n      enabled: [{name: NodeResourcesFit}]\n"),
            'profiles[0].plugins.permit.enabled[0].name: "NodeResourcesFit" does not '
            "implement Permit",
            id="not-a-permit",
        ),
        pytest.param(
            profile_with("    filter:\n      enabled: [{name: DefaultBinder}]\n"),
            'profiles[0].plugins.filter.enabled[0].name: plugin "DefaultBinder" is a '
            "kube-scheduler plugin this scheduler does not implement",
            id="kube-plugin-missing",
        ),
        pytest.param(
            profile_with("    filter:\n      enabled: [{name: '*'}]\n"),
            'profiles[0].plugins.filter.enabled[0].name: "*" is only meaningful in disabled',
            id="star-enabled",
        ),
        pytest.param(
            profile_with(
                "    filter:\n      enabled: [{name: NodeResourcesFit}, {name: NodeResourcesFit}]\n"
            ),
            'profiles[0].plugins.filter.enabled[1].name: plugin "NodeResourcesFit" is listed '
            "twice at filter",
            id="twice",
        ),
        pytest.param(
            profile_with("    queueSort:\n      disabled: [{name: '*'}]\n"),
            "profiles[0].plugins.queueSort: exactly one QueueSort plugin must be enabled "
            "(got none)",
            id="no-queue-sort",
        ),
        pytest.param(
            HEAD + "profiles:\n- schedulerName: a\n- schedulerName: a\n",
            'profiles[1].schedulerName: Duplicate value: "a" (profiles[0] has it)',
            id="duplicate-profile",
        ),
        pytest.param(
            HEAD
            + "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: Coscheduling\n"
            + "  - name: Coscheduling\n",
            'profiles[0].pluginConfig[1]: Duplicate value: "Coscheduling"',
            id="duplicate-args",
        ),
        pytest.param(
            HEAD + "profiles:\n- pluginConfig:\n  - name: Gang\n    args: {}\n",
            'profiles[0].pluginConfig[0].name: unknown plugin "Gang"',
            id="args-unknown-plugin",
        ),
        pytest.param(
            HEAD
            + "profiles:\n- pluginConfig:\n  - name: CapacityScheduling\n"
            + "  - name: Coscheduling\n    args: {podGroupBackoffSeconds: -5}\n",
            "profiles[0].pluginConfig[1].args.podGroupBackoffSeconds: Invalid value: -5: must "
            "be non-negative",
            id="args-bound",
        ),
        pytest.param(
            HEAD
            + "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    multiPoint:\n"
            + "      disabled: [{name: Coscheduling}]\n",
            'profiles[1].plugins.queueSort: must be the same for all profiles ("PrioritySort" '
            'here, "Coscheduling" in profiles[0])',
            id="queue-sort-differs",
        ),
        pytest.param(
            HEAD + "leaderElection: {leaseDuration: 10s}\n",
            'leaderElection.leaseDuration: Invalid value: "10s": must be greater than '
            'renewDeadline ("10s")',
            id="lease-order",
        ),
    ],
)
def test_problems_name_the_field_as_written(text: str, line: str) -> None:
    with pytest.raises(ConfigError) as raised:
        profiles(text)
    assert line in str(raised.value).splitlines(), str(raised.value)
