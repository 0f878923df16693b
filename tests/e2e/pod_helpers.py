"""Helpers of the pod scheduler's e2e tests: a JSON client on the real apiserver (our `Gateway`),
`placement scheduler run` as a subprocess (one for every module, a profile each: the
`pod_scheduler` fixture of `tests.e2e.pod_fixtures`), namespaces whose `default`
ServiceAccount exists, manifests, and polling waits with short timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from controllers.kube.config import ClusterAccess
from controllers.kube.errors import AlreadyExistsError, ConflictError, NotFoundError
from controllers.kube.gateway import MERGE_PATCH, Gateway
from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane, assets_dir, free_port

__all__ = [
    "POOL",
    "PROFILES",
    "JsonGateway",
    "SchedulerProcess",
    "container",
    "wait_until",
]

AREAS = ("workloads", "preemption", "gangs", "volumes", "limits")
POOL = "e2e.ocm.io/pool"
"""The label of a module's nodes (its scheduler name) its pods select: no pod of ours lands on
a node another test of the tier left behind."""
T = TypeVar("T")
Doc = dict[str, Any]


class JsonGateway(Gateway):
    """Our gateway, answering plain JSON: the tests and the kubelet stand-in read and write
    objects as the apiserver stores them (every field, no model in between)."""

    @classmethod
    async def open(cls, kubeconfig: Path) -> JsonGateway:
        gateway = await cls.connect(ClusterAccess(kubeconfig=kubeconfig))
        assert isinstance(gateway, JsonGateway)
        return gateway

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        return await self._request(method, path, body=body, query=query, content_type=content_type)

    async def read(self, path: str, **query: str) -> Doc:
        doc: Doc = await self.call("GET", path, query=query or None)
        return doc

    async def items(self, path: str, **query: str) -> list[Doc]:
        doc = await self.read(path, **query)
        items: list[Doc] = doc.get("items") or []
        return items

    async def post(self, path: str, body: Doc) -> Doc:
        doc: Doc = await self.call("POST", path, body)
        return doc

    async def patch(self, path: str, body: Doc) -> Doc:
        doc: Doc = await self.call("PATCH", path, body, content_type=MERGE_PATCH)
        return doc

    async def remove(self, path: str, *, grace: int | None = None, uid: str = "") -> None:
        options: Doc = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        if uid:
            options["preconditions"] = {"uid": uid}
        with contextlib.suppress(NotFoundError, ConflictError):  # gone, or another by now
            await self.call("DELETE", path, options)

    async def namespace(self, name: str, timeout: float = 20.0) -> None:
        """Create namespace `name` and wait for its `default` ServiceAccount (made by
        kube-controller-manager's service-account controller; ServiceAccount admission refuses
        pods until it exists)."""
        with contextlib.suppress(AlreadyExistsError):
            await self.post(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            )

        async def account() -> bool:
            try:
                await self.read(f"/api/v1/namespaces/{name}/serviceaccounts/default")
            except NotFoundError:
                return False
            return True

        await wait_until(account, timeout, f"the default ServiceAccount of {name}")

    async def drop_namespace(self, name: str, timeout: float = 10.0) -> None:
        """Delete namespace `name`, then its pods at once (`gracePeriodSeconds=0`). A
        terminating namespace takes no new pod, so once each pod left is terminating no
        controller of the namespace can leave a pending replacement for a later test's nodes
        (pods held by a finalizer, a Job's, are terminating: no scheduler looks at them)."""
        await self.remove(f"/api/v1/namespaces/{name}")
        path = f"/api/v1/namespaces/{name}/pods"

        async def settled() -> bool:
            pods = await self.items(path)
            for pod in pods:
                meta = pod["metadata"]
                if meta.get("deletionGracePeriodSeconds") != 0:
                    await self.remove(f"{path}/{meta['name']}", grace=0, uid=meta["uid"])
            return all(p["metadata"].get("deletionTimestamp") for p in pods)

        await wait_until(settled, timeout, f"the pods of namespace {name} terminating")

    async def pods(self, namespace: str, selector: str = "") -> list[Doc]:
        query = {"labelSelector": selector} if selector else {}
        return await self.items(f"/api/v1/namespaces/{namespace}/pods", **query)


async def wait_until(
    check: Callable[[], Awaitable[T | None]], timeout: float, what: str, interval: float = 0.1
) -> T:
    """Poll `check` until it answers something true; its answer. Fails after `timeout` with
    `what` and the last answer."""
    deadline = time.monotonic() + timeout
    last = await check()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}: {last!r}")
        await asyncio.sleep(interval)
        last = await check()
    return last


