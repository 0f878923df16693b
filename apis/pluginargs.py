"""The args of each built-in pod plugin, as pydantic models with kube's (and scheduler-plugins')
defaults and checks: what `pluginConfig[].args` of a KubeSchedulerConfiguration (or `pluginArgs`
of ours) holds, and what each plugin's `from_args` takes. `PLUGIN_ARGS` maps each plugin to its
model; a plugin without args takes `NoArgs`, which refuses any field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from apis.configmodel import (
    MAX_DURATION_SECONDS,
    Bounds,
    ConfigModel,
    field_problems,
    located,
    shown,
)
from apis.core import NodeAffinity
from apis.kubevalidation import node_affinity_problems
from apis.topologyspread import TopologySpreadConstraint, constraints_problems

__all__ = [
    "MAX_WEIGHT",
    "PLUGIN_ARGS",
    "ArgsModel",
    "CapacitySchedulingArgs",
    "CoschedulingArgs",
    "DefaultPreemptionArgs",
    "InterPodAffinityArgs",
    "NoArgs",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "PodTopologySpreadArgs",
    "RequestedToCapacityRatioParam",
    "ResourceSpecArg",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "VolumeBindingArgs",
    "validate_args",
]

MAX_WEIGHT = 100


class ArgsModel(ConfigModel):
    """Base of plugin args. `apiVersion` and `kind` may be written inside args, as kube's typed
    args allow; `kind` then has to name this model."""

    @model_validator(mode="before")
    @classmethod
    def _type_meta(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or not ({"apiVersion", "kind"} & set(data)):
            return data
        rest = dict(data)
        kind = rest.pop("kind", None)
        rest.pop("apiVersion", None)
        if kind is not None and kind != cls.__name__ and cls is not NoArgs:
            raise located("kind", "kind", f'must be "{cls.__name__}" (got {shown(kind)})', kind)
        return rest


class NoArgs(ArgsModel):
    """The args of a plugin that takes none: any field is refused."""


class CoschedulingArgs(ArgsModel):
    """scheduler-plugins' CoschedulingArgs."""

    # seconds, as a Go Duration can hold them (beyond: a timedelta overflowed at start-up)
    permit_waiting_time_seconds: Annotated[int, Bounds(0), Bounds(hi=MAX_DURATION_SECONDS)] = 60
    pod_group_backoff_seconds: Annotated[int, Bounds(0), Bounds(hi=MAX_DURATION_SECONDS)] = 0
    pod_group_reject_percentage: Annotated[int, Bounds(0, 100)] = 10


class CapacitySchedulingArgs(ArgsModel):
    """CapacityScheduling takes no args (scheduler-plugins dropped `kubeConfigPath`)."""


class ResourceSpecArg(ConfigModel):
    """A resource a score counts and its weight (kube's ResourceSpec)."""

    name: Annotated[str, Field(min_length=1)]
    weight: Annotated[int, Bounds(1, MAX_WEIGHT)] = 1


def _unique_names(value: list[ResourceSpecArg]) -> list[ResourceSpecArg]:
    seen: set[str] = set()
    for index, spec in enumerate(value):
        if spec.name in seen:
            raise located(
                (index, "name"), "duplicate", f'Duplicate value: "{spec.name}"', spec.name
            )
        seen.add(spec.name)
    return value


def _default_resources() -> list[ResourceSpecArg]:
    return [ResourceSpecArg(name="cpu"), ResourceSpecArg(name="memory")]


class UtilizationShapePoint(ConfigModel):
    utilization: Annotated[int, Bounds(0, 100)] = 0
    score: Annotated[int, Bounds(0, 10)] = 0


