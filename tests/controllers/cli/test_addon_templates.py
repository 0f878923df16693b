"""Our pod-level add-ons delivered the OCM way: the kustomize manifests of config/addons render,
the generated AddOnTemplates hold exactly those renders (no drift), the models accept the
objects and refuse broken ones, and the ClusterManagementAddOns install on the sample
Placement's clusters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.addons import AddOnTemplate, ClusterManagementAddOn
from apis.errors import ModelError
from apis.registry import parse_as, parse_object
from controllers.cli.addon_templates import (
    ADDONS,
    OUT,
    PLACEMENT,
    PLACEMENT_NAMESPACE,
    kustomize,
    render_all,
)
from controllers.cli.crds import SOURCE_CONFIG
from placement.pods.config.scheduler_config import load_config
from plugins.pods import POD_PLUGINS

ADDON_DIR = SOURCE_CONFIG / "addons"


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# Every kustomization shipped under config/, as shipped: none may need files made first.
KUSTOMIZATIONS = sorted(
    str(path.parent.relative_to(SOURCE_CONFIG))
    for path in SOURCE_CONFIG.rglob("kustomization.yaml")
)


@pytest.mark.parametrize("folder", KUSTOMIZATIONS)
def test_every_kustomization_we_ship_renders_with_kubectl_kustomize(folder: str) -> None:
    rendered = kustomize(SOURCE_CONFIG / folder)
    assert rendered
    for doc in rendered:
        assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"]


def test_the_generated_templates_are_the_current_renders() -> None:
    for name, text in render_all().items():
        assert (OUT / name).read_text() == text, (
            f"{name}: run python -m controllers.cli.addon_templates"
        )


@pytest.mark.parametrize("name", sorted(ADDONS))
def test_each_addon_is_a_template_and_a_placement_installed_management_addon(name: str) -> None:
    template, managed = (parse_object(d) for d in docs(OUT / f"{name}.yaml"))
    assert isinstance(template, AddOnTemplate) and isinstance(managed, ClusterManagementAddOn)
    assert template.spec.addon_name == name == managed.metadata.name
    manifests = template.spec.agent_spec.workload.manifests
    assert manifests == kustomize(ADDON_DIR / ADDONS[name][0])
    strategy = managed.spec.install_strategy
    assert strategy is not None and strategy.type == "Placements"
    [target] = strategy.placements or []
    assert (target.namespace, target.name) == (PLACEMENT_NAMESPACE, PLACEMENT)
    assert target.rollout_strategy is not None and target.rollout_strategy.type == "Progressive"
    [config] = managed.spec.supported_configs or []
    assert (config.group, config.resource) == ("addon.open-cluster-management.io", "addontemplates")


def test_the_pod_scheduler_agent_runs_the_scheduler_with_its_status_controller() -> None:
    manifests = kustomize(ADDON_DIR / "pod-scheduler")
    [deployment] = [m for m in manifests if m["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][:2] == ["scheduler", "run"]
    assert "--leader-elect" in container["args"]
    assert "--status-controller=on" in container["args"]
    [config] = [m for m in manifests if m["kind"] == "ConfigMap"]
    scheduler = yaml.safe_load(config["data"]["config.yaml"])
    assert scheduler["kind"] == "KubeSchedulerConfiguration"  # kube-scheduler's own format
    loaded = load_config(scheduler, POD_PLUGINS)
    assert loaded.scheduler_names == ("ocm-pod-scheduler",)
    lease = loaded.leader_election
    assert (lease.lease_name, lease.lease_namespace) == ("ocm-pod-scheduler", "ocm-pod-scheduler")


def test_the_sample_placement_selects_the_labelled_clusters() -> None:
    objects = [parse_object(d) for d in docs(ADDON_DIR / "ocm" / "placement.yaml")]
    kinds = [o.KIND for o in objects]
    assert kinds == ["Namespace", "ManagedClusterSetBinding", "Placement"]
    placement = objects[2]
    assert (placement.metadata.namespace, placement.metadata.name) == (
        PLACEMENT_NAMESPACE,
        PLACEMENT,
    )


def template(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "AddOnTemplate",
        "metadata": {"name": "x"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        pytest.param(template(agentSpec={}), "spec.addonName", id="template-without-name"),
        pytest.param(template(addonName="x"), "spec.agentSpec", id="template-without-agent"),
        pytest.param(
            {
                "apiVersion": "addon.open-cluster-management.io/v1alpha1",
                "kind": "ClusterManagementAddOn",
                "metadata": {"name": "x"},
                "spec": {"installStrategy": {"type": "Everywhere"}},
            },
            "spec.installStrategy.type",
            id="unknown-install-strategy",
        ),
        pytest.param(
            {
                "apiVersion": "addon.open-cluster-management.io/v1alpha1",
                "kind": "ClusterManagementAddOn",
                "metadata": {"name": "x"},
                "spec": {
                    "installStrategy": {
                        "type": "Placements",
                        "placements": [
                            {
                                "name": "p",
                                "namespace": "n",
                                "rolloutStrategy": {
                                    "type": "Progressive",
                                    "progressive": {"maxConcurrency": "a lot"},
                                },
                            }
                        ],
                    }
                },
            },
            "maxConcurrency",
            id="bad-rollout-threshold",
        ),
    ],
)
def test_broken_addon_objects_are_refused_naming_the_field(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(ModelError, match=field.replace(".", r"\.")):
        parse_object(doc)


def test_a_template_keeps_any_manifest_as_written() -> None:
    manifest = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "x": 1}
    parsed = parse_as(
        AddOnTemplate, template(addonName="x", agentSpec={"workload": {"manifests": [manifest]}})
    )
    assert parsed.to_wire()["spec"]["agentSpec"]["workload"]["manifests"] == [manifest]
