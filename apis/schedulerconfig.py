"""kube-scheduler's configuration file (`kubescheduler.config.k8s.io/v1`,
`KubeSchedulerConfiguration`) as pydantic models.

A scheduler-plugins user starts our pod scheduler with the file they already have: profiles
(`schedulerName`, `plugins` per extension point and `multiPoint`, `pluginConfig[].args`), the
queue's backoff, `leaderElection`, `percentageOfNodesToScore`. The models check what kube's
strict decoding and validation check (the args themselves: `apis.pluginargs`); the merge with
the default plugins and the placement of each plugin at its points need the plugin registry and
live in `placement.pods.config.profiles`. Every problem is a `path: problem` line naming the field
as written (`apis.configmodel.field_problems`)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from apis.configchecks import GO_DURATION_SECONDS, Int32, Int64, Range, invalid, raise_all
from apis.configmodel import (
    ConfigModel,
    Duration,
    duration_seconds,
    field_problems,
    located,
)
from apis.names import dns1123_label_problems, dns1123_subdomain_problems

__all__ = [
    "KUBE_DEFAULT_PLUGINS",
    "KUBE_SCHEDULER_API_VERSION",
    "KUBE_SCHEDULER_KIND",
    "MAX_LEASE_DURATION_SECONDS",
    "ClientConnection",
    "KubeSchedulerConfiguration",
    "KubeSchedulerProfile",
    "LeaderElectionConfiguration",
    "PluginConfig",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "lease_duration_problem",
    "parse_configuration",
]

KUBE_SCHEDULER_API_VERSION = "kubescheduler.config.k8s.io/v1"
KUBE_SCHEDULER_KIND = "KubeSchedulerConfiguration"
FLOAT32_MAX = 3.4028234663852886e38
MAX_LEASE_DURATION_SECONDS = 2**31 - 1
"""A Lease records its duration in `leaseDurationSeconds`, an int32: a longer leaseDuration
cannot be written (client-go would truncate it)."""

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
        "NodeDeclaredFeatures",
    }
)
"""kube-scheduler's default plugins: a profile may disable one we do not have (nothing to do),
never enable it."""


class PluginRef(ConfigModel):
    """One entry of `enabled` or `disabled`: a plugin name (`*` in disabled: every default) and,
    for scores, its weight (0 or unset: the default)."""

    name: Annotated[str, Field(min_length=1)]
    weight: Annotated[Int32, Range(0, None, "must not be negative")] | None = None


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


_PERCENTAGE = Range(0, 100, "not in valid range [0-100]")


class KubeSchedulerProfile(ConfigModel):
    scheduler_name: Annotated[str, Field(min_length=1)] | None = None
    percentage_of_nodes_to_score: Annotated[Int32, _PERCENTAGE] | None = None
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
        return None if value is None else duration_seconds(value)

    @field_validator("resource_lock", mode="before")
    @classmethod
    def _leases(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "leases":
            raise_all([invalid((), value, 'resourceLock value must be "leases"')])
        return value

    @model_validator(mode="after")
    def _fits_the_lease(self) -> LeaderElectionConfiguration:
        duration = self.lease_duration
        if duration is not None and duration > MAX_LEASE_DURATION_SECONDS:
            raise located("leaseDuration", "lease", lease_duration_problem(duration), duration)
        # the Lease is an object of the API: a name it would refuse never leads
        name, namespace = self.resource_name, self.resource_namespace
        raise_all(
            [invalid("resourceName", name, p) for p in dns1123_subdomain_problems(name or "x")]
            + [
                invalid("resourceNamespace", namespace, p)
                for p in dns1123_label_problems(namespace or "x")
            ]
        )
        return self


def lease_duration_problem(seconds: float) -> str:
    """Why a lease duration of `seconds` (above MAX_LEASE_DURATION_SECONDS) is refused."""
    return (
        f"must be at most {MAX_LEASE_DURATION_SECONDS}s, the Lease's leaseDurationSeconds is "
        f"an int32 (got {seconds:.0f}s)"
    )


class ClientConnection(ConfigModel):
    """Accepted so kube's files load; the cluster is chosen by --kubeconfig (this `kubeconfig`
    is used when no flag or $KUBECONFIG names one)."""

    kubeconfig: str | None = None
    accept_content_types: str | None = None
    content_type: str | None = None
    qps: float | None = None
    burst: Annotated[Int32, Range(0, None, "must be non-negative")] | None = None

    @field_validator("qps")
    @classmethod
    def _float32(cls, value: float | None) -> float | None:
        if value is not None and not abs(value) <= FLOAT32_MAX:  # also NaN and inf
            raise_all([invalid((), value, "must be a number a float32 holds")])
        return value


class KubeSchedulerConfiguration(ConfigModel):
    """The file kube-scheduler reads with `--config`."""

    api_version: Literal["kubescheduler.config.k8s.io/v1"]
    kind: Literal["KubeSchedulerConfiguration"]
    profiles: list[KubeSchedulerProfile] = []
    percentage_of_nodes_to_score: Annotated[Int32, _PERCENTAGE] | None = None
    # kube keeps these as int64 but multiplies them into a Go Duration: beyond its ~292 years
    # the backoff would wrap around; here it is refused.
    pod_initial_backoff_seconds: Annotated[
        Int64, Range(1, None, "must be greater than 0"), GO_DURATION_SECONDS
    ] = 1
    pod_max_backoff_seconds: Annotated[Int64, GO_DURATION_SECONDS] = 10
    leader_election: LeaderElectionConfiguration = LeaderElectionConfiguration()
    client_connection: ClientConnection = ClientConnection()
    parallelism: (
        Annotated[Int32, Range(1, None, "should be an integer value greater than zero")] | None
    ) = None
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
            value = self.pod_max_backoff_seconds
            raise_all([invalid("podMaxBackoffSeconds", value, _BACKOFF_ORDER)])
        return self


_BACKOFF_ORDER = "must be greater than or equal to PodInitialBackoffSeconds"


def parse_configuration(doc: Any) -> KubeSchedulerConfiguration:
    """A KubeSchedulerConfiguration document checked; ValueError with one `path: problem` line
    per problem."""
    try:
        return KubeSchedulerConfiguration.model_validate(doc)
    except ValidationError as exc:
        raise ValueError("\n".join(_with_backoff_order(field_problems(exc), doc))) from None


def _with_backoff_order(lines: list[str], doc: Any) -> list[str]:
    """kube compares the two backoffs even when the initial one is refused (`-5` and `-10`:
    two problems at once); the model's own check runs only once every field is valid."""
    if not isinstance(doc, dict) or any(x.startswith("podMaxBackoffSeconds:") for x in lines):
        return lines
    initial = doc.get("podInitialBackoffSeconds", 1)
    maximum = doc.get("podMaxBackoffSeconds", 10)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (initial, maximum)):
        return lines
    if maximum >= initial:
        return lines
    line = f"podMaxBackoffSeconds: Invalid value: {maximum}: {_BACKOFF_ORDER}"
    after = [i for i, x in enumerate(lines) if x.startswith("podInitialBackoffSeconds:")]
    at = after[-1] + 1 if after else len(lines)
    return [*lines[:at], line, *lines[at:]]
