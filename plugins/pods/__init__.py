"""The pod scheduler's built-in plugins under kube-scheduler's names, and its defaults.

`POD_PLUGINS` maps a plugin name to a factory taking the plugin's args as its typed model
(`apis.pluginargs.PLUGIN_ARGS[name]`, which the configuration validated; a mapping is
validated by that model first and a bad one raises ValueError("<field>: <problem>")).
`DEFAULT_PLUGINS` is the default profile in run order; `DEFAULT_SCORE_WEIGHTS` are
kube-scheduler's default weights.

Each plugin lives in its family's folder, named as kube-scheduler names its plugin folders
(`noderesources/`, `interpodaffinity/`, `volumebinding/`, ...) or scheduler-plugins its packages
(`coscheduling/`, `capacityscheduling/`), with the helpers only it uses; what several families
share is in `helper/`. A family imports only what plugins see of the engine
(`placement.pods.cluster`, `.framework`, `.preemption`, `.status`, `.dra`) and `helper/`, never
another family (tests/test_architecture.py, docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from plugins.pods.capacityscheduling.capacity_scheduling import CapacityScheduling
from plugins.pods.coscheduling.coscheduling import Coscheduling
from plugins.pods.defaultpreemption.default_preemption import DefaultPreemption
from plugins.pods.dynamicresources.dynamicresources import DynamicResources
from plugins.pods.imagelocality.image_locality import ImageLocality
from plugins.pods.interpodaffinity.plugin import InterPodAffinity
from plugins.pods.nodeaffinity.node_affinity import NodeAffinity
from plugins.pods.nodedeclaredfeatures.node_declared_features import NodeDeclaredFeatures
from plugins.pods.nodename.node_name import NodeName
from plugins.pods.nodeports.node_ports import NodePorts
from plugins.pods.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from plugins.pods.noderesources.fit import NodeResourcesFit
from plugins.pods.nodeunschedulable.node_unschedulable import NodeUnschedulable
from plugins.pods.nodevolumelimits.node_volume_limits import NodeVolumeLimits
from plugins.pods.podtopologyspread.plugin import PodTopologySpread
from plugins.pods.queuesort.priority_sort import PrioritySort
from plugins.pods.tainttoleration.taint_toleration import TaintToleration
from plugins.pods.unsupportedfeatures.unsupported_features import UnsupportedFeatures
from plugins.pods.volumebinding.volume_binding import VolumeBinding
from plugins.pods.volumerestrictions.volume_restrictions import VolumeRestrictions
from plugins.pods.volumezone.volume_zone import VolumeZone

__all__ = [
    "DEFAULT_PLUGINS",
    "DEFAULT_SCORE_WEIGHTS",
    "POD_PLUGINS",
    "CapacityScheduling",
    "Coscheduling",
    "DynamicResources",
    "ImageLocality",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeDeclaredFeatures",
    "NodeName",
    "NodePorts",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "NodeVolumeLimits",
    "PluginFactory",
    "PodTopologySpread",
    "PrioritySort",
    "TaintToleration",
    "UnsupportedFeatures",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
]

PluginFactory = Callable[[Any], object]
"""The plugin's args model (or a mapping, or None for the defaults) -> the plugin."""

_FACTORIES: dict[str, PluginFactory] = {
    "PrioritySort": PrioritySort.from_args,
    "NodeUnschedulable": NodeUnschedulable.from_args,
    "NodeName": NodeName.from_args,
    "UnsupportedFeatures": UnsupportedFeatures.from_args,
    "TaintToleration": TaintToleration.from_args,
    "NodeAffinity": NodeAffinity.from_args,
    "NodePorts": NodePorts.from_args,
    "NodeResourcesFit": NodeResourcesFit.from_args,
    "PodTopologySpread": PodTopologySpread.from_args,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocation.from_args,
    "ImageLocality": ImageLocality.from_args,
    "DefaultPreemption": DefaultPreemption.from_args,
    "CapacityScheduling": CapacityScheduling.from_args,
    "Coscheduling": Coscheduling.from_args,
    "VolumeRestrictions": VolumeRestrictions.from_args,
    "NodeVolumeLimits": NodeVolumeLimits.from_args,
    "VolumeBinding": VolumeBinding.from_args,
    "VolumeZone": VolumeZone.from_args,
    "InterPodAffinity": InterPodAffinity.from_args,
    "NodeDeclaredFeatures": NodeDeclaredFeatures.from_args,
    "DynamicResources": DynamicResources.from_args,
}

POD_PLUGINS: Mapping[str, PluginFactory] = MappingProxyType(_FACTORIES)

DEFAULT_PLUGINS: tuple[str, ...] = tuple(
    name
    for name in (
        "PrioritySort",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        # kube's volume plugins, in its order (VolumeBinding's PreBind binds the claims).
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        # Devices of resource claims (DRA); its PostFilter runs before the preemptions, as kube's.
        "DynamicResources",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        # Last of kube's defaults: a pod needing a feature only goes to nodes declaring it.
        "NodeDeclaredFeatures",
        # PodGroup gangs (its queue order replaces PrioritySort's, its PostFilter runs before
        # DefaultPreemption: gang preemption); idle without PodGroups.
        "Coscheduling",
        # ElasticQuota min/max (PreFilter, Reserve, preemption hooks); idle without quotas.
        "CapacityScheduling",
        "DefaultPreemption",
    )
)

DEFAULT_SCORE_WEIGHTS: Mapping[str, int] = MappingProxyType(
    {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "NodeResourcesBalancedAllocation": 1,
        "PodTopologySpread": 2,
        "VolumeBinding": 1,
        "ImageLocality": 1,
        "InterPodAffinity": 2,
    }
)
