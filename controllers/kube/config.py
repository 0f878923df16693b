"""Where the gateway's API server is and how to authenticate to it: a kubeconfig file and
context, the in-cluster service account, or an explicit URL (the embedded server)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kubernetes_asyncio import client, config

__all__ = ["ClusterAccess", "new_api_client"]


@dataclass(frozen=True)
class ClusterAccess:
    """One way to reach an API server. With nothing set, `$KUBECONFIG` or `~/.kube/config`."""

    kubeconfig: Path | None = None
    context: str | None = None
    url: str | None = None
    in_cluster: bool = False
    token: str | None = None
    verify_tls: bool = True


async def new_api_client(access: ClusterAccess) -> client.ApiClient:
    """An ApiClient configured from `access` (the caller closes it)."""
    configuration = client.Configuration()
    if access.url is not None:
        configuration.host = access.url.rstrip("/")
        configuration.verify_ssl = access.verify_tls
        if access.token:
            configuration.api_key = {"BearerToken": access.token}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
    elif access.in_cluster:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        path = access.kubeconfig or Path(
            os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "~/.kube/config"
        )
        await config.load_kube_config(
            config_file=str(path.expanduser()),
            context=access.context,
            client_configuration=configuration,
            # The embedded server of tests and demos rewrites its file; do not keep a refresher.
            persist_config=False,
        )
    return client.ApiClient(configuration)
