"""kube-scheduler's configuration file (`kubescheduler.config.k8s.io/v1`,
`KubeSchedulerConfiguration`) and the args of each pod plugin, as pydantic models.

A scheduler-plugins user starts our pod scheduler with the file they already have: profiles
(`schedulerName`, `plugins` per extension point and `multiPoint`, `pluginConfig[].args`), the
queue's backoff, `leaderElection`, `percentageOfNodesToScore`. The models check what kube's
strict decoding and validation check; the merge with the default plugins and the placement of
each plugin at its extension points need the plugin registry and live in `placement.pods`.

Every model refuses unknown fields. `field_problems` turns a validation error into one line
per problem, each starting with the field's path as the user wrote it
(`profiles[0].pluginConfig[1].args.podGroupBackoffSeconds: must be >= 0 (got -5)`).

`PLUGIN_ARGS` maps each built-in plugin to its args model; a plugin without args takes
`NoArgs`, which refuses any field.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError, core_schema

from apis.core import NodeAffinity

__all__ = [
    "KUBE_DEFAULT_PLUGINS",
    "KUBE_SCHEDULER_API_VERSION",
    "KUBE_SCHEDULER_KIND",
    "PLUGIN_ARGS",
    "ArgsModel",
    "CapacitySchedulingArgs",
    "ConfigModel",
    "CoschedulingArgs",
    "DefaultPreemptionArgs",
    "KubeSchedulerConfiguration",
    "KubeSchedulerProfile",
    "LeaderElectionConfiguration",
    "NoArgs",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "PluginConfig",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "ResourceSpecArg",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "field_problems",
    "go_duration_seconds",
    "parse_configuration",
    "suggest",
    "validate_args",
]

KUBE_SCHEDULER_API_VERSION = "kubescheduler.config.k8s.io/v1"
KUBE_SCHEDULER_KIND = "KubeSchedulerConfiguration"
MAX_WEIGHT = 100

KUBE_DEFAULT_PLUGINS = frozenset(
    {
        "SchedulingGates",
        "PrioritySort",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "DefaultBinder",
        "DynamicResources",
    }
)
"""kube-scheduler's default plugins: a profile may disable one we do not have (nothing to do),
never enable it."""


def suggest(name: str, known: Sequence[str]) -> str:
    """` (did you mean "X"?)` when a known name is close, else empty."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f' (did you mean "{close[0]}"?)' if close else ""


# --- the base model: camelCase, strict, unknown fields refused with a suggestion ---------------


