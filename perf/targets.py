"""What the scale harness measures against and at which sizes: the scenario names, the targets
(docs/performance.md, 'Targets'; each attached to the case it judges) and the sizes of each run mode
(smoke, quick, full). The scenarios themselves are `perf.scenarios` (the hub) and
`perf.pod_scenarios` (the local cluster's pod scheduler)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

__all__ = [
    "COLD",
    "CYCLE",
    "E2E",
    "ENGINE",
    "FANOUT",
    "FULL",
    "HUB_VS_OCM",
    "KUBE_ANTI",
    "KUBE_BASIC",
    "KUBE_FULL",
    "KUBE_GANGS",
    "KUBE_PREEMPTION",
    "KUBE_QUICK",
    "KUBE_SCENARIOS",
    "KUBE_SMOKE",
    "KUBE_SPREAD",
    "KUBE_TARGETS",
    "KUBE_THRESHOLDS",
    "MEMORY",
    "OCM_SHAPE",
    "POD_E2E",
    "POD_ENGINE",
    "POD_MEMORY",
    "POD_PREEMPTION",
    "POD_SCENARIOS",
    "POD_VS_KUBE",
    "QUICK",
    "SCENARIOS",
    "SMOKE",
    "SPREAD",
    "TARGETS",
    "WIDE",
    "WIDE_SHARE",
    "Sizes",
    "Target",
    "target_limit",
]

CYCLE, SPREAD, COLD, FANOUT, MEMORY = "cycle", "spread", "cold-start", "fan-out", "memory"
POD_ENGINE, POD_PREEMPTION = "pod-engine", "pod-preemption"
POD_E2E, POD_MEMORY = "pod-e2e", "pod-memory"
POD_SCENARIOS = (POD_ENGINE, POD_PREEMPTION, POD_E2E, POD_MEMORY)
# kube scheduler_perf's workloads by their names there (issue 29), each through the engine
# (label ENGINE) and end to end (label E2E); `perf.kube_scenarios`.
KUBE_BASIC, KUBE_ANTI = "pod-SchedulingBasic", "pod-SchedulingPodAntiAffinity"
KUBE_SPREAD, KUBE_PREEMPTION, KUBE_GANGS = (
    "pod-TopologySpreading",
    "pod-PreemptionBasic",
    "pod-gangs",
)
KUBE_SCENARIOS = (KUBE_BASIC, KUBE_ANTI, KUBE_SPREAD, KUBE_PREEMPTION, KUBE_GANGS)
ENGINE, E2E = "engine", "end to end"
POD_VS_KUBE = "pod-vs-kube"
"""Our pod scheduler beside kube-scheduler on one real kube-apiserver (`perf.vs_kube`)."""
HUB_VS_OCM = "hub-vs-ocm"
"""The hub controller beside OCM's placement controller on one real kube-apiserver
(`perf.vs_ocm`)."""
SCENARIOS = (
    CYCLE, SPREAD, COLD, FANOUT, MEMORY, *POD_SCENARIOS, *KUBE_SCENARIOS, POD_VS_KUBE, HUB_VS_OCM
)  # fmt: skip
OCM_SHAPE = "OCM shape"  # the cold start's case on OCM's benchmark hub (`controller_run.py`)
WIDE_SHARE = 0.2
"""Issue 20's realistic mix: a fifth of the placements select hundreds to all clusters."""
WIDE = f"wide workload ({WIDE_SHARE:.0%} wide)"  # its cold start's case


@dataclass(frozen=True)
class Target:
    """A target (docs/performance.md): the case at this size must stay at or under `limit` (or,
    for a speed-up, reach it: `at_least`)."""

    scenario: str
    label: str
    clusters: int
    placements: int
    limit: float
    unit: str
    text: str
    at_least: bool = False  # a speed-up against the case's baseline
    rate: bool = False  # the median itself must reach `limit` (pods/s)
    detail: str | None = None  # judge this detail of the case's first run, not its median
    kube: float | None = None  # kube scheduler_perf's threshold for the same shape, same unit

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.scenario, self.label, self.clusters, self.placements)

    def judge(self, value: float) -> bool:
        return value >= self.limit if self.at_least or self.rate else value <= self.limit

    def on(self, detail: str, limit: float, unit: str, text: str) -> Target:
        """A second target on the same case, judging one of its details."""
        return replace(self, limit=limit, unit=unit, text=text, detail=detail, at_least=False)


