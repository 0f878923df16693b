"""kubernetes_asyncio without its generated API classes and models until someone asks for them.

`import kubernetes_asyncio` runs the package's `__init__`, which imports every generated API
class and 767 models: about 0.2 s and 37 MiB that the gateway never uses (it sends and reads
JSON itself, through `ApiClient.call_api` and the REST client). `load()` gives the same package
with only what the gateway uses imported: `client.ApiClient`, `client.Configuration`, the REST
client and the exceptions, and `config` (kubeconfig and in-cluster loading).

How: the packages `kubernetes_asyncio`, `kubernetes_asyncio.client` and
`kubernetes_asyncio.client.models` are created from their import specs without running their
`__init__` (their submodules import as usual, from the same folders). The first name asked of
one of them that is not there yet runs its real `__init__` into the same module object, so code
that uses the generated classes (`client.CoreV1Api`, `client.V1Pod`, as some tests do) gets
exactly what a plain import gives, only later. When the package was imported before (fully),
`load()` returns it as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

__all__ = ["load"]

_DEFERRED = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")


def _deferred(name: str) -> ModuleType:
    """Package `name`, created and registered without running its `__init__`."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def complete(attribute: str) -> Any:
        """The real `__init__`, run once, into this module; then the attribute asked."""
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        del module.__dict__["__getattr__"]
        loader.exec_module(module)
        return getattr(module, attribute)

    module.__dict__["__getattr__"] = complete
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def load() -> tuple[ModuleType, ModuleType]:
    """`kubernetes_asyncio.client` and `kubernetes_asyncio.config` (module docstring)."""
    if "kubernetes_asyncio" not in sys.modules:
        for name in _DEFERRED:
            _deferred(name)
        client = sys.modules["kubernetes_asyncio.client"]
        # In dependency order: `api_client` takes `rest` as a name of the package.
        configuration = importlib.import_module("kubernetes_asyncio.client.configuration")
        exceptions = importlib.import_module("kubernetes_asyncio.client.exceptions")
        importlib.import_module("kubernetes_asyncio.client.rest")
        api_client = importlib.import_module("kubernetes_asyncio.client.api_client")
        # What `config` imports from the client package, set so that it does not complete it.
        client.__dict__.update(
            ApiClient=api_client.ApiClient,
            Configuration=configuration.Configuration,
            ApiException=exceptions.ApiException,
        )
    client = importlib.import_module("kubernetes_asyncio.client")
    config = importlib.import_module("kubernetes_asyncio.config")
    return client, config
