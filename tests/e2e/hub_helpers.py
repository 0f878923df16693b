"""What the hub's e2e tests share (`test_hub.py`, `test_leader_election.py`, `test_consumer.py`):
`placement run` as a subprocess, a private fleet on the shared control plane, and a TLS proxy
that tells which replica sent which request.

A private fleet: the control plane is shared, and the samples' `global` set (an empty label
selector) takes in every ManagedCluster there is, so each cluster made here carries the
`NoSelect` taint `PRIVATE_TAINT`, which only the placements made here tolerate: the samples'
placements (and those of other tests) never select them, and their results stay what
`placement simulate` computes for the samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import yaml

from apis.cluster import ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding
from apis.core import Namespace
from apis.meta import KubeObject, ObjectMeta
from apis.placements import PLACEMENT_LABEL, Placement, PlacementDecision
from controllers.addons.webhook_certs import mint, write_bundle
from controllers.kube.config import ClusterAccess
from controllers.kube.errors import AlreadyExistsError, NotFoundError
from controllers.kube.gateway import Gateway
from placement.testing import binding, cluster, cluster_set, taint, toleration
from tests.e2e.controlplane import ControlPlane

__all__ = [
    "GUARD",
    "HUB_NAMESPACE",
    "PRIVATE_TAINT",
    "PlacementRun",
    "RecordingProxy",
    "as_user",
    "connect",
    "create_all",
    "decided",
    "delete_all",
    "ensure_namespace",
    "private_fleet",
    "readable",
    "service_account_token",
    "tolerate_private",
]

ObjT = TypeVar("ObjT", bound=KubeObject)
PLACEMENT = str(Path(sys.executable).with_name("placement"))
GUARD = 30.0  # seconds: only so that a hung process fails a test instead of hanging it
RUNNING = re.compile(r" running.*; http on (\S+)")
PRIVATE_TAINT = "e2e.ocm.io/private"
ROOT = Path(__file__).resolve().parents[2]
HUB_NAMESPACE = "open-cluster-management-hub"
FLEET_LABEL = "e2e.ocm.io/fleet"


# --- `placement run` as an operator runs it ------------------------------------------------------


@dataclass
class PlacementRun:
    """One `placement run --kubeconfig ...` process; stdout and stderr go to files in `folder`."""

    popen: subprocess.Popen[bytes]
    out: Path
    err: Path
    address: str = ""

    @classmethod
    async def start(
        cls, kubeconfig: Path, folder: Path, *flags: str, name: str = "run"
    ) -> PlacementRun:
        """Start it and return once it says it is running (caches synced, endpoint up)."""
        folder.mkdir(parents=True, exist_ok=True)
        out, err = folder / f"{name}.out", folder / f"{name}.err"
        argv = [PLACEMENT, "run", "--kubeconfig", str(kubeconfig)]
        argv += ["--http-addr", "127.0.0.1:0", "--debug-addr", "", *flags]
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "POD_NAMESPACE")}
        with out.open("wb") as stdout, err.open("wb") as stderr:
            popen = subprocess.Popen(
                argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, env=env
            )
        run = cls(popen, out, err)
        try:
            async with asyncio.timeout(GUARD):
                while not (found := RUNNING.search(out.read_text(errors="replace"))):
                    assert popen.poll() is None, f"placement run exited:\n{run.stderr()}"
                    await asyncio.sleep(0.05)
        except BaseException:
            run.kill()
            raise
        run.address = found[1]
        return run

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def signal(self, sig: signal.Signals) -> None:
        self.popen.send_signal(sig)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(10)

    async def wait(self, timeout: float = GUARD) -> int:
        async with asyncio.timeout(timeout):
            while (code := self.popen.poll()) is None:
                await asyncio.sleep(0.05)
        return code

    async def stop(self) -> int:
        """SIGTERM, as Kubernetes stops a pod: a clean stop exits 0."""
        if self.popen.poll() is None:
            self.signal(signal.SIGTERM)
        try:
            return await self.wait()
        finally:
            self.kill()

    async def get(self, path: str) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://{self.address}{path}") as response,
        ):
            return response.status, await response.text()

    async def metric(self, name: str, **labels: str) -> float:
        """The sum of the samples of `name` whose labels include `labels` (0 when none)."""
        _, text = await self.get("/metrics")
        total = 0.0
        for line in text.splitlines():
            if not line.startswith(name) or line[len(name)] not in " {":
                continue
            head, _, value = line.rpartition(" ")
            if all(f'{k}="{v}"' in head for k, v in labels.items()):
                total += float(value)
        return total


_tokens: dict[str, str] = {}


def service_account_token(plane: ControlPlane) -> str:
    """The shipped RBAC installed as docs/deploy.md installs it (`config/rbac` in the hub
    namespace of `config/default`), and a token of its ServiceAccount: the controller then runs
    with exactly the rights a Deployment of it has. Once per control plane."""
    if plane.url not in _tokens:
        plane.kubectl("apply", "-f", str(ROOT / "config" / "default" / "namespace.yaml"))
        plane.kubectl("apply", "-k", str(ROOT / "config" / "rbac"))
        made = plane.kubectl(
            "create", "token", "placement-controller", "-n", HUB_NAMESPACE, "--duration=1h"
        )
        _tokens[plane.url] = made.stdout.strip()
    return _tokens[plane.url]


def as_user(plane: ControlPlane, token: str, path: Path) -> Path:
    """A kubeconfig for the control plane whose user is `token`'s."""
    doc = yaml.safe_load(plane.kubeconfig.read_text())
    doc["users"][0]["user"] = {"token": token}
    path.write_text(yaml.safe_dump(doc))
    return path