class RequestedToCapacityRatioParam(ConfigModel):
    shape: list[UtilizationShapePoint] = Field(min_length=1)

    @field_validator("shape")
    @classmethod
    def _increasing(cls, value: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
        for index in range(1, len(value)):
            if value[index].utilization <= value[index - 1].utilization:
                raise located(
                    (index, "utilization"),
                    "order",
                    f"utilization values must be sorted in increasing order "
                    f"(got {value[index].utilization} after {value[index - 1].utilization})",
                    value[index].utilization,
                )
        return value


class ScoringStrategy(ConfigModel):
    """NodeResourcesFit's scoring: the strategy, the resources and (RequestedToCapacityRatio)
    the shape."""

    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = "LeastAllocated"
    resources: list[ResourceSpecArg] = Field(default_factory=_default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    _resources = field_validator("resources")(_unique_names)

    @model_validator(mode="after")
    def _shape_with_its_type(self) -> ScoringStrategy:
        ratio = self.type == "RequestedToCapacityRatio"
        if ratio and self.requested_to_capacity_ratio is None:
            raise located("requestedToCapacityRatio", "required", "is required", None)
        if not ratio and self.requested_to_capacity_ratio is not None:
            raise located(
                "requestedToCapacityRatio",
                "forbidden",
                "only with type RequestedToCapacityRatio",
                None,
            )
        return self


class NodeResourcesFitArgs(ArgsModel):
    scoring_strategy: ScoringStrategy = ScoringStrategy()
    ignored_resources: list[Annotated[str, Field(min_length=1)]] = []
    ignored_resource_groups: list[Annotated[str, Field(min_length=1)]] = []

    @field_validator("ignored_resource_groups")
    @classmethod
    def _no_slash(cls, value: list[str]) -> list[str]:
        for index, group in enumerate(value):
            if "/" in group:
                raise located(
                    index,
                    "group",
                    f"resource group name can't contain '/' (got \"{group}\")",
                    group,
                )
        return value


class NodeResourcesBalancedAllocationArgs(ArgsModel):
    resources: list[ResourceSpecArg] = Field(default_factory=_default_resources)

    _resources = field_validator("resources")(_unique_names)


class DefaultPreemptionArgs(ArgsModel):
    min_candidate_nodes_percentage: Annotated[int, Bounds(0, 100)] = 10
    min_candidate_nodes_absolute: Annotated[int, Bounds(0)] = 100

    @model_validator(mode="after")
    def _not_both_zero(self) -> DefaultPreemptionArgs:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise located(
                "minCandidateNodesAbsolute",
                "zero",
                "cannot be zero at the same time as minCandidateNodesPercentage",
                0,
            )
        return self


class NodeAffinityArgs(ArgsModel):
    """`addedAffinity`: node affinity every pod of the profile must also satisfy."""

    added_affinity: NodeAffinity | None = None

    @model_validator(mode="after")
    def _selector(self) -> NodeAffinityArgs:
        """kube refuses the file whose addedAffinity a pod could not carry (`In` without
        values, a bad key, no terms): every pod of the profile would be unschedulable."""
        if self.added_affinity is None:
            return self
        wire = self.added_affinity.to_wire()
        required = self.added_affinity.required_during_scheduling_ignored_during_execution
        if required is not None and not required.node_selector_terms:
            path = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            message = "Required value: must have at least one node selector term"
            raise located(_loc(path), "required", message, None)
        problems = node_affinity_problems(wire, "addedAffinity")
        if problems:
            raise located(_loc(problems[0].path), "invalid", problems[0].message, None)
        return self


def _loc(path: str) -> tuple[str | int, ...]:
    """`a.b[0].c` -> ("a", "b", 0, "c"), a location for `located`."""
    parts = path.replace("[", ".").replace("]", "").split(".")
    return tuple(int(p) if p.isdigit() else p for p in parts)


class PodTopologySpreadArgs(ArgsModel):
    """kube's PodTopologySpreadArgs: with `defaultingType: System` (the default) the system
    defaults apply to pods without constraints and `defaultConstraints` must be empty; with
    `List`, `defaultConstraints` (no labelSelector: it is derived from the pod's owners)."""

    default_constraints: list[TopologySpreadConstraint] = []
    defaulting_type: Literal["System", "List"] = "System"

    @model_validator(mode="after")
    def _constraints(self) -> PodTopologySpreadArgs:
        constraints = self.default_constraints
        if self.defaulting_type == "System" and constraints:
            raise located(
                "defaultConstraints",
                "forbidden",
                'when .defaultingType is "System"',
                [c.to_wire() for c in constraints],
            )
        for index, constraint in enumerate(constraints):
            if constraint.label_selector is not None:
                raise located(
                    ("defaultConstraints", index, "labelSelector"),
                    "forbidden",
                    "constraint must not define a selector, as they deduced for each pod",
                    constraint.label_selector.to_wire(),
                )
        problems = constraints_problems(constraints, "defaultConstraints")
        if problems:
            path, _, message = problems[0].partition(": ")
            raise located(_loc(path), "invalid", message, None)
        return self


class VolumeBindingArgs(ArgsModel):
    """kube's VolumeBindingArgs. `shape` turns on storage capacity scoring (kube's
    StorageCapacityScoring): the score of a node follows the shape at the utilization of the
    volumes the pod would be bound to there. `bindTimeoutSeconds`: how long PreBind waits for
    the PV controller to bind the claims of the volumes it pre-bound (the pod is then retried)."""

    bind_timeout_seconds: Annotated[int, Bounds(0), Bounds(hi=MAX_DURATION_SECONDS)] = 600
    shape: list[UtilizationShapePoint] | None = None

    @field_validator("shape")
    @classmethod
    def _shape(
        cls, value: list[UtilizationShapePoint] | None
    ) -> list[UtilizationShapePoint] | None:
        if value is None:
            return None
        if not value:
            raise located((), "empty", "must have at least one point", value)
        return RequestedToCapacityRatioParam._increasing(value)


class InterPodAffinityArgs(ArgsModel):
    """kube's InterPodAffinityArgs: the weight of existing pods' required affinity terms in the
    score, and whether their preferred terms count."""

    hard_pod_affinity_weight: Annotated[int, Bounds(0, 100)] = 1
    ignore_preferred_terms_of_existing_pods: bool = False


PLUGIN_ARGS: Mapping[str, type[ArgsModel]] = {
    "PrioritySort": NoArgs,
    "UnsupportedFeatures": NoArgs,
    "NodeUnschedulable": NoArgs,
    "NodeName": NoArgs,
    "TaintToleration": NoArgs,
    "NodeAffinity": NodeAffinityArgs,
    "NodePorts": NoArgs,
    "NodeResourcesFit": NodeResourcesFitArgs,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "ImageLocality": NoArgs,
    "DefaultPreemption": DefaultPreemptionArgs,
    "CapacityScheduling": CapacitySchedulingArgs,
    "Coscheduling": CoschedulingArgs,
    "PodTopologySpread": PodTopologySpreadArgs,
    "VolumeRestrictions": NoArgs,
    "VolumeBinding": VolumeBindingArgs,
    "VolumeZone": NoArgs,
    "InterPodAffinity": InterPodAffinityArgs,
}
"""The args model of each built-in pod plugin."""


def validate_args(model: type[ArgsModel], args: Any, where: str = "") -> ArgsModel:
    """`args` (a mapping, None for none, or already a `model`) checked by `model`; ValueError
    with one `path: problem` line per problem, the paths under `where`."""
    if isinstance(args, model):
        return args
    if isinstance(args, ArgsModel):
        raise ValueError(f"{where or 'args'}: {type(args).__name__} given, {model.__name__} wanted")
    if args is None:
        args = {}
    elif isinstance(args, Mapping) and not isinstance(args, dict):
        args = dict(args)  # a read-only view of the file's mapping
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        raise ValueError("\n".join(field_problems(exc, where))) from None
