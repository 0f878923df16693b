"""kube-scheduler's configuration file and the plugin args as models: kube's defaults, its
checks, and every problem worded with the field path as the user wrote it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from apis.configmodel import go_duration_seconds
from apis.pluginargs import (
    CoschedulingArgs,
    DefaultPreemptionArgs,
    NoArgs,
    NodeAffinityArgs,
    NodeResourcesFitArgs,
    validate_args,
)
from apis.schedulerconfig import parse_configuration

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def test_an_empty_file_has_kube_schedulers_defaults() -> None:
    config = parse_configuration(HEAD)
    assert config.profiles == []
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    assert config.percentage_of_nodes_to_score is None
    assert config.leader_election.leader_elect is None


def test_args_defaults_are_the_anchors() -> None:
    cosched = validate_args(CoschedulingArgs, None)
    assert isinstance(cosched, CoschedulingArgs)
    assert (
        cosched.permit_waiting_time_seconds,
        cosched.pod_group_backoff_seconds,
        cosched.pod_group_reject_percentage,
    ) == (60, 0, 10)
    fit = validate_args(NodeResourcesFitArgs, {})
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in fit.scoring_strategy.resources] == [
        ("cpu", 1),
        ("memory", 1),
    ]
    preemption = validate_args(DefaultPreemptionArgs, None)
    assert isinstance(preemption, DefaultPreemptionArgs)
    assert (
        preemption.min_candidate_nodes_percentage,
        preemption.min_candidate_nodes_absolute,
    ) == (10, 100)


def test_type_meta_inside_args_is_accepted_when_it_names_the_args() -> None:
    args = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "CoschedulingArgs"}
    typed = validate_args(CoschedulingArgs, {**args, "podGroupBackoffSeconds": 5})
    assert isinstance(typed, CoschedulingArgs) and typed.pod_group_backoff_seconds == 5


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("15s", 15.0, id="seconds"),
        pytest.param("1m30s", 90.0, id="minutes"),
        pytest.param("500ms", 0.5, id="millis"),
        pytest.param("1.5h", 5400.0, id="fraction"),
        pytest.param("0", 0.0, id="zero"),
    ],
)
def test_durations_read_as_go_reads_them(text: str, seconds: float) -> None:
    assert go_duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["15", "s", "1x", "", "1m 30s"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        go_duration_seconds(text)


ARGS = "profiles[0].pluginConfig[1].args"


@pytest.mark.parametrize(
    ("model", "args", "line"),
    [
        pytest.param(
            CoschedulingArgs,
            {"podGroupBackoffSeconds": -5},
            f"{ARGS}.podGroupBackoffSeconds: Invalid value: -5: must be non-negative",
            id="backoff-negative",
        ),
        pytest.param(
            CoschedulingArgs,
            {"podGroupRejectPercentage": 101},
            f"{ARGS}.podGroupRejectPercentage: Invalid value: 101: not in valid range [0, 100]",
            id="percentage",
        ),
        pytest.param(
            CoschedulingArgs,
            {"permitWaitingTimeSeconds": "60"},
            f'{ARGS}.permitWaitingTimeSeconds: must be an integer (got "60")',
            id="string-number",
        ),
        pytest.param(
            CoschedulingArgs,
            {"permitWaitingTimeSecond": 3},
            f"{ARGS}.permitWaitingTimeSecond: unknown field "
            '(did you mean "permitWaitingTimeSeconds"?)',
            id="typo",
        ),
        pytest.param(
            CoschedulingArgs,
            {"kind": "CapacitySchedulingArgs"},
            f'{ARGS}.kind: must be "CoschedulingArgs" (got "CapacitySchedulingArgs")',
            id="kind",
        ),
        pytest.param(NoArgs, {"surprise": 1}, f"{ARGS}.surprise: unknown field", id="no-args"),
        pytest.param(CoschedulingArgs, [1], f"{ARGS}: must be a mapping (got a list)", id="list"),
        pytest.param(
            NodeResourcesFitArgs,
            {"scoringStrategy": {"type": "Balanced"}},
            f'{ARGS}.scoringStrategy.type: Unsupported value: "Balanced": supported values: '
            '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',  # kube's words
            id="strategy",
        ),
        pytest.param(
            NodeResourcesFitArgs,
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            f"{ARGS}.scoringStrategy.requestedToCapacityRatio: Required value: must be specified "
            "when type is RequestedToCapacityRatio",
            id="shape-missing",
        ),
        pytest.param(
            NodeResourcesFitArgs,
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "requestedToCapacityRatio": {"shape": [{"score": 1}]},
                }
            },
            f"{ARGS}.scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type "
            "is not RequestedToCapacityRatio",
            id="shape-forbidden",
        ),
        pytest.param(
            NodeResourcesFitArgs,
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 10}]
                    },
                }
            },
            f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: "
            "Invalid value: 10: values must be sorted in increasing order",
            id="shape-order",
        ),
        pytest.param(
            NodeResourcesFitArgs,
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu"}, {"name": "cpu", "weight": 2}],
                }
            },
            f'{ARGS}.scoringStrategy.resources[1].name: Duplicate value: "cpu"',
            id="duplicate-resource",
        ),
        pytest.param(
            NodeResourcesFitArgs,
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 101}],
                }
            },
            f"{ARGS}.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight "
            "of cpu not in valid range (0, 100]",
            id="resource-weight",
        ),
        pytest.param(
            NodeResourcesFitArgs,
            {"ignoredResourceGroups": ["example.com/gpu"]},
            f'{ARGS}.ignoredResourceGroups[0]: Invalid value: "example.com/gpu": resource group '
            "name can't contain '/'",
            id="group-slash",
        ),
        pytest.param(
            DefaultPreemptionArgs,
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            f"{ARGS}.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same "
            "time as minCandidateNodesPercentage",
            id="preemption-zero",
        ),
        pytest.param(
            NodeAffinityArgs,
            {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": 3}},
            f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: must be a "
            "mapping (got 3)",
            id="added-affinity",
        ),
    ],
)
def test_bad_args_name_the_field_as_written(model: Any, args: Any, line: str) -> None:
    with pytest.raises(ValueError, match=re.escape(line)) as raised:
        validate_args(model, args, ARGS)
    assert line in str(raised.value).splitlines(), str(raised.value)


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        pytest.param(
            {"profiles": [{"plugins": {"filtr": {}}}]},
            'profiles[0].plugins.filtr: unknown field (did you mean "filter"?)',
            id="unknown-point",
        ),
        pytest.param(
            {"profiles": [{"plugins": {"score": {"enabled": [{"name": "X", "weight": -1}]}}}]},
            "profiles[0].plugins.score.enabled[0].weight: Invalid value: -1: must not be negative",
            id="weight",
        ),
        pytest.param(
            {"profiles": [{"plugins": {"filter": {"enabled": [{"weight": 1}]}}}]},
            "profiles[0].plugins.filter.enabled[0].name: is required",
            id="no-name",
        ),
        pytest.param(
            {"percentageOfNodesToScore": 101},
            "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
            id="percentage",
        ),
        pytest.param(
            {"profiles": [{"percentageOfNodesToScore": -1}]},
            "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
            id="profile-percentage",
        ),
        pytest.param(
            {"podInitialBackoffSeconds": 0},
            "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
            id="initial-backoff",
        ),
        pytest.param(
            {"podInitialBackoffSeconds": 20},
            "podMaxBackoffSeconds: Invalid value: 10: must be greater than or equal to "
            "PodInitialBackoffSeconds",
            id="max-below-initial",
        ),
        pytest.param(
            {"leaderElection": {"leaseDuration": "15"}},
            'leaderElection.leaseDuration: invalid duration "15" (e.g. "15s", "1m30s")',
            id="duration",
        ),
        pytest.param(
            {"leaderElection": {"resourceLock": "endpoints"}},
            'leaderElection.resourceLock: Invalid value: "endpoints": resourceLock value must '
            'be "leases"',
            id="lock",
        ),
        pytest.param(
            {"extenders": [{"urlPrefix": "http://x"}]},
            "extenders: scheduler extenders are not supported",
            id="extenders",
        ),
        pytest.param(
            {"kind": "KubeSchedulerConfig"},
            "kind: must be 'KubeSchedulerConfiguration' (got \"KubeSchedulerConfig\")",
            id="kind",
        ),
        pytest.param({"profiles": {}}, "profiles: must be a list (got a mapping)", id="not-list"),
    ],
)
def test_bad_files_name_the_field_as_written(doc: dict[str, Any], line: str) -> None:
    with pytest.raises(ValueError, match=re.escape(line)) as raised:
        parse_configuration({**HEAD, **doc})
    assert line in str(raised.value).splitlines(), str(raised.value)