# The raised hub bars (the first campaign met 1 ms / 5 ms, 50 ms and 500x, 60 s, 3 s
# and 1 GiB; those figures stay in RESULTS.md). Not measured here: "faster than OCM's own Go
# scheduler on the same fleet at every size" (no Go toolchain on the benchmark machines).
_COLD_OCM = Target(COLD, OCM_SHAPE, 5_000, 10_000, 15, "s", "cold start 5,000 x 10,000 <= 15 s")
_COLD_WIDE = Target(COLD, WIDE, 5_000, 2_000, 60, "s", "cold start 5,000 x 2,000, 20% wide <= 60 s")
TARGETS: tuple[Target, ...] = (
    Target(
        CYCLE, "scheduler", 10_000, 1, 0.0001, "s", "one placement, warm, 10k clusters <= 0.1 ms"
    ),
    Target(CYCLE, "scheduler", 100_000, 1, 0.0005, "s", "one placement, warm, 100k <= 0.5 ms"),
    Target(SPREAD, "vectorized", 10_000, 1, 0.020, "s", "EvenSpread 1,000 of 10,000 <= 20 ms"),
    Target(SPREAD, "vectorized", 1_000, 1, 1000, "x", "EvenSpread vs the oracle >= 1,000x", True),
    _COLD_OCM,
    _COLD_OCM.on("writes_per_placement", 4, "requests", "same: <= 4 write requests per placement"),
    Target(FANOUT, "controller", 5_000, 1_000, 0.3, "s", "label change, 1,000 re-queued <= 0.3 s"),
    _COLD_WIDE,
    _COLD_WIDE.on(
        "peak_rss_mib", 512, "MiB", "same: controller peak RSS (server apart) <= 512 MiB"
    ),
    Target(MEMORY, "controller", 100_000, 10_000, 512, "MiB", "RSS 100k x 10k <= 512 MiB"),
    Target(MEMORY, "core", 100_000, 10_000, 512, "MiB", "(core alone) RSS 100k x 10k <= 512 MiB"),
    Target(
        POD_ENGINE,
        "engine",
        5_000,
        10_000,
        5_000,
        "pods/s",
        "pod engine, no I/O, 5,000 nodes x 10,000 pending >= 5,000 pods/s",
        rate=True,
    ),
    Target(
        POD_E2E,
        "scheduler",
        5_000,
        10_000,
        1_000,
        "pods/s",
        "pod scheduler end to end, 5,000 nodes x 10,000 pods >= 1,000 pods/s",
        rate=True,
    ),
    Target(
        POD_PREEMPTION,
        "engine",
        5_000,
        50_000,
        0.050,
        "s",
        "preemption decision, 5,000 nodes x 50,000 running <= 50 ms",
    ),
    Target(
        POD_MEMORY, "engine", 5_000, 50_000, 500, "MiB", "pod engine RSS 5,000 x 50,000 <= 500 MiB"
    ),
)


# --- issue 29: scheduler_perf's workloads, engine and end to end ---------------------------------

KUBE_FULL = {  # scenario: (nodes, pods running before, measured pods); gangs: (nodes, G, M)
    KUBE_BASIC: (5_000, 1_000, 10_000),
    KUBE_ANTI: (5_000, 1_000, 1_000),
    KUBE_SPREAD: (5_000, 1_000, 5_000),
    KUBE_PREEMPTION: (5_000, 4, 1_000),  # running: low-priority pods per node
    KUBE_GANGS: (1_000, 100, 50),
}
KUBE_QUICK = {
    KUBE_BASIC: (1_000, 200, 2_000),
    KUBE_ANTI: (1_000, 200, 200),
    KUBE_SPREAD: (1_000, 200, 1_000),
    KUBE_PREEMPTION: (1_000, 4, 200),
    KUBE_GANGS: (200, 20, 50),
}
KUBE_SMOKE = {
    KUBE_BASIC: (50, 20, 100),
    KUBE_ANTI: (60, 20, 30),
    KUBE_SPREAD: (60, 30, 90),
    KUBE_PREEMPTION: (20, 4, 10),
    KUBE_GANGS: (4, 5, 4),
}
# kube's thresholds (pods/s, the Average of SchedulingThroughput) at 5,000 nodes on a real API
# server, from kubernetes/kubernetes test/integration/scheduler_perf: SchedulingBasic 680 and
# TopologySpreading 460 (issue 29), SchedulingPodAntiAffinity 60 (affinity/performance-config.yaml,
# 5000Nodes_2000Pods). PreemptionBasic has none (its 5000Nodes workload is commented out there
# as always failing, kubernetes#108308), gangs are not a scheduler_perf workload.
KUBE_THRESHOLDS = {KUBE_BASIC: 680.0, KUBE_ANTI: 60.0, KUBE_SPREAD: 460.0}


def _kube(scenario: str, label: str, limit: float, unit: str, text: str) -> Target:
    nodes, running, measured = KUBE_FULL[scenario]
    pods = running * measured if scenario == KUBE_GANGS else measured
    rate = unit.endswith("/s")
    name = scenario.removeprefix("pod-")
    return Target(
        scenario,
        label,
        nodes,
        pods,
        limit,
        unit,
        f"{name}, {label}: {text}",
        rate=rate,
        kube=KUBE_THRESHOLDS.get(scenario) if rate else None,
    )