class ConfigModel(BaseModel):
    """Base of the configuration models: camelCase on the wire, strict types, and an unknown
    field is an error naming it (with the closest known name)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
        extra="forbid",
        frozen=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        known = [f.alias or n for n, f in cls.model_fields.items()]
        for key in data:
            if key not in known and key not in cls.model_fields:
                hint = suggest(str(key), known) if isinstance(key, str) else ""
                raise _located(key, "unknown_field", f"unknown field{hint}", data[key])
        return data


def _located(
    key: str | int | tuple[str | int, ...], kind: str, message: str, value: Any
) -> ValidationError:
    """A validation error at `key` below the current model (raised inside a validator, the
    location joins the enclosing ones)."""
    from pydantic_core import InitErrorDetails

    return ValidationError.from_exception_data(
        "config",
        [
            InitErrorDetails(
                type=PydanticCustomError(kind, "{message}", {"message": message}),
                loc=key if isinstance(key, tuple) else (key,),
                input=value,
            )
        ],
    )


@dataclass(frozen=True)
class Bounds:
    """Annotated metadata: an integer in [lo, hi], with a message naming the bounds."""

    lo: int | None = None
    hi: int | None = None

    def _check(self, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            lo, hi = self.lo, self.hi
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                if lo is not None and hi is not None:
                    text = f"must be between {lo} and {hi} (got {value})"
                elif lo is not None:
                    text = f"must be >= {lo} (got {value})"
                else:
                    text = f"must be <= {hi} (got {value})"
                raise PydanticCustomError("int_bounds", text)
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))


# --- error messages ----------------------------------------------------------------------------

_MESSAGES = {
    "missing": "is required",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "float_type": "must be a number",
    "extra_forbidden": "unknown field",
}


def _path(loc: Sequence[int | str], prefix: str) -> str:
    text = prefix
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.startswith("function-") or part in ("list", "dict"):
            continue  # pydantic's names for a validator or union member, not a field
        else:
            text = f"{text}.{part}" if text else part
    return text


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


def field_problems(error: ValidationError, prefix: str = "") -> list[str]:
    """One `path: problem` line per problem of a validation error, the paths as written in the
    file under `prefix` (`profiles[0].pluginConfig[1].args`)."""
    lines: list[str] = []
    for problem in error.errors(include_url=False):
        kind = problem["type"]
        if kind == "literal_error":
            expected = problem.get("ctx", {}).get("expected", "")
            text = f"must be {expected} (got {_shown(problem['input'])})"
        elif kind in _MESSAGES and kind not in ("missing", "extra_forbidden"):
            text = f"{_MESSAGES[kind]} (got {_shown(problem['input'])})"
        else:
            text = _MESSAGES.get(kind, problem["msg"])
        line = f"{_path(problem['loc'], prefix) or prefix or 'configuration'}: {text}"
        if line not in lines:
            lines.append(line)
    return lines


# --- durations (metav1.Duration: Go's time.ParseDuration) ---------------------------------------

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def go_duration_seconds(text: str) -> float:
    """`1m30s`, `500ms`, `15s` -> seconds, as Go's time.ParseDuration reads them (`0` alone is
    zero). ValueError on anything else."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    total, at = 0.0, 0
    while at < len(body):
        found = _DURATION_PART.match(body, at)
        if found is None:
            raise ValueError(f'invalid duration "{text}" (e.g. "15s", "1m30s")')
        total += float(found.group(1)) * _UNITS[found.group(2)]
        at = found.end()
    if not body:
        raise ValueError(f'invalid duration "{text}" (e.g. "15s", "1m30s")')
    return -total if text.startswith("-") else total


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        try:
            seconds = go_duration_seconds(value)
        except ValueError as exc:
            raise PydanticCustomError("duration", str(exc)) from None
        if seconds <= 0:
            raise PydanticCustomError("duration", f'must be positive (got "{value}")')
        return seconds
    raise PydanticCustomError("duration", f'must be a duration such as "15s" (got {value!r})')


Duration = Annotated[float, Field(json_schema_extra={"format": "duration"})]


# --- plugin args -------------------------------------------------------------------------------


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
            raise _located("kind", "kind", f'must be "{cls.__name__}" (got {_shown(kind)})', kind)
        return rest


class NoArgs(ArgsModel):
    """The args of a plugin that takes none: any field is refused."""


