"""Issue 48: the scheduler's configuration fields are bounded where the runtime needs them to
be, and a value beyond the bound is one `path: problem` line, never an OverflowError.

* Go durations (`leaderElection.*`, the `--leader-elect-*` flags) stop at Go's int64 of
  nanoseconds, as time.ParseDuration does: beyond, `invalid duration`.
* `leaderElection.leaseDuration` must fit the Lease's int32 `leaseDurationSeconds`.
* The backoff seconds of both kinds stop at a Go Duration (~292 years): a timedelta overflowed.
* NodeAffinity's `addedAffinity` is checked as a pod's node affinity is (kube refuses the file).
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

import pytest

from apis.configmodel import MAX_DURATION_SECONDS, go_duration_seconds
from apis.pluginargs import NodeAffinityArgs, validate_args
from apis.schedulerconfig import MAX_LEASE_DURATION_SECONDS, parse_configuration
from controllers.cli.lease_flags import LeaseTiming, _duration
from placement.pods.config.scheduler_config import ConfigError, load_config

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
OURS = {"apiVersion": "placement.ocm.io/v1alpha1", "kind": "PodSchedulerConfiguration"}


def problems(doc: dict[str, Any]) -> list[str]:
    """The lines of the file's refusal, as the scheduler reads it (args included)."""
    with pytest.raises(ConfigError) as raised:
        load_config({**HEAD, **doc})
    return str(raised.value).splitlines()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2562047h", 2562047 * 3600.0),  # Go's longest whole number of hours
        ("9223372036854775807ns", 9223372036.854775807),
        ("1.5h", 5400.0),
        (".5s", 0.5),
        ("-2s", -2.0),
    ],
)
def test_durations_up_to_gos_limit_are_read(text: str, seconds: float) -> None:
    assert math.isclose(go_duration_seconds(text), seconds)


@pytest.mark.parametrize(
    "text", ["2562048h", "99999999999999h", "9223372036854775808ns", "1e400h", "1" + "0" * 400]
)
def test_durations_beyond_gos_limit_are_invalid_as_in_go(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f'invalid duration "{text}"')):
        go_duration_seconds(text)


def test_a_lease_duration_beyond_go_is_one_invalid_duration_line() -> None:
    assert problems({"leaderElection": {"leaseDuration": "99999999999999h"}}) == [
        'leaderElection.leaseDuration: invalid duration "99999999999999h" (e.g. "15s", "1m30s")'
    ]


def test_a_lease_duration_beyond_the_leases_int32_is_refused() -> None:
    assert problems({"leaderElection": {"leaseDuration": "1000000h"}}) == [
        f"leaderElection.leaseDuration: must be at most {MAX_LEASE_DURATION_SECONDS}s, the "
        "Lease's leaseDurationSeconds is an int32 (got 3600000000s)"
    ]
    edge = f"{MAX_LEASE_DURATION_SECONDS}s"
    config = parse_configuration({**HEAD, "leaderElection": {"leaseDuration": edge}})
    assert config.leader_election.lease_duration == MAX_LEASE_DURATION_SECONDS


@pytest.mark.parametrize("field", ["podInitialBackoffSeconds", "podMaxBackoffSeconds"])
def test_backoff_seconds_beyond_a_go_duration_are_one_line(field: str) -> None:
    # 10**14 is a valid int64 for kube; a timedelta of it overflowed (a traceback at start-up).
    doc = {field: 10**14}
    if field == "podInitialBackoffSeconds":
        doc["podMaxBackoffSeconds"] = MAX_DURATION_SECONDS
    expected = [
        f"{field}: Invalid value: 100000000000000: must be at most {MAX_DURATION_SECONDS} "
        "seconds, a Go Duration"
    ]
    if field == "podInitialBackoffSeconds":  # and, as kube says too, the order of the two
        expected.append(
            f"podMaxBackoffSeconds: Invalid value: {MAX_DURATION_SECONDS}: must be greater "
            "than or equal to PodInitialBackoffSeconds"
        )
    assert problems(doc) == expected


