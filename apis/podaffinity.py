"""Inter-pod affinity and anti-affinity (core/v1 PodAffinityTerm, WeightedPodAffinityTerm,
PodAffinity, PodAntiAffinity), typed for the pod scheduler's InterPodAffinity plugin.

Selectors are kept as written (`LabelSelector` accepts any operator string, as metav1 does): a
requirement Kubernetes would refuse is reported by the plugin, naming the field, when it reads
the pod, so one bad pod never stops the engine.
"""

from __future__ import annotations

from apis.meta import Int32, KubeModel, LabelSelector

__all__ = ["PodAffinity", "PodAffinityTerm", "PodAntiAffinity", "WeightedPodAffinityTerm"]


class PodAffinityTerm(KubeModel):
    """Pods matching `labelSelector` in `namespaces` (none and no `namespaceSelector`: the
    pod's own namespace) or in the namespaces `namespaceSelector` selects (empty: all), counted
    per value of `topologyKey` among the nodes. `matchLabelKeys` / `mismatchLabelKeys` add
    `key In (value)` / `key NotIn (value)` for the pod's own value of each key."""

    label_selector: LabelSelector | None = None
    namespaces: list[str] | None = None
    topology_key: str = ""  # required by the API; an empty one is reported by the plugin
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None
    mismatch_label_keys: list[str] | None = None


class WeightedPodAffinityTerm(KubeModel):
    """A preferred term: `weight` (1..100) added per matching pod's domain."""

    weight: Int32
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeModel):
    """Run in the same domain as pods matching the terms."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = (
        None
    )


class PodAntiAffinity(KubeModel):
    """Stay out of the domains of pods matching the terms."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = (
        None
    )
