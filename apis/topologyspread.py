"""`TopologySpreadConstraint` (core/v1): how a pod asks to be spread over topology domains,
and the checks the API server makes on it.

The fields stay loosely typed (`str`, `int`, all optional): a pod whose constraint the API
server would refuse (`maxSkew: 0`, `whenUnsatisfiable: Sometimes`) still reaches the scheduler
as an object, and the PodTopologySpread plugin reports it unschedulable with the field named
(`constraint_problems`) instead of failing to read the pod.
"""

from __future__ import annotations

from collections.abc import Sequence

from apis.meta import Int32, KubeModel, LabelSelector

__all__ = [
    "DO_NOT_SCHEDULE",
    "HONOR",
    "IGNORE",
    "SCHEDULE_ANYWAY",
    "TopologySpreadConstraint",
    "constraint_problems",
    "constraints_problems",
]

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
_ACTIONS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
_POLICIES = (HONOR, IGNORE)


class TopologySpreadConstraint(KubeModel):
    """One constraint of `spec.topologySpreadConstraints`.

    Defaults as kube reads them: `whenUnsatisfiable` is required (the API server defaults
    nothing), `minDomains` absent is 1, `nodeAffinityPolicy` absent is Honor,
    `nodeTaintsPolicy` absent is Ignore, a missing `labelSelector` selects no pod."""

    max_skew: Int32 | None = None
    topology_key: str | None = None
    when_unsatisfiable: str | None = None
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None

    @property
    def hard(self) -> bool:
        return self.when_unsatisfiable == DO_NOT_SCHEDULE

    @property
    def honor_affinity(self) -> bool:
        return (self.node_affinity_policy or HONOR) == HONOR

    @property
    def honor_taints(self) -> bool:
        return (self.node_taints_policy or IGNORE) == HONOR


def _quoted(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def constraint_problems(constraint: TopologySpreadConstraint, path: str) -> list[str]:
    """What the API server's validation says of one constraint, as `path.field: problem`
    lines (empty: valid). The label selector's requirements are checked where it is built."""
    c = constraint
    problems: list[str] = []
    if c.max_skew is None or c.max_skew <= 0:
        problems.append(f"{path}.maxSkew: must be greater than zero (got {c.max_skew})")
    if not c.topology_key:
        problems.append(f"{path}.topologyKey: Required value: can not be empty")
    if c.when_unsatisfiable is None:
        problems.append(f"{path}.whenUnsatisfiable: Required value")
    elif c.when_unsatisfiable not in _ACTIONS:
        problems.append(
            f"{path}.whenUnsatisfiable: Unsupported value: {_quoted(c.when_unsatisfiable)}: "
            f'supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"'
        )
    if c.min_domains is not None:
        if c.min_domains <= 0:
            problems.append(f"{path}.minDomains: must be greater than 0 (got {c.min_domains})")
        elif c.when_unsatisfiable != DO_NOT_SCHEDULE:
            problems.append(
                f"{path}.minDomains: can only use minDomains if whenUnsatisfiable="
                f"{DO_NOT_SCHEDULE}, not {c.when_unsatisfiable}"
            )
    for name, value in (
        ("nodeAffinityPolicy", c.node_affinity_policy),
        ("nodeTaintsPolicy", c.node_taints_policy),
    ):
        if value is not None and value not in _POLICIES:
            problems.append(
                f"{path}.{name}: Unsupported value: {_quoted(value)}: "
                f'supported values: "{HONOR}", "{IGNORE}"'
            )
    # A key also in labelSelector is not refused: API servers that merge matchLabelKeys into
    # the selector at creation (1.34+) store pods with both.
    seen: set[str] = set()
    for index, key in enumerate(c.match_label_keys or ()):
        if key in seen:
            problems.append(f"{path}.matchLabelKeys[{index}]: Duplicate value: {_quoted(key)}")
        seen.add(key)
    return problems


def constraints_problems(constraints: Sequence[TopologySpreadConstraint], path: str) -> list[str]:
    """Every constraint's problems, plus kube's rule that no two constraints share both the
    topologyKey and whenUnsatisfiable."""
    problems: list[str] = []
    pairs: set[tuple[str | None, str | None]] = set()
    for index, constraint in enumerate(constraints):
        where = f"{path}[{index}]"
        problems.extend(constraint_problems(constraint, where))
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if pair in pairs:
            problems.append(
                f"{where}.{{topologyKey, whenUnsatisfiable}}: Duplicate value: "
                f"{{{_quoted(pair[0])}, {_quoted(pair[1])}}}"
            )
        pairs.add(pair)
    return problems