# --- objects -------------------------------------------------------------------------------------


async def connect(plane: ControlPlane) -> Gateway:
    return await Gateway.connect(ClusterAccess(kubeconfig=plane.kubeconfig))


async def ensure_namespace(gateway: Gateway, name: str) -> None:
    with contextlib.suppress(AlreadyExistsError):
        await gateway.create(Namespace(metadata=ObjectMeta(name=name)))


async def create_all(gateway: Gateway, objects: Iterable[KubeObject], width: int = 16) -> None:
    """Create each object (Namespaces of namespaced ones first), then write its `status`
    through the status subresource (a create ignores it); `width` requests at a time."""
    objects = list(objects)
    for namespace in dict.fromkeys(o.namespace for o in objects if o.namespace):
        await ensure_namespace(gateway, namespace)
    gate = asyncio.Semaphore(width)

    async def one(obj: KubeObject) -> None:
        async with gate:
            await gateway.create(obj)
            status = obj.to_wire().get("status")
            if status:
                await gateway.patch_status(type(obj), obj.name, {"status": status}, obj.namespace)

    await asyncio.gather(*(one(o) for o in objects))


async def delete_all(gateway: Gateway, objects: Iterable[KubeObject], width: int = 16) -> None:
    gate = asyncio.Semaphore(width)

    async def one(obj: KubeObject) -> None:
        async with gate:
            with contextlib.suppress(NotFoundError):
                await gateway.delete(type(obj), obj.name, obj.namespace or None)

    await asyncio.gather(*(one(o) for o in objects))


def tolerate_private() -> list[dict[str, Any]]:
    """The toleration a placement of a private fleet needs (`tolerations` of its spec)."""
    return [toleration(PRIVATE_TAINT, operator="Exists").to_wire()]


@dataclass
class Fleet:
    """Clusters of one test only, in a set of their own bound to the test's namespace."""

    name: str
    namespace: str
    clusters: list[ManagedCluster]
    cluster_set: ManagedClusterSet
    binding: ManagedClusterSetBinding

    @property
    def objects(self) -> list[KubeObject]:
        return [*self.clusters, self.cluster_set, self.binding]

    @property
    def cluster_scoped(self) -> list[KubeObject]:
        return [*self.clusters, self.cluster_set]


def private_fleet(
    name: str, namespace: str, labels: Sequence[dict[str, str]], cpu: str = "8"
) -> Fleet:
    """Clusters `<name>-<i>` with these labels (and `cpu` allocatable), tainted with
    `PRIVATE_TAINT`, in set `name` (a label selector on the fleet label) bound to `namespace`."""
    width = len(str(len(labels)))
    clusters = [
        cluster(
            f"{name}-{i:0{width}d}",
            labels={**extra, FLEET_LABEL: name},
            cpu=cpu,
            memory="32Gi",
            taints=[taint(PRIVATE_TAINT)],
        )
        for i, extra in enumerate(labels, start=1)
    ]
    chosen = cluster_set(name, {"matchLabels": {FLEET_LABEL: name}})
    return Fleet(name, namespace, clusters, chosen, binding(namespace, name))


