"""The OpenAPI v3 documents kubectl downloads to validate what it applies: one per group/version,
with the CRDs' schemas (core kinds get an open schema), tagged with their group/version/kind."""

from __future__ import annotations

from typing import Any

from controllers.embedded.resources import Resource

__all__ = ["openapi_document", "openapi_index"]


def _path(res: Resource) -> str:
    return f"apis/{res.group}/{res.version}" if res.group else f"api/{res.version}"


def openapi_index(resources: list[Resource]) -> dict[str, Any]:
    """`/openapi/v3`: where each group/version's document is."""
    paths = {_path(res): {"serverRelativeURL": f"/openapi/v3/{_path(res)}"} for res in resources}
    return {"paths": paths}


def _schema_name(res: Resource) -> str:
    group = ".".join(reversed(res.group.split("."))) if res.group else "io.k8s.api.core"
    return f"{group}.{res.version}.{res.kind}"


def openapi_document(path: str, resources: list[Resource]) -> dict[str, Any] | None:
    """The OpenAPI v3 document of `path` (`api/v1`, `apis/<group>/<version>`), None if unknown."""
    served = [res for res in resources if _path(res) == path]
    if not served:
        return None
    schemas: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for res in served:
        gvk = {"group": res.group, "version": res.version, "kind": res.kind}
        # kubectl looks for a PATCH operation of the kind that takes `fieldValidation` to decide
        # that the server validates fields itself; otherwise it wants the (protobuf) v2 document.
        scope = "namespaces/{namespace}/" if res.namespaced else ""
        paths[f"/{path}/{scope}{res.plural}/{{name}}"] = {
            "patch": {
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "OK"}},
            }
        }
        schema = dict(
            res.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        )
        schema["x-kubernetes-group-version-kind"] = [
            {"group": res.group, "version": res.version, "kind": res.kind}
        ]
        schemas[_schema_name(res)] = schema
    return {
        "openapi": "3.0.0",
        "info": {"title": "ocm-placement embedded API server", "version": "v1"},
        "paths": paths,
        "components": {"schemas": schemas},
    }
