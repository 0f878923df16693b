"""The `continue` token of a paged list, in kube-apiserver's format: unpadded URL-safe base64 of
`{"v":"meta.k8s.io/v1","rv":<resourceVersion>,"start":"<namespace>/<name>\\u0000"}` (the key
after which the next page starts), refused in its words when it does not decode:
`invalid continue token: continue key is not valid: illegal base64 data at input byte 4`."""

from __future__ import annotations

import base64
import binascii
import json
import string

from controllers.embedded.status import StatusError

__all__ = ["decode_continue", "encode_continue"]

_VERSION = "meta.k8s.io/v1"
_ALPHABET = frozenset(string.ascii_letters + string.digits + "-_")
Key = tuple[str, str]  # (namespace, name) of the last object of a page


def encode_continue(rv: str, last: Key) -> str:
    namespace, name = last
    start = f"{namespace}/{name}\x00" if namespace else f"{name}\x00"
    doc = {"v": _VERSION, "rv": int(rv), "start": start}
    raw = json.dumps(doc, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _refused(why: str) -> StatusError:
    return StatusError(400, f"invalid continue token: continue key is not valid: {why}")


def decode_continue(token: str) -> tuple[str, Key]:
    """(resourceVersion, last key) of a token; 400 as kube-apiserver words it."""
    bad = next((i for i, char in enumerate(token) if char not in _ALPHABET), None)
    if bad is None and len(token) % 4 == 1:
        bad = len(token) - 1  # a lone last character encodes no whole byte
    if bad is not None:
        raise _refused(f"illegal base64 data at input byte {bad}")
    try:
        doc = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError):
        raise _refused("the token is not JSON") from None
    if not isinstance(doc, dict) or doc.get("v") != _VERSION:
        raise _refused("server does not recognize this encoded version")
    rv, start = doc.get("rv"), doc.get("start")
    if not isinstance(rv, int) or isinstance(rv, bool) or not isinstance(start, str):
        raise _refused("the token names no resourceVersion or start key")
    namespace, _, name = start.rstrip("\x00").rpartition("/")
    return str(rv), (namespace, name)