class CoschedulingArgs(ArgsModel):
    """scheduler-plugins' CoschedulingArgs."""

    permit_waiting_time_seconds: Annotated[int, Bounds(0)] = 60
    pod_group_backoff_seconds: Annotated[int, Bounds(0)] = 0
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
            raise _located(
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
                raise _located(
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
            raise _located("requestedToCapacityRatio", "required", "is required", None)
        if not ratio and self.requested_to_capacity_ratio is not None:
            raise _located(
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
                raise _located(
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
            raise _located(
                "minCandidateNodesAbsolute",
                "zero",
                "cannot be zero at the same time as minCandidateNodesPercentage",
                0,
            )
        return self


class NodeAffinityArgs(ArgsModel):
    """`addedAffinity`: node affinity every pod of the profile must also satisfy."""

    added_affinity: NodeAffinity | None = None


PLUGIN_ARGS: Mapping[str, type[ArgsModel]] = {
    "PrioritySort": NoArgs,
    "UnsupportedFeatures": NoArgs,
    "NodeUnschedulable": NoArgs,
    "NodeName": NoArgs,
    "TaintToleration": NoArgs,
    "NodeAffinity": NodeAffinityArgs,
    "NodeResourcesFit": NodeResourcesFitArgs,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "DefaultPreemption": DefaultPreemptionArgs,
    "CapacityScheduling": CapacitySchedulingArgs,
    "Coscheduling": CoschedulingArgs,
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


# --- KubeSchedulerConfiguration ----------------------------------------------------------------


class PluginRef(ConfigModel):
    """One entry of `enabled` or `disabled`: a plugin name (`*` in disabled: every default) and,
    for scores, its weight (0 or unset: the default)."""

    name: Annotated[str, Field(min_length=1)]
    weight: Annotated[int, Bounds(0, MAX_WEIGHT)] | None = None


class PluginSet(ConfigModel):
    enabled: list[PluginRef] = []
    disabled: list[PluginRef] = []


class Plugins(ConfigModel):
    """The plugin sets per extension point; `multiPoint` puts a plugin at every point it
    implements."""

    POINTS: ClassVar[tuple[str, ...]] = (
        "preEnqueue",
        "queueSort",
        "preFilter",
        "filter",
        "postFilter",
        "preScore",
        "score",
        "reserve",
        "permit",
        "preBind",
        "bind",
        "postBind",
    )

    pre_enqueue: PluginSet = PluginSet()
    queue_sort: PluginSet = PluginSet()
    pre_filter: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    post_filter: PluginSet = PluginSet()
    pre_score: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    pre_bind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    post_bind: PluginSet = PluginSet()
    multi_point: PluginSet = PluginSet()

    def at(self, point: str) -> PluginSet:
        """The set of a point by its wire name (`queueSort`, `multiPoint`)."""
        for name, info in type(self).model_fields.items():
            if info.alias == point:
                value: PluginSet = getattr(self, name)
                return value
        raise KeyError(point)


class PluginConfig(ConfigModel):
    name: Annotated[str, Field(min_length=1)]
    args: dict[str, Any] | None = None


class KubeSchedulerProfile(ConfigModel):
    scheduler_name: Annotated[str, Field(min_length=1)] | None = None
    percentage_of_nodes_to_score: Annotated[int, Bounds(0, 100)] | None = None
    plugins: Plugins | None = None
    plugin_config: list[PluginConfig] = []


class LeaderElectionConfiguration(ConfigModel):
    """client-go's LeaderElectionConfiguration; only `leases` locks exist here."""

    leader_elect: bool | None = None
    lease_duration: Duration | None = None
    renew_deadline: Duration | None = None
    retry_period: Duration | None = None
    resource_lock: Literal["leases"] | None = None
    resource_name: Annotated[str, Field(min_length=1)] | None = None
    resource_namespace: Annotated[str, Field(min_length=1)] | None = None

    @field_validator("lease_duration", "renew_deadline", "retry_period", mode="before")
    @classmethod
    def _durations(cls, value: Any) -> Any:
        return None if value is None else _duration(value)


class ClientConnection(ConfigModel):
    """Accepted so kube's files load; the cluster is chosen by --kubeconfig (this `kubeconfig`
    is used when no flag or $KUBECONFIG names one)."""

    kubeconfig: str | None = None
    accept_content_types: str | None = None
    content_type: str | None = None
    qps: float | None = None
    burst: int | None = None


class KubeSchedulerConfiguration(ConfigModel):
    """The file kube-scheduler reads with `--config`."""

    api_version: Literal["kubescheduler.config.k8s.io/v1"]
    kind: Literal["KubeSchedulerConfiguration"]
    profiles: list[KubeSchedulerProfile] = []
    percentage_of_nodes_to_score: Annotated[int, Bounds(0, 100)] | None = None
    pod_initial_backoff_seconds: Annotated[int, Bounds(1)] = 1
    pod_max_backoff_seconds: Annotated[int, Bounds(1)] = 10
    leader_election: LeaderElectionConfiguration = LeaderElectionConfiguration()
    client_connection: ClientConnection = ClientConnection()
    parallelism: Annotated[int, Bounds(1)] | None = None
    """Accepted, no effect: one scheduling cycle runs at a time."""
    enable_profiling: bool | None = None
    enable_contention_profiling: bool | None = None
    delay_cache_until_active: bool | None = None
    extenders: list[dict[str, Any]] = []

    @field_validator("extenders")
    @classmethod
    def _no_extenders(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if value:
            raise PydanticCustomError("extenders", "scheduler extenders are not supported")
        return value

    @model_validator(mode="after")
    def _backoff_order(self) -> KubeSchedulerConfiguration:
        if self.pod_max_backoff_seconds < self.pod_initial_backoff_seconds:
            raise _located(
                "podMaxBackoffSeconds",
                "order",
                f"must be greater than or equal to podInitialBackoffSeconds "
                f"({self.pod_max_backoff_seconds} < {self.pod_initial_backoff_seconds})",
                self.pod_max_backoff_seconds,
            )
        return self


def parse_configuration(doc: Any) -> KubeSchedulerConfiguration:
    """A KubeSchedulerConfiguration document checked; ValueError with one `path: problem` line
    per problem."""
    try:
        return KubeSchedulerConfiguration.model_validate(doc)
    except ValidationError as exc:
        raise ValueError("\n".join(field_problems(exc))) from None