KUBE_TARGETS = (
    _kube(KUBE_BASIC, ENGINE, 5_000, "pods/s", "5,000 nodes x 10,000 pods >= 5,000 pods/s"),
    _kube(KUBE_BASIC, E2E, 1_000, "pods/s", "5,000 nodes x 10,000 pods >= 1,000 pods/s"),
    _kube(KUBE_ANTI, ENGINE, 1_500, "pods/s", "5,000 nodes x 1,000 pods >= 1,500 pods/s"),
    _kube(KUBE_ANTI, E2E, 500, "pods/s", "5,000 nodes x 1,000 pods >= 500 pods/s"),
    _kube(KUBE_SPREAD, ENGINE, 2_000, "pods/s", "5,000 nodes x 5,000 pods >= 2,000 pods/s"),
    _kube(KUBE_SPREAD, E2E, 700, "pods/s", "5,000 nodes x 5,000 pods >= 700 pods/s"),
    _kube(KUBE_PREEMPTION, ENGINE, 0.020, "s", "5,000 full nodes, 1,000 preemptors <= 20 ms each"),
    _kube(KUBE_PREEMPTION, E2E, 100, "preemptions/s", "5,000 full nodes >= 100 preemptions/s"),
    _kube(KUBE_GANGS, ENGINE, 2.0, "s", "100 gangs x 50 on 1,000 nodes, whole or none <= 2 s"),
    _kube(KUBE_GANGS, E2E, 4.0, "s", "100 gangs x 50 on 1,000 nodes, whole or none <= 4 s"),
)
TARGETS = (*TARGETS, *KUBE_TARGETS)


@dataclass(frozen=True)
class Sizes:
    """The sizes each scenario runs at in one run mode."""

    cycle: Sequence[int]
    loop: Sequence[int]  # the per-cluster loop, at these of the cycle's sizes
    spread: Sequence[int]  # N; n = N / 10
    oracle: Sequence[int]
    cold: Sequence[tuple[int, int]]
    mixed: Sequence[tuple[int, int]]
    fanout: Sequence[tuple[int, int]]
    core: Sequence[tuple[int, int]]
    controller_memory: Sequence[tuple[int, int]]
    # the pod scheduler: (nodes, pending pods); preemption and memory (nodes, all pods)
    pod_engine: Sequence[tuple[int, int]] = ()
    pod_preemption: Sequence[tuple[int, int]] = ()
    pod_e2e: Sequence[tuple[int, int]] = ()
    pod_memory: Sequence[tuple[int, int]] = ()
    # the mixed workload with WIDE_SHARE of wide placements (issue 20)
    wide: Sequence[tuple[int, int]] = ()


SMOKE = Sizes(
    cycle=(300, 1_000),
    loop=(300, 1_000),
    spread=(100, 300),
    oracle=(100,),
    cold=((100, 20), (200, 20), (200, 40)),
    mixed=((100, 20),),
    wide=((100, 20),),
    fanout=((100, 20),),
    core=((200, 20), (400, 40)),
    controller_memory=((200, 20),),
    pod_engine=((50, 300), (100, 300)),
    pod_preemption=((50, 500),),
    pod_e2e=((20, 100),),
    pod_memory=((50, 500),),
)
QUICK = Sizes(
    cycle=(1_000, 3_000, 10_000, 30_000, 100_000),
    loop=(1_000, 3_000, 10_000, 30_000),
    spread=(300, 1_000, 3_000, 10_000),
    oracle=(300, 1_000),
    cold=((1_000, 250), (1_000, 500), (1_000, 1_000), (2_000, 1_000), (4_000, 1_000)),
    mixed=((2_000, 500),),
    wide=((2_000, 500),),
    fanout=((5_000, 1_000),),
    core=((3_000, 300), (10_000, 1_000)),
    controller_memory=(),
    pod_engine=((1_000, 10_000), (5_000, 10_000)),
    pod_preemption=((1_000, 10_000),),
    pod_e2e=((100, 1_000),),
    pod_memory=((1_000, 10_000),),
)
FULL = Sizes(
    cycle=(1_000, 3_000, 10_000, 30_000, 100_000),
    loop=(1_000, 3_000, 10_000, 30_000, 100_000),
    spread=(300, 1_000, 2_000, 3_000, 10_000, 30_000),
    oracle=(300, 1_000, 2_000),
    cold=(
        (1_000, 1_000),
        (1_000, 3_000),
        (1_000, 10_000),
        (2_000, 1_000),
        (5_000, 1_000),
        (10_000, 1_000),
        (20_000, 1_000),
        (5_000, 10_000),
    ),
    mixed=((5_000, 1_000), (5_000, 10_000)),
    wide=((5_000, 2_000),),
    fanout=((5_000, 250), (5_000, 1_000), (5_000, 3_000)),
    core=((10_000, 1_000), (30_000, 3_000), (100_000, 10_000)),
    controller_memory=((20_000, 2_000), (100_000, 10_000)),
    pod_engine=((1_000, 10_000), (5_000, 10_000), (15_000, 10_000)),
    pod_preemption=((1_000, 10_000), (5_000, 50_000)),
    pod_e2e=((100, 1_000), (1_000, 5_000), (5_000, 10_000)),
    pod_memory=((1_000, 10_000), (5_000, 50_000)),
)


def target_limit(scenario: str, label: str, detail: str | None = None) -> tuple[float, str] | None:
    """The first target's limit on `scenario`'s `label` cases (on their median, or on
    `detail`) and its text, for the plots' dashed lines."""
    for target in TARGETS:
        if (target.scenario, target.label, target.detail) == (scenario, label, detail):
            return target.limit, target.text
    return None
