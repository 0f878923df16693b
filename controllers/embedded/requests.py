"""Reading a request and answering in JSON, for the embedded API server's handlers: the body
(kube-apiserver's size limit, JSON or an apply patch's YAML, a nesting and expansion bound),
integer query parameters with Go's ParseInt words, the check of a body's type against the URL,
and the JSON response with its `Warning` headers. Every refusal is a `StatusError`."""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web
from pydantic_core import from_json

from controllers.embedded.patch import APPLY_PATCH
from controllers.embedded.resources import Resource
from controllers.embedded.status import StatusError
from controllers.embedded.writes import warning_header

__all__ = [
    "MAX_BODY_DEPTH",
    "MAX_REQUEST_BODY",
    "check_type_meta",
    "json_response",
    "query_int",
    "read_body",
]

MAX_REQUEST_BODY = 3 * 1024 * 1024
"""kube-apiserver's request body limit (`--max-request-body-bytes`, etcd's 3 MiB value limit)."""
MAX_BODY_DEPTH = 100
"""How deep a request body may nest. kube-apiserver's decoder allows 10,000 levels; every walk
of a body here (pruning, defaults, unknown fields) recurses, within Python's 1,000 frames, and
no kind served nests more than a few dozen levels."""


def query_int(query: Any, name: str) -> int | None:
    """The integer query parameter `name`, or None when absent; 400 with Go's ParseInt words
    when it is no integer, as kube-apiserver answers `?limit=abc`."""
    text = query.get(name)
    if not text:
        return None
    try:
        value = int(text, 10)
    except ValueError:
        raise StatusError(400, f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
    if not -(2**63) <= value < 2**63:  # the fields are int64
        raise StatusError(400, f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def _shape_problem(data: Any) -> str | None:
    """What makes a decoded body unfit to walk: nesting deeper than MAX_BODY_DEPTH, or more
    values than a body of MAX_REQUEST_BODY bytes can hold in JSON (YAML aliases repeat a node
    without repeating its text: a few KiB can stand for billions of values, or for a cycle)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    seen = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > MAX_REQUEST_BODY:
            return f"the request body expands to more than {MAX_REQUEST_BODY} values"
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= MAX_BODY_DEPTH:
            return f"the request body nests deeper than {MAX_BODY_DEPTH} levels"
        stack.extend((child, depth + 1) for child in children)
    return None


def _shallow_json(raw: bytes) -> bool:
    """Whether a body that decoded as JSON is surely fit to walk without walking it: JSON
    repeats nothing, so it holds at most one value per byte (within MAX_REQUEST_BODY, checked
    before), and with at most MAX_BODY_DEPTH brackets (in strings too: an upper bound) no
    object or list can nest deeper. Most bodies (a pod, a binding, an Event) have a dozen."""
    return raw.count(b"{") + raw.count(b"[") <= MAX_BODY_DEPTH


_NOT_JSON: Any = object()


def _json(raw: bytes) -> Any:
    """`raw` decoded as json.loads decodes it, `_NOT_JSON` when it is no JSON. pydantic's
    parser reads it first (the same values, in half the time); what it refuses (an integer of
    more digits than Python converts, deep nesting, invalid UTF-8, another encoding) is left to
    json.loads, which takes it or says it is no JSON, as it always did."""
    try:
        return from_json(raw)
    except ValueError:
        pass
    try:
        return json.loads(raw)
    except RecursionError:
        message = f"the request body nests deeper than {MAX_BODY_DEPTH} levels"
        raise StatusError(400, message) from None
    except ValueError:
        return _NOT_JSON


def _apply_yaml(raw: bytes) -> Any:
    """An apply patch sent as YAML, decoded; 400 when it is not YAML or nests too deep for
    the decoder (its shape is checked after)."""
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        raise StatusError(400, "the apply patch is not valid YAML") from None
    except RecursionError:
        message = f"the request body nests deeper than {MAX_BODY_DEPTH} levels"
        raise StatusError(400, message) from None
    except ValueError:  # an integer of more digits than Python converts
        raise StatusError(400, "the apply patch is not valid YAML") from None


def _undecodable(res: Resource, api_version: str, kind: str) -> None:
    """kube-apiserver's 400 for a body of a built-in kind's URL that its decoder cannot turn
    into that kind: another version, or another kind (converted to the URL's, and failing)."""
    where = (
        f'{kind} in version "{api_version.rsplit("/", 1)[-1]}" cannot be handled as a {res.kind}'
    )
    if api_version != res.api_version:
        scheme = "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"
        why = f'no kind "{kind}" is registered for version "{api_version}" in scheme "{scheme}"'
    else:
        internal = res.group.split(".")[0] if res.group else "core"
        why = f"converting ({res.version}.{kind}) to ({internal}.{res.kind}): unknown conversion"
    raise StatusError(400, f"{where}: {why}")


def check_type_meta(res: Resource, body: dict[str, Any]) -> None:
    """kube-apiserver's check of a created or replaced object's type against the URL. For a
    built-in kind, another version or kind is a 400 (its decoder cannot read it); for a custom
    one, another group/version is 400, another kind of the same one 422 (an empty field takes
    the URL's)."""
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if res.builtin and (api_version or kind) and (kind, api_version) != (res.kind, res.api_version):
        _undecodable(res, str(api_version or res.api_version), str(kind or res.kind))
    if api_version and api_version != res.api_version:
        raise StatusError(
            400,
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({res.api_version})",
        )
    if kind and kind != res.kind:
        meta = body.get("metadata")
        name = meta.get("name", "") if isinstance(meta, dict) else ""
        qualified = f"{kind}.{res.group}" if res.group else str(kind)
        message = f'Invalid value: "{kind}": must be {res.kind}'
        cause = {"reason": "FieldValueInvalid", "field": "kind", "message": message}
        raise StatusError(
            422,
            f'{qualified} "{name}" is invalid: kind: {message}',
            "Invalid",
            {"name": name, "group": res.group, "kind": kind, "causes": [cause]},
        )


async def read_body(request: web.Request) -> Any:
    """The decoded request body (JSON, or YAML for an apply patch), None when empty; 413 past
    MAX_REQUEST_BODY bytes, 400 when it does not decode or its shape is unfit to walk."""
    too_large = StatusError(
        413, f"Request entity too large: limit is {MAX_REQUEST_BODY}", "RequestEntityTooLarge"
    )
    if (request.content_length or 0) > MAX_REQUEST_BODY:
        raise too_large
    chunks, size = [], 0
    while chunk := await request.content.read(64 * 1024):  # a chunked body has no length
        size += len(chunk)
        if size > MAX_REQUEST_BODY:
            raise too_large
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw:
        return None
    data = _json(raw)
    if data is _NOT_JSON:
        if request.content_type != APPLY_PATCH:  # kubectl sends JSON, YAML is allowed too
            raise StatusError(400, "the request body is not valid JSON")
        data = _apply_yaml(raw)
    elif _shallow_json(raw):
        return data
    problem = _shape_problem(data)
    if problem is not None:
        raise StatusError(400, problem)
    return data


def json_response(
    doc: Any, status: int = 200, warnings: list[str] | None = None, encoded: bytes | None = None
) -> web.Response:
    """`doc` as a JSON response (`encoded`: its json.dumps already encoded), each warning a
    `Warning` header."""
    body = encoded if encoded is not None else json.dumps(doc)
    response = web.Response(body=body, status=status, content_type="application/json")
    for warning in warnings or ():
        response.headers.add("Warning", warning_header(warning))
    return response
