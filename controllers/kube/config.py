"""Where the gateway's API server is and how to authenticate to it: a kubeconfig file and
context, the in-cluster service account, or an explicit URL (the embedded server).

`find_access` finds it as controller-runtime does (kubectl's rules, plus the pod's service
account): `--kubeconfig`, else `$KUBECONFIG`, a list of files merged as kubectl merges them
(`a:b`: missing files skipped, the first file to name a cluster, user or context or to set
current-context wins), else the pod's service account, else `~/.kube/config`.

A kubeconfig or service account that cannot be used is a `ClusterAccessError` whose message is
one line naming the file and the context (kubectl's words where it has them), never the client
library's exception: `placement run` prints it and exits. When there is none, `looked_in` says
every place `find_access` looked, on one line.

Which file, context and server a client was made for is logged at INFO once per process
(`placement run`, `scheduler run` and `webhook run` connect through here); never a credential.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controllers.kube.yamlfiles import YamlFileError, decode_single_document

if TYPE_CHECKING:
    from kubernetes_asyncio import client, config
else:  # the client without its generated models (controllers.kube.client_import)
    from controllers.kube.client_import import load

    client, config = load()

__all__ = [
    "DEFAULT_KUBECONFIG",
    "ClusterAccess",
    "ClusterAccessError",
    "find_access",
    "looked_in",
    "new_api_client",
]

log = logging.getLogger(__name__)

DEFAULT_KUBECONFIG = Path("~/.kube/config")


class ClusterAccessError(Exception):
    """The kubeconfig, its context or the service account cannot be used (one-line message)."""


@dataclass(frozen=True)
class ClusterAccess:
    """One way to reach an API server. With nothing set, `$KUBECONFIG` or `~/.kube/config`."""

    kubeconfig: Path | None = None
    context: str | None = None
    url: str | None = None
    in_cluster: bool = False
    token: str | None = None
    verify_tls: bool = True

    def kubeconfig_paths(self) -> list[Path]:
        """The kubeconfig files read: the explicit one, else those `$KUBECONFIG` lists, else
        `~/.kube/config`."""
        if self.kubeconfig is not None:
            return [self.kubeconfig.expanduser()]
        listed = [Path(p).expanduser() for p in _kubeconfig_env().split(os.pathsep) if p]
        return listed or [DEFAULT_KUBECONFIG.expanduser()]


def _kubeconfig_env() -> str:
    return os.environ.get("KUBECONFIG", "")


def find_access(kubeconfig: Path | None = None, context: str | None = None) -> ClusterAccess | None:
    """How to reach the API server when nothing more explicit (a URL) is given: the kubeconfig
    flag or `--context`, `$KUBECONFIG`, the pod's service account, `~/.kube/config`; None when
    there is none of them (the caller may start an embedded server)."""
    if kubeconfig is not None or context or _kubeconfig_env():
        return ClusterAccess(kubeconfig=kubeconfig, context=context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return ClusterAccess(in_cluster=True)
    if DEFAULT_KUBECONFIG.expanduser().is_file():
        return ClusterAccess()
    return None


def looked_in() -> str:
    """Every place `find_access` looks, in its order, and what each had, for when it found
    none: `--kubeconfig not given, $KUBECONFIG not set, not in a pod (...), ~/.kube/config
    (/home/me/.kube/config) does not exist`."""
    env = os.environ.get("KUBECONFIG")
    home = DEFAULT_KUBECONFIG.expanduser()
    if not home.exists():
        default = "does not exist"
    else:
        default = "is not a file" if not home.is_file() else "exists"
    pod = os.environ.get("KUBERNETES_SERVICE_HOST")
    return ", ".join(
        [
            "--kubeconfig not given",
            "$KUBECONFIG not set" if env is None else f"$KUBECONFIG={env!r}",
            f"in a pod ($KUBERNETES_SERVICE_HOST={pod})"
            if pod
            else "not in a pod ($KUBERNETES_SERVICE_HOST not set)",
            f"~/.kube/config ({home}) {default}",
        ]
    )


_announced: set[str] = set()


def _announce(chosen: str) -> None:
    """Log which cluster a client is for, once per process (a command may open several)."""
    if chosen not in _announced:
        _announced.add(chosen)
        log.info("cluster: %s", chosen)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _kubeconfig(path: Path) -> dict[str, Any]:
    """The kubeconfig document, checked enough to name what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ClusterAccessError(f"kubeconfig {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else _one_line(exc)
        raise ClusterAccessError(f"kubeconfig {path}: cannot read: {reason}") from None
    try:  # the guards of every file we read (nesting, aliases)
        doc = decode_single_document(text)
    except YamlFileError as exc:
        raise ClusterAccessError(f"kubeconfig {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ClusterAccessError(
            f"kubeconfig {path}: not a kubeconfig (expected a mapping with clusters, contexts "
            "and users)"
        )
    return doc


def _context(path: str, doc: dict[str, Any], wanted: str | None) -> str:
    """The context to use: `wanted`, else the file's current-context; it must exist."""
    entries = doc.get("contexts") or []
    names = sorted(
        str(entry["name"]) for entry in entries if isinstance(entry, dict) and "name" in entry
    )
    known = f"contexts: {', '.join(names)}" if names else "the file has no contexts"
    name = wanted or doc.get("current-context")
    if not name:
        raise ClusterAccessError(
            f"kubeconfig {path}: no current-context set; pass --context ({known})"
        )
    if str(name) not in names:
        source = "context" if wanted else "current-context"
        raise ClusterAccessError(f'kubeconfig {path}: {source} "{name}" does not exist ({known})')
    return str(name)


def _merged(paths: list[Path]) -> tuple[str, dict[str, Any]]:
    """What the files say about contexts, merged as kubectl merges them, and how to name them
    in a message: one file by its path; several by the ones that exist. A single file must
    exist; of several (`$KUBECONFIG`), the missing ones are skipped, as kubectl skips them."""
    if len(paths) == 1:
        return str(paths[0]), _kubeconfig(paths[0])
    found = [p for p in paths if p.exists()]
    if not found:
        listed = os.pathsep.join(str(p) for p in paths)
        raise ClusterAccessError(f"kubeconfig {listed} ($KUBECONFIG): none of the files exists")
    merged: dict[str, Any] = {"contexts": []}
    names: set[str] = set()
    for path in found:
        doc = _kubeconfig(path)
        if "current-context" not in merged and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
        for entry in doc.get("contexts") or []:
            name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(name, str) and name not in names:
                names.add(name)
                merged["contexts"].append(entry)
    return os.pathsep.join(str(p) for p in found), merged


async def _load_kubeconfig(access: ClusterAccess, configuration: client.Configuration) -> str:
    """Load the kubeconfig into `configuration`; returns which file, context and server."""
    path, doc = _merged(access.kubeconfig_paths())
    context = _context(path, doc, access.context)
    try:
        # The library merges a list of files itself (`a:b`); the context is chosen above, so
        # its rule for current-context (the last file's) does not apply.
        await config.load_kube_config(
            config_file=path,
            context=context,
            client_configuration=configuration,
            # The embedded server of tests and demos rewrites its file; do not keep a refresher.
            persist_config=False,
        )
    except (config.ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
        # A context naming a missing cluster or user, an unreadable certificate file, a failing
        # exec plugin: the library's own words, on one line, with the file and the context.
        raise ClusterAccessError(
            f'kubeconfig {path}: context "{context}": {_one_line(exc)}'
        ) from None
    if access.kubeconfig is not None:
        source = ""
    elif _kubeconfig_env():
        source = " (from $KUBECONFIG)"
    else:
        source = " (the default ~/.kube/config)"
    which = "" if access.context else " (its current-context)"
    return f'kubeconfig {path}{source}, context "{context}"{which}, server {configuration.host}'


async def new_api_client(access: ClusterAccess) -> client.ApiClient:
    """An ApiClient configured from `access` (the caller closes it); `ClusterAccessError` when
    the kubeconfig or the service account cannot be used."""
    configuration = client.Configuration()
    if access.url is not None:
        configuration.host = access.url.rstrip("/")
        configuration.verify_ssl = access.verify_tls
        if access.token:
            configuration.api_key = {"BearerToken": access.token}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
        log.debug("cluster: server %s (given)", configuration.host)
    elif access.in_cluster:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError) as exc:
            raise ClusterAccessError(f"in-cluster service account: {_one_line(exc)}") from None
        _announce(f"in-cluster service account, server {configuration.host}")
    else:
        _announce(await _load_kubeconfig(access, configuration))
    return client.ApiClient(configuration)
