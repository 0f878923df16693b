"""OCM's add-on API objects (`addon.open-cluster-management.io/v1alpha1`) a hub admin creates
to roll our pod-level add-ons out to managed clusters: an `AddOnTemplate` holds the manifests
the add-on agent applies on each cluster, a `ClusterManagementAddOn` with
`installStrategy.type: Placements` installs it on the clusters the named Placements select.

Typed as far as `placement validate` needs to check what a hub admin writes (required fields,
enums, the rollout strategy); the manifests themselves are kept as they are (any kind), and
fields we do not use (registration's custom signers, configs' status) are kept untyped."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from apis.meta import Condition, KubeModel, KubeObject
from apis.rollout import RolloutStrategy

__all__ = [
    "ADDON_GROUP",
    "AddOnConfig",
    "AddOnTemplate",
    "AddOnTemplateSpec",
    "ClusterManagementAddOn",
    "ClusterManagementAddOnSpec",
    "InstallStrategy",
    "PlacementStrategy",
]

ADDON_GROUP = "addon.open-cluster-management.io"


class ManifestsTemplate(KubeModel):
    """The manifests the agent applies on the managed cluster (`ManifestWorkSpec.workload`)."""

    manifests: list[dict[str, Any]] = Field(default_factory=list)


class AgentSpec(KubeModel):
    """`work.ManifestWorkSpec`: the workload; deleteOption, manifestConfigs, executor untyped."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"deleteOption", "manifestConfigs", "executor"}
    )

    workload: ManifestsTemplate = Field(default_factory=ManifestsTemplate)


class HubPermission(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"currentCluster", "singleNamespace"})

    type: Literal["CurrentCluster", "SingleNamespace"]


class KubeClientRegistration(KubeModel):
    hub_permissions: list[HubPermission] | None = None


class Registration(KubeModel):
    """How the agent registers with the hub (a hub kube client, or a custom signer)."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"customSigner"})

    type: Literal["KubeClient", "CustomSigner"]
    kube_client: KubeClientRegistration | None = None


class AddOnTemplateSpec(KubeModel):
    addon_name: Annotated[str, Field(min_length=1)]
    agent_spec: AgentSpec
    registration: list[Registration] | None = None


class AddOnTemplate(KubeObject):
    """The manifests of an add-on's agent, applied on every cluster the add-on is enabled on."""

    GROUP: ClassVar[str] = ADDON_GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "AddOnTemplate"
    PLURAL: ClassVar[str] = "addontemplates"
    NAMESPACED: ClassVar[bool] = False

    spec: AddOnTemplateSpec


class AddOnConfig(KubeModel):
    """A configuration object of an add-on: its group, resource, name and namespace."""

    group: str = ""
    resource: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    namespace: str | None = None


class ConfigMeta(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"defaultConfig"})

    group: str = ""
    resource: Annotated[str, Field(min_length=1)]


class PlacementStrategy(KubeModel):
    """Install on the clusters this Placement selects, rolled out as `rolloutStrategy` says."""

    namespace: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    configs: list[AddOnConfig] | None = None
    rollout_strategy: RolloutStrategy | None = None


class InstallStrategy(KubeModel):
    type: Literal["Manual", "Placements"] = "Manual"
    placements: list[PlacementStrategy] | None = None


class AddOnMeta(KubeModel):
    display_name: str | None = None
    description: str | None = None


class ClusterManagementAddOnSpec(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"addOnConfiguration"})

    add_on_meta: AddOnMeta | None = None
    supported_configs: list[ConfigMeta] | None = None
    install_strategy: InstallStrategy | None = None


class InstallProgression(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"configReferences"})

    namespace: str
    name: str
    conditions: list[Condition] | None = None


class ClusterManagementAddOnStatus(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"defaultconfigReferences"})

    install_progressions: list[InstallProgression] | None = None


class ClusterManagementAddOn(KubeObject):
    """An add-on the hub manages: what configures it and which clusters get it."""

    GROUP: ClassVar[str] = ADDON_GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "ClusterManagementAddOn"
    PLURAL: ClassVar[str] = "clustermanagementaddons"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("cma",)
    HAS_STATUS: ClassVar[bool] = True

    spec: ClusterManagementAddOnSpec
    status: ClusterManagementAddOnStatus | None = None
