"""The args of each built-in pod plugin, as pydantic models with kube's (and scheduler-plugins')
defaults and checks: what `pluginConfig[].args` of a KubeSchedulerConfiguration (or `pluginArgs`
of ours) holds, and what each plugin's `from_args` takes. `PLUGIN_ARGS` maps each plugin to its
model; a plugin without args takes `NoArgs`, which refuses any field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from apis.configchecks import (
    GO_DURATION_SECONDS,
    Int32,
    Int64,
    Range,
    forbidden,
    invalid,
    not_supported,
    raise_all,
    required,
    worded,
)
from apis.configmodel import (
    ConfigModel,
    field_problems,
    go_duration_seconds,
    located,
    shown,
)
from apis.core import NodeAffinity
from apis.fielderrors import label_key_problems
from apis.kubevalidation import node_affinity_problems
from apis.pluginargchecks import default_constraints_errors, loc_of, node_selector_extras
from apis.topologyspread import TopologySpreadConstraint

__all__ = [
    "MAX_WEIGHT",
    "PLUGIN_ARGS",
    "ArgsModel",
    "CapacitySchedulingArgs",
    "CoschedulingArgs",
    "DefaultPreemptionArgs",
    "DynamicResourcesArgs",
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


_Seconds = Annotated[Int64, Range(0, None, "must be non-negative"), GO_DURATION_SECONDS]


class CoschedulingArgs(ArgsModel):
    """scheduler-plugins' CoschedulingArgs."""

    # seconds, as a Go Duration can hold them (beyond: a timedelta overflowed at start-up)
    permit_waiting_time_seconds: _Seconds = 60
    pod_group_backoff_seconds: _Seconds = 0
    pod_group_reject_percentage: Annotated[Int32, Range(0, 100, "not in valid range [0, 100]")] = 10


class CapacitySchedulingArgs(ArgsModel):
    """CapacityScheduling takes no args (scheduler-plugins dropped `kubeConfigPath`)."""


class ResourceSpecArg(ConfigModel):
    """A resource a score counts and its weight (kube's ResourceSpec; 0, as unset, is 1). The
    range of the weight is the owner's (NodeResourcesFit: 1..100, BalancedAllocation: 1)."""

    name: Annotated[str, Field(min_length=1)]
    weight: Int32 = 1

    @field_validator("weight")
    @classmethod
    def _unset_is_one(cls, value: int) -> int:
        return 1 if value == 0 else value


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
    utilization: Annotated[Int32, Range(0, 100, "not in valid range [0, 100]")] = 0
    score: Annotated[Int32, Range(0, 10, "not in valid range [0, 10]")] = 0