def test_the_longest_backoff_loads_into_the_schedulers_settings() -> None:
    doc = {**HEAD, "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": MAX_DURATION_SECONDS}
    config = load_config(doc)
    assert config.backoff_max.total_seconds() == MAX_DURATION_SECONDS


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (10**14, f"must be at most {MAX_DURATION_SECONDS} (got 100000000000000)"),
        (float("inf"), f"must be at most {MAX_DURATION_SECONDS} (got inf)"),
        (float("nan"), "must be a positive number of seconds (got nan)"),
    ],
)
def test_our_kinds_backoff_is_bounded_too(value: float, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config({**OURS, "backoff": {"maxSeconds": value}})
    assert str(raised.value) == f"backoff.maxSeconds: {message}"


def test_added_affinity_in_without_values_is_refused_as_kube_refuses_it() -> None:
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]
        }
    }
    with pytest.raises(ValueError, match="Required value") as raised:
        validate_args(NodeAffinityArgs, {"addedAffinity": added}, "args")
    assert str(raised.value) == (
        "args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].values: Required value: must be specified when `operator` is "
        "'In' or 'NotIn'"
    )


@pytest.mark.parametrize(
    ("added", "line"),
    [
        (
            {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}},
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
            "Required value: must have at least one node selector term",
        ),
        (
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [
                                {"key": "zone", "operator": "Exists", "values": ["a"]}
                            ]
                        },
                    }
                ]
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
            ".matchExpressions[0].values: Forbidden: may not be specified when `operator` is "
            "'Exists' or 'DoesNotExist'",
        ),
    ],
)
def test_added_affinity_is_checked_as_a_pods_node_affinity(added: Any, line: str) -> None:
    where = "profiles[0].pluginConfig[0].args"
    doc = {"profiles": [{"pluginConfig": [{"name": "NodeAffinity", "args": {}}]}]}
    doc["profiles"][0]["pluginConfig"][0]["args"] = {"addedAffinity": added}
    assert problems(doc) == [f"{where}.{line}"]


def test_a_valid_added_affinity_still_loads() -> None:
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]
        }
    }
    args = validate_args(NodeAffinityArgs, {"addedAffinity": added})
    assert isinstance(args, NodeAffinityArgs) and args.added_affinity is not None


@pytest.mark.parametrize("text", ["nan", "inf", "1e400", "-inf", "99999999999999h"])
def test_a_lease_flag_beyond_a_duration_is_invalid(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f'invalid duration "{text}"')):
        _duration(text)


def test_a_lease_flag_beyond_the_leases_int32_names_the_flag() -> None:
    with pytest.raises(ValueError, match="int32") as raised:
        LeaseTiming(lease_duration=3_600_000_000.0).applied(15.0, 10.0, 2.0)
    assert str(raised.value) == (
        f"--leader-elect-lease-duration: must be at most {MAX_LEASE_DURATION_SECONDS}s, the "
        "Lease's leaseDurationSeconds is an int32 (got 3600000000s)"
    )


@pytest.mark.parametrize(
    ("plugin", "field"),
    [
        ("Coscheduling", "permitWaitingTimeSeconds"),
        ("Coscheduling", "podGroupBackoffSeconds"),
        ("VolumeBinding", "bindTimeoutSeconds"),
    ],
)
def test_args_seconds_are_bounded_to_a_go_duration(plugin: str, field: str) -> None:
    # 10**14 seconds was an OverflowError traceback when the plugin was built.
    doc = {"profiles": [{"pluginConfig": [{"name": plugin, "args": {field: 10**14}}]}]}
    assert problems(doc) == [
        f"profiles[0].pluginConfig[0].args.{field}: Invalid value: 100000000000000: must be "
        f"at most {MAX_DURATION_SECONDS} seconds, a Go Duration"
    ]
