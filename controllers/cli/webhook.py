"""`placement webhook run|certs`: the spot/on-demand mutating webhook and the
certificates it serves with when cert-manager is not installed.

`run` serves AdmissionReviews on HTTPS (`--addr`, default `:8443`) with the certificate pair
given (reloaded when the files change), watches the cluster (`--kubeconfig`, else `$KUBECONFIG`,
else the pod's service account, else `~/.kube/config`; with none, one line names every place
looked; an unreachable one is retried until `--sync-timeout`: `controllers.cli.webhook_run`),
and serves `/metrics`, `/healthz` and `/readyz` on plain HTTP
(`--http-addr`). An answer that would go on-demand must be ready within `--deadline` (below the
configuration's `timeoutSeconds`), else the pod goes to spot; `--fault-delay` holds answers, for
tests only. Exit 0 on SIGTERM or SIGINT, 1 when start-up fails (one line on stderr).

`certs` mints a CA and a serving certificate for `<service>.<namespace>.svc` (and any
`--host`, such as 127.0.0.1 for a local try) into `--out`
(`ca.crt`, `tls.crt`, `tls.key`, the names of a kubernetes.io/tls Secret) and prints the
base64 caBundle for the MutatingWebhookConfiguration.
"""

from __future__ import annotations

import argparse
import base64
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apis.names import (
    dns1035_label_problems,
    dns1123_label_problems,
    dns1123_subdomain_problems,
)
from controllers.cli.common import EXIT_OK, CliError, add_log_options

if TYPE_CHECKING:
    from controllers.cli.common import Subparsers

__all__ = ["add_parser", "parse_toleration"]

log = logging.getLogger(__name__)


def add_parser(subparsers: Subparsers) -> None:
    """Add `webhook` and its sub-commands to the command's subparsers."""
    webhook = subparsers.add_parser(
        "webhook",
        help="the spot/on-demand mutating webhook: run it, or mint its certificates",
        description="The spot/on-demand mutating webhook of the local-cluster add-ons.",
    )
    verbs = webhook.add_subparsers(dest="webhook_command", metavar="COMMAND")
    verbs.required = True
    _add_run(verbs)
    _add_certs(verbs)


