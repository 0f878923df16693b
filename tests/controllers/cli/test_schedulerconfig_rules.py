# ruff: noqa: E501  (a table of kube-scheduler's own lines, kept whole to be read against its output)
"""kube-scheduler's validation rules for a KubeSchedulerConfiguration, one case per rule,
through the reader `placement scheduler run --config` and `scheduler simulate --config` use:
each problem is one line naming kube's path, in kube's words where the line says so (the
e2e tier compares them with the kube-scheduler binary: tests/e2e/test_schedulerconfig_kube.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controllers.addons.scheduler_options import load_scheduler_config
from placement.pods.config.profiles import ConfigError

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
ARGS = "profiles[0].pluginConfig[0].args"


def _args(plugin: str, args: object) -> dict[str, object]:
    return {"profiles": [{"schedulerName": "s", "pluginConfig": [{"name": plugin, "args": args}]}]}


def _affinity(term: dict[str, object]) -> dict[str, object]:
    required = {"nodeSelectorTerms": [term]}
    return _args(
        "NodeAffinity",
        {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
    )


_TERM = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"

# (the document's fields, one line of the error): the lines kube-scheduler v1.36 prints
CASES: dict[str, tuple[dict[str, object], str]] = {
    "burst": (
        {"clientConnection": {"burst": -1}},
        "clientConnection.burst: Invalid value: -1: must be non-negative",
    ),
    "qps-inf": (
        {"clientConnection": {"qps": float("inf")}},
        "clientConnection.qps: Invalid value: inf: must be a number a float32 holds",
    ),
    "parallelism": (
        {"parallelism": 0},
        "parallelism: Invalid value: 0: should be an integer value greater than zero",
    ),
    "parallelism-int32": (
        {"parallelism": 2**32},
        "parallelism: Invalid value: 4294967296: does not fit an int32 (at most 2147483647)",
    ),
    "percentage": (
        {"percentageOfNodesToScore": 200},
        "percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]",
    ),
    "initial-backoff": (
        {"podInitialBackoffSeconds": 0},
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
    ),
    "max-below-initial": (
        {"podInitialBackoffSeconds": 20},
        "podMaxBackoffSeconds: Invalid value: 10: must be greater than or equal to "
        "PodInitialBackoffSeconds",
    ),
    "backoffs-both": (  # the order is checked even when the initial backoff is refused
        {"podInitialBackoffSeconds": -5, "podMaxBackoffSeconds": -10},
        "podMaxBackoffSeconds: Invalid value: -10: must be greater than or equal to "
        "PodInitialBackoffSeconds",
    ),
    "lock": (
        {"leaderElection": {"resourceLock": "configmaps"}},
        'leaderElection.resourceLock: Invalid value: "configmaps": resourceLock value must be "leases"',
    ),
    "lease-name": (
        {"leaderElection": {"resourceName": "Bad_Name"}},
        'leaderElection.resourceName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain',
    ),
    "lease-namespace": (
        {"leaderElection": {"resourceNamespace": "a.b"}},
        'leaderElection.resourceNamespace: Invalid value: "a.b": must not contain dots',
    ),
    "lease-order": (
        {"leaderElection": {"leaseDuration": "1s", "renewDeadline": "2s"}},
        'leaderElection.leaseDuration: Invalid value: "1s": must be greater than renewDeadline ("2s")',
    ),
    "scheduler-name": (
        {"profiles": [{"schedulerName": "a"}, {}]},
        "profiles[1].schedulerName: Required value",
    ),
    "queue-sorts": (
        {
            "profiles": [
                {
                    "plugins": {
                        "queueSort": {
                            "enabled": [{"name": "PrioritySort"}, {"name": "PrioritySort"}]
                        }
                    }
                }
            ]
        },
        "profiles[0].plugins.queueSort.enabled: Invalid value: 2: only one queue sort plugin can be enabled",
    ),
    "removed-plugin": (
        {"profiles": [{"pluginConfig": [{"name": "EBSLimits"}]}]},
        'profiles[0].pluginConfig[0]: Invalid value: "EBSLimits": was invalid in version "v1"',
    ),
    "duplicate-config": (
        {
            "profiles": [
                {
                    "pluginConfig": [
                        {"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": -1}},
                        {"name": "DefaultPreemption"},
                    ]
                }
            ]
        },
        'profiles[0].pluginConfig[1]: Duplicate value: "DefaultPreemption"',
    ),
    "weight": (
        {
            "profiles": [
                {"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 2**31}]}}}
            ]
        },
        "profiles[0].plugins.score.enabled[0].weight: Invalid value: 2147483648: does not fit an int32",
    ),
    "preemption-percentage": (
        _args("DefaultPreemption", {"minCandidateNodesPercentage": 200}),
        f"{ARGS}.minCandidateNodesPercentage: Invalid value: 200: not in valid range [0, 100]",
    ),
    "preemption-absolute": (
        _args("DefaultPreemption", {"minCandidateNodesAbsolute": -1}),
        f"{ARGS}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
    ),
    "preemption-both-zero": (
        _args(
            "DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}
        ),
        f"{ARGS}.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
    ),
    "hard-weight": (
        _args("InterPodAffinity", {"hardPodAffinityWeight": 101}),
        f"{ARGS}.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
    ),
    "balanced-weight": (
        _args("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}]}),
        f"{ARGS}.resources[0].weight: Invalid value: 2: must be 1",
    ),
    "ignored-resource": (
        _args("NodeResourcesFit", {"ignoredResources": ["a b"]}),
        f'{ARGS}.ignoredResources[0]: Invalid value: "a b": name part must consist of',
    ),
    "fit-type": (
        _args("NodeResourcesFit", {"scoringStrategy": {"type": "Foo"}}),
        f'{ARGS}.scoringStrategy.type: Unsupported value: "Foo": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
    ),
    "shape-score": (
        _args(
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 11}]},
                }
            },
        ),
        f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
    ),
    "shape-empty": (
        _args(
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
        ),
        f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified",
    ),
    "spread-system": (
        _args(
            "PodTopologySpread",
            {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
        ),
        f'{ARGS}.defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
    ),
    "spread-skew": (
        _args(
            "PodTopologySpread",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
        ),
        f"{ARGS}.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
    ),
    "spread-action": (
        _args(
            "PodTopologySpread",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}
                ],
            },
        ),
        f'{ARGS}.defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"',
    ),
    "spread-key": (
        _args(
            "PodTopologySpread",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
        ),
        f"{ARGS}.defaultConstraints[0].topologyKey: Required value: can not be empty",
    ),
    "spread-duplicate": (
        _args(
            "PodTopologySpread",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ]
                * 2,
            },
        ),
        f'{ARGS}.defaultConstraints[1]: Duplicate value: "{{zone, DoNotSchedule}}"',
    ),
    "spread-selector": (
        _args(
            "PodTopologySpread",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {},
                    }
                ],
            },
        ),
        f"{ARGS}.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector",
    ),
    "bind-timeout": (
        _args("VolumeBinding", {"bindTimeoutSeconds": -1}),
        f"{ARGS}.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value",
    ),
    "match-fields-operator": (
        _affinity({"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}),
        f'{ARGS}.{_TERM}.matchFields[0].operator: Unsupported value: "Exists": supported values: "In", "NotIn"',
    ),
    "match-fields-values": (
        _affinity(
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}
        ),
        f'{ARGS}.{_TERM}.matchFields[0].values: Invalid value: ["a","b"]: must have one element',
    ),
    "gt-integer": (
        _affinity({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]}),
        f"{ARGS}.{_TERM}.matchExpressions[0].values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
    ),
    "fit-type-missing": (
        _args("NodeResourcesFit", {"scoringStrategy": {"resources": [{"name": "cpu"}]}}),
        f'{ARGS}.scoringStrategy.type: Unsupported value: "": supported values: "LeastAllocated"',
    ),
    "queue-sort-args": (
        {
            "profiles": [
                {
                    "schedulerName": n,
                    "plugins": {
                        "queueSort": {
                            "enabled": [{"name": "Coscheduling"}],
                            "disabled": [{"name": "*"}],
                        }
                    },
                    "pluginConfig": [
                        {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": t}}
                    ],
                }
                for n, t in (("a", 10), ("b", 20))
            ]
        },
        "profiles[1].pluginConfig[0].args: queueSort must be the same for all profiles",
    ),
}


@pytest.mark.parametrize(("fields", "line"), CASES.values(), ids=CASES.keys())
def test_each_rule_is_a_line_naming_kubes_path(
    fields: dict[str, object], line: str, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**HEAD, **fields}))
    with pytest.raises(ConfigError) as raised:
        load_scheduler_config(config)
    lines = str(raised.value).splitlines()
    assert any(found.startswith(f"{config}: {line}") for found in lines), lines


def test_disabling_a_removed_plugin_is_accepted_as_kube_does(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    plugins = {"filter": {"disabled": [{"name": "EBSLimits"}]}}
    config.write_text(yaml.safe_dump({**HEAD, "profiles": [{"plugins": plugins}]}))
    assert load_scheduler_config(config).profiles[0].plugins.filter.disabled[0].name == "EBSLimits"


@pytest.mark.parametrize(
    ("leader", "line"),
    [
        (
            {"leaseName": "Bad_Name"},
            'leaderElection.leaseName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain',
        ),
        (
            {"leaseNamespace": "a.b"},
            'leaderElection.leaseNamespace: Invalid value: "a.b": must not contain dots',
        ),
    ],
)
def test_our_kinds_lease_is_one_the_api_server_takes(
    leader: dict[str, str], line: str, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    doc = {
        "apiVersion": "placement.ocm.io/v1alpha1",
        "kind": "PodSchedulerConfiguration",
        "leaderElection": leader,
    }
    config.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as raised:
        load_scheduler_config(config)
    assert str(raised.value).startswith(f"{config}: {line}")


def test_our_kinds_plugin_args_are_every_problem_in_kubes_words(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    args = {
        "DefaultPreemption": {"minCandidateNodesPercentage": 200},
        "InterPodAffinity": {"hardPodAffinityWeight": -1},
    }
    doc = {
        "apiVersion": "placement.ocm.io/v1alpha1",
        "kind": "PodSchedulerConfiguration",
        "pluginArgs": args,
    }
    config.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as raised:
        load_scheduler_config(config)
    assert sorted(str(raised.value).splitlines()) == [
        f"{config}: pluginArgs.DefaultPreemption.minCandidateNodesPercentage: Invalid value: 200: not in valid range [0, 100]",
        f"{config}: pluginArgs.InterPodAffinity.hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
    ]
