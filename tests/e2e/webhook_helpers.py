"""Helpers of the spot webhook's e2e tests: `placement webhook run` as a subprocess on a loopback
port with a certificate from `placement webhook certs --host 127.0.0.1`, a
MutatingWebhookConfiguration that reaches it by `url` with the `caBundle` printed, scoped to
one namespace, and the pods counted through the API.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apis.core import Pod
from controllers.addons.webhook import MUTATE_PATH
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway
from placement.spot.mutation import DELETION_COST, DESIRED_CAPACITY
from tests.controllers.addons.cluster import shipped_webhook_configuration
from tests.e2e.controlplane import ControlPlane, free_port

__all__ = [
    "WebhookProcess",
    "capacities",
    "deployment",
    "kubectl_apply",
    "mutations",
    "namespace",
    "registered",
    "wait_for",
    "webhook_process",
]

Doc = dict[str, Any]
MIN_AVAILABLE = "distributed-scheduling/min-available"
CAPACITY = "node.kubernetes.io/capacity"  # the webhook's default capacity label


def wait_for(what: str, check: Callable[[], bool], timeout: float, step: float = 0.1) -> None:
    """Poll `check` until it holds; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


def kubectl_apply(plane: ControlPlane, *docs: Doc) -> None:
    plane.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(docs)}),
    )


@dataclass
class WebhookProcess:
    """`placement webhook run` on https://127.0.0.1:`port`, its log in `log`."""

    popen: subprocess.Popen[bytes]
    port: int
    http_port: int
    ca_bundle: str  # base64 PEM, as `placement webhook certs` prints it
    log: Path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}{MUTATE_PATH}"

    def output(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def metric(self, name: str, **labels: str) -> float:
        """One sample of the webhook's /metrics (0 when absent)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        wanted = name + (
            "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else ""
        )
        for line in text.splitlines():
            if line.startswith(wanted + " "):
                return float(line.split()[-1])
        return 0.0

    def ready(self) -> bool:
        if self.popen.poll() is not None:
            raise AssertionError(f"webhook exited {self.popen.returncode}:\n{self.output()}")
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.http_port}/readyz", timeout=2
            ) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)


def placement_command() -> list[str]:
    """The `placement` command beside this interpreter (as installed), else the module."""
    script = Path(sys.executable).with_name("placement")
    return (
        [str(script)] if os.access(script, os.X_OK) else [sys.executable, "-m", "controllers.cli"]
    )


@functools.cache
def certificates() -> tuple[Path, str]:
    """`placement webhook certs --host 127.0.0.1` once per run: its folder and the caBundle."""
    folder = Path(tempfile.mkdtemp(prefix="spot-webhook-certs-"))
    argv = ["webhook", "certs", "--service=spot-webhook", "--namespace=spot-webhook"]
    done = subprocess.run(
        [*placement_command(), *argv, "--host=127.0.0.1", f"--out={folder}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return folder, done.stdout.strip()


@contextmanager
def webhook_process(plane: ControlPlane, *extra: str) -> Iterator[WebhookProcess]:
    """`placement webhook run` with the certificate for 127.0.0.1, ready (caches synced)."""
    certs, ca_bundle = certificates()
    folder = Path(tempfile.mkdtemp(prefix="spot-webhook-"))
    port, http_port = free_port(), free_port()
    log = folder / "webhook.log"
    argv = [
        *placement_command(),
        "webhook",
        "run",
        f"--tls-cert-file={certs / 'tls.crt'}",
        f"--tls-key-file={certs / 'tls.key'}",
        f"--kubeconfig={plane.kubeconfig}",
        f"--addr=127.0.0.1:{port}",
        f"--http-addr=127.0.0.1:{http_port}",
        *extra,
    ]
    with log.open("wb") as handle:
        popen = subprocess.Popen(
            argv, stdout=handle, stderr=subprocess.STDOUT, env=plane.env(), start_new_session=True
        )
    process = WebhookProcess(popen, port, http_port, ca_bundle, log)
    try:
        wait_for("the webhook's /readyz", process.ready, 20)
        yield process
    finally:
        process.stop()


@contextmanager
def namespace(plane: ControlPlane, name: str) -> Iterator[str]:
    """A namespace whose `default` ServiceAccount exists (pods can be created in it); deleted
    on exit (without waiting)."""
    kubectl_apply(plane, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        wait_for(
            f"ServiceAccount {name}/default",
            lambda: plane.kubectl("get", "sa", "default", "-n", name, check=False).returncode == 0,
            20,
            0.2,
        )
        yield name
    finally:
        plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


@contextmanager
def registered(
    plane: ControlPlane,
    webhook: WebhookProcess,
    name: str,
    scope: str,
    *,
    policy: str = "Fail",
    timeout: int = 5,
) -> Iterator[Doc]:
    """The shipped MutatingWebhookConfiguration, calling `webhook` by url with its caBundle,
    for pod CREATE in namespace `scope` only; deleted on exit."""
    doc: Doc = shipped_webhook_configuration(
        client_config={"url": webhook.url, "caBundle": webhook.ca_bundle},
        policy=policy,
        timeout=timeout,
        name=name,
        namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": scope}},
    )
    kubectl_apply(plane, doc)
    try:
        yield doc
    finally:
        plane.kubectl("delete", "mutatingwebhookconfiguration", name, "--wait=false", check=False)


def deployment(name: str, ns: str, replicas: int, min_available: int) -> Doc:
    """A Deployment annotated as docs/spot-webhook.md says; its pods need no kubelet to exist."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": ns,
            "annotations": {MIN_AVAILABLE: str(min_available)},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                    "terminationGracePeriodSeconds": 0,
                },
            },
        },
    }


async def capacities(plane: ControlPlane, ns: str) -> list[str | None]:
    """The desired-capacity label of every pod of `ns`, read through the API (None: unmutated)."""
    gateway = await Gateway.connect(ClusterAccess(kubeconfig=plane.kubeconfig))
    try:
        pods = await gateway.list(Pod, ns)
    finally:
        await gateway.close()
    return [(pod.metadata.labels or {}).get(DESIRED_CAPACITY) for pod in pods.items]


def mutations(plane: ControlPlane, ns: str) -> Counter[str]:
    """What each pod of `ns` carries, read with kubectl: `on-demand` (the label, the required
    node affinity on the on-demand capacity and the deletion cost), `spot` (the label, the
    preferred spot term and the toleration), `unmutated`, or `inconsistent`."""
    pods = json.loads(plane.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    found: Counter[str] = Counter()
    for pod in pods:
        label = pod["metadata"].get("labels", {}).get(DESIRED_CAPACITY)
        affinity = pod["spec"].get("affinity", {}).get("nodeAffinity", {})
        required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {})
        terms = [t.get("matchExpressions", []) for t in required.get("nodeSelectorTerms", [])]
        preferred = [
            p["preference"].get("matchExpressions", [])
            for p in affinity.get("preferredDuringSchedulingIgnoredDuringExecution", [])
        ]
        cost = pod["metadata"].get("annotations", {}).get(DELETION_COST)
        on_demand = {"key": CAPACITY, "operator": "In", "values": ["on-demand"]}
        spot = {"key": CAPACITY, "operator": "In", "values": ["spot"]}
        if label is None and not affinity:
            found["unmutated"] += 1
        elif label == "on-demand" and terms and all(on_demand in t for t in terms) and cost:
            found["on-demand"] += 1
        elif label == "spot" and any(spot in t for t in preferred) and not terms and not cost:
            found["spot"] += 1
        else:
            found["inconsistent"] += 1
    return found
