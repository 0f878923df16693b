"""A real Kubernetes control plane on loopback, started the way controller-runtime's envtest
starts one: the binaries come from the folder `$KUBEBUILDER_ASSETS` names (`etcd`,
`kube-apiserver`, and `kube-controller-manager` for the pods' controllers).

`ControlPlane.start()` runs etcd on a fresh data dir and kube-apiserver with token
authentication, RBAC and the default admission plugins, both on free loopback ports, waits for
`/readyz`, and writes a kubeconfig whose user is in `system:masters`. `start_controller_manager()`
adds kube-controller-manager (Deployments, ReplicaSets, StatefulSets, Jobs, the PV binder,
garbage collection, service accounts) with every controller but the node lifecycle one: with no
kubelet, that one would mark every node unreachable and evict its pods. `stop()` ends each
process (SIGTERM, then SIGKILL) and removes the data dir.

Plain subprocesses and blocking waits: it serves pytest's session fixtures and the perf harness,
which may run it outside an event loop.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from controllers.addons.webhook_certs import mint, write_bundle

__all__ = ["ASSETS_ENV", "ControlPlane", "ControlPlaneError", "assets_dir", "missing_assets"]

ASSETS_ENV = "KUBEBUILDER_ASSETS"
TOKEN = "e2e-admin-token"
READY_TIMEOUT = 90.0  # seconds; kube-apiserver takes 5-30 s on a quiet 2-core machine
SERVICE_CIDR = "10.96.0.0/16"


class ControlPlaneError(RuntimeError):
    """A control plane process could not be started or did not become ready."""


def assets_dir() -> Path | None:
    """The folder `$KUBEBUILDER_ASSETS` names, or None when it is unset or empty."""
    value = os.environ.get(ASSETS_ENV, "").strip()
    return Path(value) if value else None


def missing_assets(*names: str) -> str | None:
    """Why the binaries `names` cannot be run from `$KUBEBUILDER_ASSETS`, or None when they
    can (a sentence for a skip reason or an error)."""
    folder = assets_dir()
    if folder is None:
        return f"${ASSETS_ENV} is not set (a folder holding etcd and kube-apiserver)"
    absent = [n for n in names if not os.access(folder / n, os.X_OK)]
    if absent:
        return f"${ASSETS_ENV}={folder} has no executable {', '.join(absent)}"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    handle: IO[bytes]

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


@dataclass
class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager) on loopback; see the module doc."""

    assets: Path
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ocm-e2e-")))
    apiserver_args: tuple[str, ...] = ()
    processes: list[_Process] = field(default_factory=list)
    url: str = ""
    kubeconfig: Path = Path()
    ca_file: Path = Path()

    @classmethod
    def from_env(cls, **options: Any) -> ControlPlane:
        reason = missing_assets("etcd", "kube-apiserver")
        if reason is not None:
            raise ControlPlaneError(reason)
        folder = assets_dir()
        assert folder is not None
        return cls(assets=folder, **options)

    # -- start -------------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        try:
            self._start_etcd()
            self._start_apiserver()
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, argv: list[str]) -> _Process:
        log = self.root / f"{name}.log"
        handle = log.open("wb")
        popen = subprocess.Popen(
            argv, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
        process = _Process(name, popen, log, handle)
        self.processes.append(process)
        return process

    def _start_etcd(self) -> None:
        client, peer = free_port(), free_port()
        # tmpfs when the machine has one: etcd fsyncs every write, and the suites write a lot
        shm = Path("/dev/shm")
        data = Path(tempfile.mkdtemp(prefix="ocm-e2e-etcd-", dir=shm if shm.is_dir() else None))
        self._etcd_data = data
        self.etcd_url = f"http://127.0.0.1:{client}"
        peer_url = f"http://127.0.0.1:{peer}"
        self._spawn(
            "etcd",
            [
                str(self.assets / "etcd"),
                "--name=e2e",
                f"--data-dir={data}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=e2e={peer_url}",
                "--log-level=warn",
            ],
        )

    def _write_keys(self) -> dict[str, Path]:
        pki = self.root / "pki"
        serving = write_bundle(
            mint(["127.0.0.1", "localhost"], ca_name="ocm-e2e-apiserver-ca"), pki
        )
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        paths = {
            "ca": serving["ca"],
            "cert": serving["cert"],
            "key": serving["key"],
            "sa_key": pki / "sa.key",
            "sa_pub": pki / "sa.pub",
            "tokens": self.root / "tokens.csv",
        }
        paths["sa_key"].write_bytes(
            sa_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        paths["sa_pub"].write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        paths["tokens"].write_text(f"{TOKEN},admin,admin,system:masters\n")
        return paths

    def _start_apiserver(self) -> None:
        self.keys = self._write_keys()
        port = free_port()
        self.url = f"https://127.0.0.1:{port}"
        self.ca_file = self.keys["ca"]
        process = self._spawn(
            "kube-apiserver",
            [
                str(self.assets / "kube-apiserver"),
                f"--etcd-servers={self.etcd_url}",
                f"--secure-port={port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--cert-dir={self.root / 'pki'}",
                f"--tls-cert-file={self.keys['cert']}",
                f"--tls-private-key-file={self.keys['key']}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={self.keys['sa_pub']}",
                f"--service-account-signing-key-file={self.keys['sa_key']}",
                f"--token-auth-file={self.keys['tokens']}",
                "--authorization-mode=RBAC",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                *self.apiserver_args,
            ],
        )
        self.kubeconfig = self._write_kubeconfig()
        self._wait_ready(process)

    def _write_kubeconfig(self) -> Path:
        path = self.root / "kubeconfig"
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {"server": self.url, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": "admin", "user": {"token": TOKEN}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
            "current-context": "e2e",
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    def _wait_ready(self, process: _Process) -> None:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        request = urllib.request.Request(
            f"{self.url}/readyz", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        deadline = time.monotonic() + READY_TIMEOUT
        last = ""
        while time.monotonic() < deadline:
            for proc in self.processes:
                if proc.popen.poll() is not None:
                    raise ControlPlaneError(
                        f"{proc.name} exited with {proc.popen.returncode}:\n{proc.tail()}"
                    )
            try:
                with urllib.request.urlopen(request, timeout=5, context=context) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.25)
        raise ControlPlaneError(
            f"{process.name} not ready after {READY_TIMEOUT:.0f} s ({last}):\n{process.tail()}"
        )

    def start_controller_manager(self) -> None:
        """kube-controller-manager against this apiserver; waits until its service-account
        controller has made the `default` ServiceAccount of `default` (pods can be created)."""
        reason = missing_assets("kube-controller-manager")
        if reason is not None:
            raise ControlPlaneError(reason)
        if any(p.name == "kube-controller-manager" for p in self.processes):
            return
        self._spawn(
            "kube-controller-manager",
            [
                str(self.assets / "kube-controller-manager"),
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                f"--secure-port={free_port()}",
                "--bind-address=127.0.0.1",
                f"--service-account-private-key-file={self.keys['sa_key']}",
                f"--root-ca-file={self.ca_file}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--controllers=*,-nodelifecycle",
                "--kube-api-qps=500",
                "--kube-api-burst=1000",
            ],
        )
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            done = self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False)
            if done.returncode == 0:
                return
            manager = self.processes[-1]
            if manager.popen.poll() is not None:
                raise ControlPlaneError(f"kube-controller-manager exited:\n{manager.tail()}")
            time.sleep(0.5)
        raise ControlPlaneError("kube-controller-manager made no ServiceAccount in 90 s")

    @property
    def has_controller_manager(self) -> bool:
        return any(
            p.name == "kube-controller-manager" and p.popen.poll() is None for p in self.processes
        )

    # -- use ---------------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        """The environment for a child process pointed at this control plane."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """`kubectl --kubeconfig <ours> ARGS`; raises with kubectl's stderr when `check` and
        it fails."""
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise ControlPlaneError("kubectl is not on PATH")
        done = subprocess.run(
            [kubectl, f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done

    # -- stop --------------------------------------------------------------------------------

    def stop(self) -> None:
        """End every process and remove the data: SIGTERM, and SIGKILL after 3 s (the data is
        thrown away, so a graceful apiserver shutdown buys nothing)."""
        for process in reversed(self.processes):
            if process.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.popen.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            if process.popen.poll() is None:
                try:
                    process.popen.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.popen.pid, signal.SIGKILL)
                    process.popen.wait(timeout=10)
            process.handle.close()
        self.processes.clear()
        data = getattr(self, "_etcd_data", None)
        if data is not None:
            shutil.rmtree(data, ignore_errors=True)
        if os.environ.get("OCM_E2E_KEEP") != "1":
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