def _add_run(verbs: Subparsers) -> None:
    run = verbs.add_parser(
        "run",
        help="serve the webhook over HTTPS",
        description=(
            "Serve AdmissionReviews for pod CREATE on HTTPS: pods of Deployments and "
            "StatefulSets annotated distributed-scheduling/min-available go to on-demand or "
            "spot nodes. Runs until SIGTERM or SIGINT."
        ),
    )
    run.add_argument(
        "--tls-cert-file",
        type=Path,
        required=True,
        metavar="FILE",
        help="serving certificate (PEM), reloaded when it changes",
    )
    run.add_argument(
        "--tls-key-file", type=Path, required=True, metavar="FILE", help="its private key (PEM)"
    )
    run.add_argument("--kubeconfig", type=Path, metavar="FILE", help="kubeconfig of the cluster")
    run.add_argument("--context", metavar="NAME", help="kubeconfig context")
    run.add_argument(
        "--addr",
        default=":8443",
        metavar="HOST:PORT",
        help="HTTPS address the API server calls (default :8443, every interface)",
    )
    run.add_argument(
        "--http-addr",
        default=DEFAULT_HTTP_ADDR,
        metavar="HOST:PORT",
        help=f"plain HTTP address of /metrics, /healthz, /readyz (default {DEFAULT_HTTP_ADDR}; "
        "':8080' on every interface, as the Deployment sets for its probes)",
    )
    run.add_argument(
        "--capacity-label",
        default="node.kubernetes.io/capacity",
        metavar="KEY",
        help="node label saying on-demand or spot (default node.kubernetes.io/capacity; EKS: "
        "eks.amazonaws.com/capacityType, Karpenter: karpenter.sh/capacity-type)",
    )
    run.add_argument(
        "--on-demand-value",
        default="on-demand",
        metavar="VALUE",
        help="its value on on-demand nodes (default on-demand; EKS: ON_DEMAND)",
    )
    run.add_argument(
        "--spot-value",
        default="spot",
        metavar="VALUE",
        help="its value on spot nodes (default spot; EKS: SPOT)",
    )
    run.add_argument(
        "--annotation",
        default="distributed-scheduling/min-available",
        metavar="KEY",
        help="workload annotation with the pods to keep on on-demand nodes (default "
        "distributed-scheduling/min-available)",
    )
    run.add_argument(
        "--spot-toleration",
        action="append",
        default=[],
        type=parse_toleration,
        metavar="KEY[=VALUE]:EFFECT",
        help="a toleration added to spot pods (repeatable), e.g. cloud/spot=true:NoSchedule",
    )
    run.add_argument(
        "--no-shared-count",
        action="store_true",
        help="count on-demand pods in this replica only (exact for one replica)",
    )
    run.add_argument(
        "--reservation-ttl",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long an admitted pod counts before its workload's status shows it (default 60)",
    )
    run.add_argument(
        "--deadline",
        type=_seconds,
        default=DEFAULT_DEADLINE,
        metavar="SECONDS",
        help=f"answer within SECONDS (default {DEFAULT_DEADLINE:g}; keep it below the "
        "MutatingWebhookConfiguration's timeoutSeconds): an on-demand place not settled by "
        "then is given back and the pod sent to spot",
    )
    run.add_argument(
        "--fault-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="testing only (fault injection): hold each answer SECONDS after deciding it, as "
        "a loaded machine answers late (default 0: none)",
    )
    run.add_argument(
        "--fault-delay-first",
        type=int,
        default=0,
        metavar="N",
        help="testing only: hold only the first N answers (default 0: every answer)",
    )
    run.add_argument(
        "--sync-timeout",
        type=_positive,
        default=60.0,
        metavar="SECONDS",
        help="give up start-up (exit 1) when the cluster has not answered for this long; the "
        "error says which kinds and why (default 60); until then an unreachable cluster is "
        "retried, one line per round",
    )
    add_log_options(run)
    run.set_defaults(func=_cmd_run)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:  # also NaN
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0 (got {text!r})")
    return value


DEFAULT_HTTP_ADDR = "127.0.0.1:8080"
DEFAULT_DEADLINE = 3.0  # controllers.addons.webhook.DEFAULT_DEADLINE, without importing it here


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 30:
        raise argparse.ArgumentTypeError(
            f"expected seconds above 0 and at most 30, kube's longest webhook timeout "
            f"(got {text!r})"
        )
    return value


"""Metrics and probes on loopback unless asked, as the other verbs."""


def _add_certs(verbs: Subparsers) -> None:
    certs = verbs.add_parser(
        "certs",
        help="mint a CA and a serving certificate for the webhook's Service",
        description=(
            "Write ca.crt, tls.crt and tls.key into --out (a certificate valid for the "
            "Service's cluster DNS names) and print the base64 caBundle. With --kustomize BASE "
            "(config/addons/spot-webhook/base) --out also gets a kustomization.yaml: BASE, the "
            "TLS Secret made from the files and the caBundle, for kubectl apply -k OUT. Keep "
            "--out out of version control (it holds the private key)."
        ),
    )
    certs.add_argument(
        "--service",
        type=_name(dns1035_label_problems, "Service"),
        required=True,
        metavar="NAME",
        help="the webhook's Service (a DNS-1035 label, as Kubernetes requires)",
    )
    certs.add_argument(
        "--namespace",
        type=_name(dns1123_label_problems, "namespace"),
        required=True,
        metavar="NS",
        help="the Service's namespace",
    )
    certs.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="where ca.crt, tls.crt, tls.key go"
    )
    certs.add_argument(
        "--host",
        action="append",
        default=[],
        type=_host,
        metavar="NAME|IP",
        help="a DNS name or IP address the certificate is also valid for (repeatable), e.g. "
        "127.0.0.1 for a local try with a url clientConfig",
    )
    certs.add_argument(
        "--kustomize",
        type=Path,
        metavar="BASE",
        help="also write a kustomization of BASE with the Secret and the caBundle into --out",
    )
    certs.add_argument(
        "--days",
        type=_days,
        default=365,
        help=f"validity of both certificates, 1 to {MAX_DAYS} days (default 365)",
    )
    certs.set_defaults(func=_cmd_certs)


