"""kubernetes-asyncio through `controllers.kube.client_import`: the gateway's start leaves out the
generated models, and code that asks for a generated class still gets it (the package's real
`__init__` runs then, into the same module)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import controllers.kube.gateway
before = sorted(m for m in sys.modules if m.startswith("kubernetes_asyncio.client.models."))
from kubernetes_asyncio import client
import kubernetes_asyncio
pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p"))
after = sorted(m for m in sys.modules if m.startswith("kubernetes_asyncio.client.models."))
print(json.dumps({
    "before": len(before), "after": len(after), "name": pod.metadata.name,
    "api": client.CoreV1Api.__name__, "watch": hasattr(kubernetes_asyncio, "watch"),
    "same": client is sys.modules["kubernetes_asyncio.client"],
    "version": kubernetes_asyncio.__version__,
}))
"""


def test_the_gateway_starts_without_the_generated_models_and_they_still_load_when_asked() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    seen = json.loads(done.stdout)
    assert seen["before"] == 0
    assert seen["after"] > 700  # every model, as a plain import gives them
    assert seen["name"] == "p" and seen["api"] == "CoreV1Api" and seen["watch"]
    assert seen["same"] and seen["version"]


def test_a_package_imported_before_is_used_as_it_is() -> None:
    probe = (
        "import sys, kubernetes_asyncio\n"
        "from controllers.kube.client_import import load\n"
        "client, config = load()\n"
        "assert client is kubernetes_asyncio.client and hasattr(client, 'CoreV1Api')\n"
        "assert config.load_kube_config\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)
