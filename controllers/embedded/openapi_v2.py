"""`/openapi/v2`: the Swagger 2.0 document kubectl asks for when the v3 documents do not answer
its question (kubectl before v1.29 validates and checks `fieldValidation` support with it only;
later ones fall back to it for a kind missing from the v3 documents, and for the strategic-merge
metadata of a core kind).

It is truthful and minimal: no schemas (the kinds' schemas are in the v3 documents, `openapi`),
and for each served kind the one operation kubectl reads in it, the PATCH of an object, tagged
with the kind's group/version/kind and taking the `fieldValidation` query parameter, which this
server honours. A client with a v2 document and no schema for a kind skips its own validation
and leaves it to the server; a kind the server does not serve is then refused by kubectl's
mapping (`no matches for kind`) instead of "failed to download openapi".

kubectl reads it as protobuf (gnostic's `openapi.v2.Document`), encoded here by hand: strings,
nested messages and repeated fields are all the document needs. `Accept: application/json`
gets the same document as JSON.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from controllers.embedded.resources import Resource

__all__ = ["PROTOBUF", "openapi_v2_document", "openapi_v2_protobuf", "openapi_v2_response"]

PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
TITLE = "ocm-placement embedded API server"
GVK_EXTENSION = "x-kubernetes-group-version-kind"


def _object_path(res: Resource) -> str:
    root = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
    scope = "/namespaces/{namespace}" if res.namespaced else ""
    return f"{root}{scope}/{res.plural}/{{name}}"


def _gvk(res: Resource) -> dict[str, str]:
    return {"group": res.group, "kind": res.kind, "version": res.version}


def openapi_v2_document(resources: list[Resource], version: str) -> dict[str, Any]:
    """The document as JSON: one PATCH operation per served kind, no definitions."""
    paths = {
        _object_path(res): {
            "patch": {
                GVK_EXTENSION: _gvk(res),
                "parameters": [{"name": "fieldValidation", "in": "query", "type": "string"}],
                "responses": {"200": {"description": "OK"}},
            }
        }
        for res in resources
    }
    return {"swagger": "2.0", "info": {"title": TITLE, "version": version}, "paths": paths}


# --- protobuf, the wire format of gnostic's openapi.v2 messages -------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field (wire type 2): a string or a nested message."""
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _patch_operation(res: Resource) -> bytes:
    # Operation.parameters (8) -> ParametersItem.parameter (1) -> Parameter.non_body_parameter
    # (2) -> NonBodyParameter.query_parameter_sub_schema (3): in (2), name (4), type (6).
    query = _field(2, "query") + _field(4, "fieldValidation") + _field(6, "string")
    parameter = _field(1, _field(2, _field(3, query)))
    # Operation.vendor_extension (13): NamedAny name (1), value (2) -> Any.yaml (2).
    gvk = "".join(f"{key}: {json.dumps(value)}\n" for key, value in _gvk(res).items())
    extension = _field(1, GVK_EXTENSION) + _field(2, _field(2, gvk))
    return _field(8, parameter) + _field(13, extension)


def openapi_v2_protobuf(resources: list[Resource], version: str) -> bytes:
    """The document as gnostic's `openapi.v2.Document`: swagger (1), info (2: title 1, version
    2), paths (8: NamedPathItem 2, name 1, PathItem 2 with patch 8)."""
    paths = b"".join(
        _field(2, _field(1, _object_path(res)) + _field(2, _field(8, _patch_operation(res))))
        for res in resources
    )
    info = _field(1, TITLE) + _field(2, version)
    return _field(1, "2.0") + _field(2, info) + _field(8, paths)


def openapi_v2_response(
    request: web.Request, resources: list[Resource], version: str
) -> web.Response:
    """Protobuf unless the client asks for JSON only."""
    accept = request.headers.get("Accept", "")
    if "json" in accept and "protobuf" not in accept:
        body = json.dumps(openapi_v2_document(resources, version))
        return web.Response(body=body, content_type="application/json")
    return web.Response(
        body=openapi_v2_protobuf(resources, version), headers={"Content-Type": PROTOBUF}
    )