MAX_DAYS = 36500
"""A hundred years: far below X.509's last date (9999-12-31) from any date this code runs."""


def _days(text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        days = 0
    if not 1 <= days <= MAX_DAYS:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of days from 1 to {MAX_DAYS} (got {text!r})"
        )
    return days


def _name(problems: Callable[[str], list[str]], what: str) -> Callable[[str], str]:
    """An argparse type: a name `problems` finds nothing wrong with, else the first problem."""

    def parse(text: str) -> str:
        found = problems(text)
        if found:
            raise argparse.ArgumentTypeError(f"invalid {what} name {text!r}: {found[0]}")
        return text

    return parse


def _host(text: str) -> str:
    """An IP address or a DNS subdomain, for a certificate's subjectAltNames."""
    import ipaddress

    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    found = dns1123_subdomain_problems(text)
    if found:
        raise argparse.ArgumentTypeError(f"invalid host {text!r}: not an IP address; {found[0]}")
    return text


def parse_toleration(text: str) -> dict[str, Any]:
    """`key[=value]:Effect` (Exists without a value, Equal with one)."""
    spec, sep, effect = text.rpartition(":")
    if not sep or not spec or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        raise argparse.ArgumentTypeError(
            f"expected KEY[=VALUE]:NoSchedule|PreferNoSchedule|NoExecute (got {text!r})"
        )
    key, eq, value = spec.partition("=")
    if eq:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def _cmd_certs(args: argparse.Namespace) -> int:
    from controllers.addons.webhook_certs import mint, service_names, write_bundle

    if args.kustomize is not None and not (args.kustomize / "kustomization.yaml").is_file():
        raise CliError(f"--kustomize {args.kustomize}: no kustomization.yaml there")
    names = service_names(args.service, args.namespace)
    names += [host for host in args.host if host not in names]
    bundle = mint(names, days=args.days)
    ca_bundle = base64.b64encode(bundle.ca).decode()
    try:
        paths = write_bundle(bundle, args.out)
        if args.kustomize is not None:
            paths["kustomization"] = args.out / "kustomization.yaml"
            base = os.path.relpath(args.kustomize.resolve(), args.out.resolve())
            paths["kustomization"].write_text(_overlay(base, args.namespace, ca_bundle))
    except OSError as exc:
        raise CliError(f"--out {args.out}: {exc.strerror or exc}") from None
    for path in paths.values():
        print(f"wrote {path}", file=sys.stderr)
    print(ca_bundle)
    return EXIT_OK


SECRET = "spot-webhook-tls"  # what config/addons/spot-webhook/base's Deployment mounts
WEBHOOK = "spot-webhook"  # its MutatingWebhookConfiguration


def _overlay(base: str, namespace: str, ca_bundle: str) -> str:
    """A kustomization of `base` with the TLS Secret made from the files beside it and the
    MutatingWebhookConfiguration's caBundle."""
    return f"""\
# Made by `placement webhook certs --kustomize`: kubectl apply -k on this folder. Run the
# command again to renew. It holds the private key: keep it out of version control.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - {base}
secretGenerator:
  - name: {SECRET}
    namespace: {namespace}
    type: kubernetes.io/tls
    files:
      - tls.crt
      - tls.key
    options:
      disableNameSuffixHash: true
patches:
  - target:
      kind: MutatingWebhookConfiguration
      name: {WEBHOOK}
    patch: |-
      - op: add
        path: /webhooks/0/clientConfig/caBundle
        value: {ca_bundle}
"""


def _cmd_run(args: argparse.Namespace) -> int:
    from controllers.cli.webhook_run import cmd_run  # the server and client: `run` only

    return cmd_run(args)