async def readable(
    gateway: Gateway,
    cls: type[ObjT],
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
) -> list[ObjT]:
    """Every object of `cls` the models read, as the controller's informers see them: another
    test may have left objects only a webhook would refuse (`controllers.kube.unreadable`)."""
    out: list[ObjT] = []
    pages = gateway.list_pages(cls, namespace, label_selector=label_selector, unreadable=_ignore)
    async for page in pages:
        out.extend(page.items)
    return out


def _ignore(key: str, why: str) -> None:
    pass


async def decided(gateway: Gateway, namespace: str, placement: str) -> dict[str, list[str]]:
    """The placement's PlacementDecisions by name: their clusters in order."""
    listed = await readable(
        gateway, PlacementDecision, namespace, label_selector=f"{PLACEMENT_LABEL}={placement}"
    )
    return {
        pd.name: [d.cluster_name for d in (pd.status.decisions if pd.status else None) or ()]
        for pd in listed
    }


async def selected_count(gateway: Gateway, namespace: str, placement: str) -> int | None:
    placed = await gateway.get(Placement, placement, namespace)
    return placed.status.number_of_selected_clusters if placed.status else None


# --- a TLS proxy that notes each request ---------------------------------------------------------

_REQUEST = re.compile(rb"(GET|POST|PUT|PATCH|DELETE) (/\S*) HTTP/1\.1\r\n")


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    at: float  # time.monotonic() when the proxy read it from the client

    @property
    def write(self) -> bool:
        return self.method != "GET"


@dataclass
class RecordingProxy:
    """Between one client and the API server: TLS on both sides (its own serving certificate,
    the server's CA upstream), every request line noted with the time it arrived. A replica
    pointed at it (`kubeconfig`) has each of its requests attributed to it, which the server's
    objects cannot tell (two replicas on one host write under the same field manager and
    reporting instance)."""

    plane: ControlPlane
    folder: Path
    requests: list[Request] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self, token: str | None = None) -> Path:
        """Listen; returns a kubeconfig that reaches the API server through this proxy (as
        the user of `token`, else as the control plane's admin)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        files = write_bundle(mint(["127.0.0.1"], ca_name="e2e-proxy-ca"), self.folder)
        serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        serving.load_cert_chain(files["cert"], files["key"])
        self._upstream = ssl.create_default_context(cafile=str(self.plane.ca_file))
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=serving)
        port = self._server.sockets[0].getsockname()[1]
        doc = yaml.safe_load(self.plane.kubeconfig.read_text())
        doc["clusters"][0]["cluster"] = {
            "server": f"https://127.0.0.1:{port}",
            "certificate-authority": str(files["ca"]),
        }
        if token is not None:
            doc["users"][0]["user"] = {"token": token}
        kubeconfig = self.folder / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(doc))
        return kubeconfig

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def writes(self, *resources: str, after: float = 0.0) -> list[Request]:
        """Non-GET requests on these resources (plural names) read after `after`."""
        return [
            r
            for r in self.requests
            if r.write and r.at > after and any(f"/{res}" in r.path for res in resources)
        ]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        host, port = self.plane.url.removeprefix("https://").split(":")
        try:
            up_reader, up_writer = await asyncio.open_connection(
                host, int(port), ssl=self._upstream, server_hostname=host
            )
        except OSError:
            writer.close()
            self._tasks.discard(task)
            return
        down = asyncio.create_task(_pipe(up_reader, writer))
        self._tasks.add(down)
        down.add_done_callback(self._tasks.discard)
        pending = b""
        try:
            while data := await reader.read(65536):
                now = time.monotonic()
                pending += data
                cut = pending.rfind(b"\n") + 1
                for m in _REQUEST.finditer(pending[:cut]):
                    self.requests.append(Request(m[1].decode(), m[2].decode(), now))
                pending = pending[cut:][-8192:]
                up_writer.write(data)
                await up_writer.drain()
        except (ConnectionError, ssl.SSLError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                up_writer.close()
            self._tasks.discard(task)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()