def container(cpu: str = "100m", memory: str = "64Mi", name: str = "main") -> Doc:
    return {
        "name": name,
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }


def kubectl_apply(plane: ControlPlane, *docs: Doc) -> None:
    """`kubectl apply` of `docs` (as a user applies manifests)."""
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


# --- the scheduler, as users run it ------------------------------------------------------------


@dataclass
class SchedulerProcess:
    """`placement scheduler run --kubeconfig ...` in a subprocess, with its log in a file."""

    popen: subprocess.Popen[bytes]
    log: Path
    http: str

    def output(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def placement_argv() -> list[str]:
    """The `placement` console script of this environment (as users run it)."""
    script = Path(sys.executable).with_name("placement")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "controllers.cli"]


PROFILES = {area: unique_name(f"e2e-{area}") for area in AREAS}
"""The scheduler name (a profile of the one scheduler process) of each test module: a module's
pods are scheduled by its own profile, so no module's leftovers land on another's nodes."""


def scheduler_config() -> dict[str, Any]:
    """kube-scheduler's configuration file with one profile per test module (default plugins:
    Coscheduling and CapacityScheduling included), no leader election."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": name} for name in PROFILES.values()],
    }


@contextlib.contextmanager
def scheduler_process(
    plane: ControlPlane, *args: str, kubeconfig: Path | None = None, ready_timeout: float = 30.0
) -> Iterator[SchedulerProcess]:
    """Start `placement scheduler run --kubeconfig ... ARGS` on the control plane (as its
    admin, or as whoever `kubeconfig` names); wait for its /readyz (caches synced); stop it
    with SIGTERM after the block."""
    log = Path(tempfile.mkstemp(prefix="e2e-pod-scheduler-", suffix=".log")[1])
    port = free_port()
    argv = [
        *placement_argv(),
        "scheduler",
        "run",
        f"--kubeconfig={kubeconfig or plane.kubeconfig}",
        f"--http-addr=127.0.0.1:{port}",
        *args,
    ]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    with log.open("wb") as handle:
        popen = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=env)
    process = SchedulerProcess(popen, log, f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if popen.poll() is not None:
                raise AssertionError(
                    f"the scheduler exited {popen.returncode}:\n{process.output()}"
                )
            try:
                with urllib.request.urlopen(f"{process.http}/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"the scheduler is not ready:\n{process.output()}")
            time.sleep(0.1)
        yield process
    finally:
        process.stop()


def dump(doc: Any) -> str:
    return json.dumps(doc, indent=1, default=str)[:4000]


def kube_scheduler(plane: ControlPlane, folder: Path, name: str) -> subprocess.Popen[bytes]:
    """kube-scheduler v1.36 from the assets with one profile, `name`, of kube's defaults, as
    the cluster's admin; its config and log in `folder`. The caller terminates it."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(plane.kubeconfig)},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": name}],
    }
    path = folder / "kube-scheduler.yaml"
    path.write_text(yaml.safe_dump(config))
    binary = assets_dir()
    assert binary is not None
    log = (folder / "kube-scheduler.log").open("wb")
    argv = [str(binary / "kube-scheduler"), f"--config={path}", "--secure-port=0"]
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


RBAC = Path(__file__).resolve().parents[2] / "config" / "addons" / "pod-scheduler" / "rbac.yaml"


def _shipped_rules() -> list[dict[str, Any]]:
    """The rules of the add-on's ClusterRole, as shipped."""
    docs = [d for d in yaml.safe_load_all(RBAC.read_text()) if d]
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def service_account(plane: ControlPlane, name: str, workdir: Path) -> Path:
    """A ServiceAccount `name` (in its own namespace) bound to a copy of the shipped
    ClusterRole under its own name (other tests apply and delete the add-on's own objects);
    a kubeconfig with a token for it."""
    binding = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    subject = {"kind": "ServiceAccount", "name": name, "namespace": name}
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": name},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": _shipped_rules(),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": binding,
            "subjects": [subject],
        },
    ]
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    token = plane.kubectl("create", "token", name, "-n", name, "--duration=2h").stdout.strip()
    kubeconfig = yaml.safe_load(plane.kubeconfig.read_text())
    kubeconfig["users"] = [{"name": "admin", "user": {"token": token}}]
    path = workdir / "scheduler.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    return path
