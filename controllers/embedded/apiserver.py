"""An in-process, Kubernetes-compatible API server (aiohttp) for the demo and the tests, modelled
on fabric8's mock server in CRUD mode (what it serves, and where it differs from
kube-apiserver: docs/architecture.md, 'Kubernetes gateway, embedded API server, cache and
queue').

The real `kubernetes_asyncio` client and kubectl talk to it over HTTP on 127.0.0.1, so the
production code path is the tested one. `EmbeddedApiServer.start()` returns its URL;
`python -m controllers.embedded` runs one standalone and prints a kubeconfig to use it.
`EmbeddedApiServer(kubelet=KubeletOptions(...))` adds a kubelet simulation (bound pods run,
nodes are Ready, graceful deletions end; see `controllers.embedded.kubelet`).
`server.audit` counts the requests served per (verb, group, resource, subresource, namespace)
(see `controllers.embedded.audit`), for tests that check a ClusterRole against what a
controller really does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from apis.meta import KubeObject
from controllers.cli.crds import CRD_DIR
from controllers.cli.manifests import load_paths
from controllers.embedded.audit import Audit
from controllers.embedded.faults import Faults
from controllers.embedded.handlers import Handlers
from controllers.embedded.history import DROP, END, Watcher
from controllers.embedded.kubelet import Kubelet, KubeletOptions
from controllers.embedded.patch import copy_json
from controllers.embedded.pods import SYSTEM_PRIORITY_CLASSES
from controllers.embedded.resourceclaims import ResourceClaims
from controllers.embedded.resources import load_resources
from controllers.embedded.store import Store
from controllers.embedded.volumes import VolumePhases

__all__ = ["SYSTEM_NAMESPACES", "EmbeddedApiServer", "SnapshotError"]

# The namespaces a new Kubernetes cluster has (objects in other namespaces need theirs first).
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


class SnapshotError(Exception):
    """A snapshot folder holds a document that cannot be loaded."""


class EmbeddedApiServer:
    """The embedded server: `await start()` (URL back), `await stop()`, or `async with`."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        crd_dir: Path = CRD_DIR,
        snapshot: Path | None = None,
        bookmark_interval: float = 1.0,
        history: int = 200_000,
        faults: Faults | None = None,
        kubelet: KubeletOptions | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.resources = load_resources(crd_dir)
        self.store = Store(self.resources, history)
        self.faults = faults or Faults()
        self.snapshot = snapshot
        # Every resource request served, per (verb, group, resource, subresource, namespace).
        self.audit = Audit()
        self._handlers = Handlers(self.store, self.faults, bookmark_interval, self.audit)
        self._runner: web.AppRunner | None = None
        self._stalled: list[Watcher] = []
        if self.store.namespaces is not None:
            for name in SYSTEM_NAMESPACES:
                self.store.create(self.store.namespaces, {"metadata": {"name": name}})
        by_key = {res.key: res for res in self.resources}
        priority_classes = by_key.get(("scheduling.k8s.io", "priorityclasses"))
        if priority_classes is not None:  # what kube-apiserver creates at its first start
            for doc in SYSTEM_PRIORITY_CLASSES:
                self.store.create(priority_classes, copy_json(doc))
        # Pod lifecycle: always the end of graceful deletions; with `kubelet` options, also the
        # kubelet simulation (pods run, nodes are Ready). See `controllers.embedded.kubelet`.
        self.kubelet = Kubelet(self.store, kubelet)
        self._handlers.pod_grace_from_spec = kubelet is not None
        self.volume_phases = VolumePhases(self.store)  # the PV controller's phases
        self.resource_claims = ResourceClaims(self.store)  # the resourceclaim controller's part

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def bookmark_interval(self) -> float:
        return self._handlers.watches.bookmark_interval

    @bookmark_interval.setter
    def bookmark_interval(self, seconds: float) -> None:
        self._handlers.watches.bookmark_interval = seconds

    async def start(self) -> str:
        if self.snapshot is not None:
            self.load(self.snapshot)
        self.kubelet.attach()
        self.volume_phases.attach()
        self.resource_claims.attach()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handlers.dispatch)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = getattr(site, "_server", None)
        if self.port == 0 and server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        return self.url

    async def stop(self) -> None:
        """End every watch stream, then close the listener and the connections."""
        self.drop_watches(abrupt=False)
        self.kubelet.close()
        self.volume_phases.close()
        self.resource_claims.close()
        await self._handlers.webhooks.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> EmbeddedApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def drop_watches(self, abrupt: bool = True) -> int:
        """End every open watch stream: `abrupt` breaks the connection mid-stream, otherwise the
        stream ends cleanly as on a server-side timeout. Returns how many were open."""
        watchers = [*self.store.watchers, *self._stalled]
        self._stalled.clear()
        for watcher in watchers:
            watcher.queue.put_nowait(DROP if abrupt else END)
        return len(watchers)

    def stall_watches(self) -> int:
        """Stop feeding the open watch streams without closing them, as a network partition
        would: writes made now reach those clients only once they reconnect (after
        `drop_watches`). Returns how many were open."""
        stalled = list(self.store.watchers)
        self.store.watchers.difference_update(stalled)
        self._stalled.extend(stalled)
        return len(stalled)

    async def wait_for_watchers(self, count: int, timeout: float = 5.0) -> None:
        """Wait until at least `count` watches are open (tests use it to avoid racing)."""
        async with asyncio.timeout(timeout):
            while len(self.store.watchers) < count:
                await asyncio.sleep(0.005)

    def load(self, folder: Path) -> int:
        """Store every object of the manifests under `folder` as is (status included)."""
        result = load_paths([folder])
        if not result.ok:
            raise SnapshotError("\n".join(str(error) for error in result.errors))
        return self.add(loaded.obj for loaded in result.objects)

    def add(self, objects: Iterable[KubeObject]) -> int:
        """Store objects as is (status included), as `load` does for a folder: Namespaces
        first, whatever their place, and a missing namespace is created (a snapshot restores a
        hub's state; kubectl and the API demand the Namespace first, as a real hub does)."""
        by_kind = {(res.api_version, res.kind): res for res in self.resources}
        docs = [obj.to_wire() for obj in objects]
        namespaces = self.store.namespaces
        docs.sort(key=lambda doc: namespaces is None or by_kind.get(_kind(doc)) is not namespaces)
        for doc in docs:
            res = by_kind.get(_kind(doc))
            if res is None:
                name = doc["metadata"].get("name", "")
                where = doc["metadata"].get("namespace")
                raise SnapshotError(
                    f"{doc['kind']} {where + '/' if where else ''}{name} is not served"
                )
            where = doc["metadata"].get("namespace") or ""
            if res.namespaced and namespaces is not None and not self.store.has_namespace(where):
                self.store.create(namespaces, {"metadata": {"name": where}})
            self.store.create(res, doc, keep_status=True)
        return len(docs)

    def kubeconfig(self, path: Path, context: str = "embedded") -> Path:
        """Write a kubeconfig whose current context points at this server."""
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": {}}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": "default"},
                }
            ],
            "current-context": context,
        }
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return path

    def dump(self) -> dict[str, Any]:
        """Every stored object by resource (for debugging and demos)."""
        return {
            f"{res.plural}.{res.group}" if res.group else res.plural: json.loads(
                json.dumps(list(self.store.list(res, "", None)))
            )
            for res in self.resources
        }


def _kind(doc: dict[str, Any]) -> tuple[str, str]:
    return (doc["apiVersion"], doc["kind"])