def _shape_checked(value: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
    """kube's rules for a shape: at least one point, utilization strictly increasing."""
    if not value:
        raise_all([required((), "at least one point must be specified")])
    for index in range(1, len(value)):
        if value[index].utilization <= value[index - 1].utilization:
            detail = "values must be sorted in increasing order"
            raise_all([invalid((index, "utilization"), value[index].utilization, detail)])
    return value


class RequestedToCapacityRatioParam(ConfigModel):
    shape: list[UtilizationShapePoint] = []

    _shape = field_validator("shape")(_shape_checked)

    @model_validator(mode="before")
    @classmethod
    def _shape_given(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "shape" not in data:
            raise_all([required("shape", "at least one point must be specified")])
        return data


class ScoringStrategy(ConfigModel):
    """NodeResourcesFit's scoring: the strategy, the resources and (RequestedToCapacityRatio)
    the shape."""

    TYPES: ClassVar[tuple[str, ...]] = (
        "LeastAllocated",
        "MostAllocated",
        "RequestedToCapacityRatio",
    )

    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = "LeastAllocated"
    resources: list[ResourceSpecArg] = Field(default_factory=_default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @model_validator(mode="before")
    @classmethod
    def _type_given(cls, data: Any) -> Any:
        """kube defaults the whole strategy, never its type alone."""
        if isinstance(data, Mapping) and "type" not in data:
            raise_all([not_supported("type", "", cls.TYPES)])
        return data

    @field_validator("type", mode="before")
    @classmethod
    def _supported(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in cls.TYPES:
            raise_all([not_supported((), value, cls.TYPES)])
        return value

    @field_validator("resources")
    @classmethod
    def _weights(cls, value: list[ResourceSpecArg]) -> list[ResourceSpecArg]:
        detail = "resource weight of {} not in valid range (0, 100]"
        raise_all(
            invalid((index, "weight"), spec.weight, detail.format(spec.name))
            for index, spec in enumerate(value)
            if not 0 < spec.weight <= MAX_WEIGHT
        )
        return _unique_names(value)

    @model_validator(mode="after")
    def _shape_with_its_type(self) -> ScoringStrategy:
        ratio = self.type == "RequestedToCapacityRatio"
        if ratio and self.requested_to_capacity_ratio is None:
            detail = "must be specified when type is RequestedToCapacityRatio"
            raise_all([required("requestedToCapacityRatio", detail)])
        if not ratio and self.requested_to_capacity_ratio is not None:
            detail = "must be nil when type is not RequestedToCapacityRatio"
            raise_all([forbidden("requestedToCapacityRatio", detail)])
        return self


class NodeResourcesFitArgs(ArgsModel):
    scoring_strategy: ScoringStrategy = ScoringStrategy(type="LeastAllocated")
    ignored_resources: list[Annotated[str, Field(min_length=1)]] = []
    ignored_resource_groups: list[Annotated[str, Field(min_length=1)]] = []

    @field_validator("ignored_resources")
    @classmethod
    def _label_names(cls, value: list[str]) -> list[str]:
        raise_all(
            invalid(index, name, problem)
            for index, name in enumerate(value)
            for problem in label_key_problems(name)
        )
        return value

    @field_validator("ignored_resource_groups")
    @classmethod
    def _groups(cls, value: list[str]) -> list[str]:
        errors = []
        for index, group in enumerate(value):
            if "/" in group:
                errors.append(invalid(index, group, "resource group name can't contain '/'"))
            errors += [invalid(index, group, problem) for problem in label_key_problems(group)]
        raise_all(errors)
        return value


class NodeResourcesBalancedAllocationArgs(ArgsModel):
    resources: list[ResourceSpecArg] = Field(default_factory=_default_resources)

    @field_validator("resources")
    @classmethod
    def _weights_one(cls, value: list[ResourceSpecArg]) -> list[ResourceSpecArg]:
        raise_all(
            invalid((index, "weight"), spec.weight, "must be 1")
            for index, spec in enumerate(value)
            if spec.weight != 1
        )
        return _unique_names(value)


class DefaultPreemptionArgs(ArgsModel):
    min_candidate_nodes_percentage: Annotated[
        Int32, Range(0, 100, "not in valid range [0, 100]")
    ] = 10
    min_candidate_nodes_absolute: Annotated[
        Int32, Range(0, None, "not in valid range [0, inf)")
    ] = 100

    @model_validator(mode="after")
    def _not_both_zero(self) -> DefaultPreemptionArgs:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise_all(
                [
                    invalid(
                        "minCandidateNodesPercentage",
                        0,
                        "cannot be zero at the same time as minCandidateNodesAbsolute",
                    ),
                    invalid(
                        "minCandidateNodesAbsolute",
                        0,
                        "cannot be zero at the same time as minCandidateNodesPercentage",
                    ),
                ]
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
        required_terms = self.added_affinity.required_during_scheduling_ignored_during_execution
        if required_terms is not None and not required_terms.node_selector_terms:
            path = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            raise_all([required(loc_of(path), "must have at least one node selector term")])
        errors = [
            worded(loc_of(problem.path), problem.message)
            for problem in node_affinity_problems(wire, "addedAffinity")
        ]
        raise_all(errors + node_selector_extras(wire))
        return self


class PodTopologySpreadArgs(ArgsModel):
    """kube's PodTopologySpreadArgs: with `defaultingType: System` (the default) the system
    defaults apply to pods without constraints and `defaultConstraints` must be empty; with
    `List`, `defaultConstraints` (no labelSelector: it is derived from the pod's owners)."""

    default_constraints: list[TopologySpreadConstraint] = []
    defaulting_type: Literal["System", "List"] = "System"

    @field_validator("defaulting_type", mode="before")
    @classmethod
    def _supported(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in ("System", "List"):
            raise_all([not_supported((), value, ("System", "List"))])
        return value

    @model_validator(mode="after")
    def _constraints(self) -> PodTopologySpreadArgs:
        errors = []
        if self.defaulting_type == "System" and self.default_constraints:
            detail = "when .defaultConstraints are not empty"
            errors.append(invalid("defaultingType", "System", detail))
        raise_all(errors + default_constraints_errors(self.default_constraints))
        return self


class VolumeBindingArgs(ArgsModel):
    """kube's VolumeBindingArgs. `shape` turns on storage capacity scoring (kube's
    StorageCapacityScoring): the score of a node follows the shape at the utilization of the
    volumes the pod would be bound to there. `bindTimeoutSeconds`: how long PreBind waits for
    the PV controller to bind the claims of the volumes it pre-bound (the pod is then retried)."""

    bind_timeout_seconds: Annotated[
        int,
        Range(0, None, "invalid BindTimeoutSeconds, should not be a negative value"),
        GO_DURATION_SECONDS,
    ] = 600
    shape: list[UtilizationShapePoint] | None = None

    @field_validator("shape")
    @classmethod
    def _shape(
        cls, value: list[UtilizationShapePoint] | None
    ) -> list[UtilizationShapePoint] | None:
        return None if value is None else _shape_checked(value)


class InterPodAffinityArgs(ArgsModel):
    """kube's InterPodAffinityArgs: the weight of existing pods' required affinity terms in the
    score, and whether their preferred terms count."""

    hard_pod_affinity_weight: Annotated[Int32, Range(0, 100, "not in valid range [0, 100]")] = 1
    ignore_preferred_terms_of_existing_pods: bool = False


def _duration_field(value: Any) -> Any:
    """A metav1.Duration written as Go spells it (`10s`, `1m30s`) -> seconds; numbers pass."""
    if isinstance(value, str):
        try:
            return go_duration_seconds(value)
        except ValueError as exc:
            raise_all([invalid((), value, str(exc))])
    return value


class DynamicResourcesArgs(ArgsModel):
    """kube's DynamicResourcesArgs (seconds here, Go durations in a file: `filterTimeout: 10s`).
    `filterTimeout` bounds kube's per-node device search (0: none); the search here is
    vectorised and bounded by the claims' sizes, so it is accepted and checked but not needed.
    `bindingTimeout` is the wait of PreBind for device binding conditions, which are not
    implemented (kube's default, 10 minutes, is kept for the configuration's round trip)."""

    filter_timeout: float = 10.0
    binding_timeout: float = 600.0

    @field_validator("filter_timeout", "binding_timeout", mode="before")
    @classmethod
    def _durations(cls, value: Any) -> Any:
        return _duration_field(value)

    @field_validator("filter_timeout")
    @classmethod
    def _filter_timeout(cls, value: float) -> float:
        if value < 0:
            raise_all([invalid((), value, "must be zero or positive")])
        return value

    @field_validator("binding_timeout")
    @classmethod
    def _binding_timeout(cls, value: float) -> float:
        if value < 1:
            raise_all([invalid((), value, "must be greater than or equal to 1 second")])
        return value


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
    "NodeVolumeLimits": NoArgs,
    "NodeDeclaredFeatures": NoArgs,
    "VolumeBinding": VolumeBindingArgs,
    "VolumeZone": NoArgs,
    "InterPodAffinity": InterPodAffinityArgs,
    "DynamicResources": DynamicResourcesArgs,
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
