"""The URL paths of the API server's collections and objects, by kind (`apis.meta.KubeObject`'s
GROUP, VERSION, PLURAL and NAMESPACED)."""

from __future__ import annotations

from apis.meta import KubeObject

__all__ = ["collection_path", "object_key", "object_path"]


def _base(cls: type[KubeObject]) -> str:
    return f"/apis/{cls.GROUP}/{cls.VERSION}" if cls.GROUP else f"/api/{cls.VERSION}"


def collection_path(cls: type[KubeObject], namespace: str | None) -> str:
    """The URL path of a kind's collection (all namespaces when `namespace` is None)."""
    if cls.NAMESPACED and namespace:
        return f"{_base(cls)}/namespaces/{namespace}/{cls.PLURAL}"
    return f"{_base(cls)}/{cls.PLURAL}"


def object_path(cls: type[KubeObject], name: str, namespace: str | None, sub: str = "") -> str:
    """The URL path of one object, or of its subresource `sub`."""
    if cls.NAMESPACED and not namespace:
        raise ValueError(f"{cls.KIND} {name!r} is namespaced: a namespace is required")
    path = f"{collection_path(cls, namespace)}/{name}"
    return f"{path}/{sub}" if sub else path


def object_key(cls: type[KubeObject], name: str, namespace: str | None) -> str:
    """The object's cache key as `KubeObject.key` makes it: `namespace/name`, or the name of a
    cluster-scoped object."""
    return f"{namespace or ''}/{name}" if cls.NAMESPACED else name
