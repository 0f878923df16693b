"""The differential check of the embedded API server against kube-apiserver: one script of
requests (`SCRIPT`, built by `tests.e2e.differential_script`), sent through the same client
path (our gateway's raw request, the one every verb of `controllers.kube.Gateway` goes through)
to both servers, and each answer reduced to what a client can tell apart (`Outcome`): the HTTP
status code, the Status `reason`, its `details.causes` (field, reason, message) and the object
answered, with the fields each server sets its own way (uid, resourceVersion values,
timestamps, managedFields) normalised away.

A step may `remember` the resourceVersion its answer carries, for a later step's stale update
or watch to use (`Memory`); a watch step reads its stream for `watch` seconds (the server ends
it at `timeoutSeconds`) and reduces it to its events, BOOKMARKs counted apart (their timing is
each server's own), an ERROR event kept with its Status.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp

from controllers.kube.config import ClusterAccess, new_api_client
from controllers.kube.errors import ApiError
from controllers.kube.gateway import Gateway

__all__ = ["JSON", "Memory", "Outcome", "Step", "WireGateway", "normalise", "run_script"]

JSON = "application/json"
Memory = dict[str, str]
# A body or query written against what earlier steps remembered.
Dynamic = Callable[[Memory], Any]

_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
_RV_IN_MESSAGE = re.compile(r"(resource version: )\d+( \(\d+\))?")
_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink")


@dataclass(frozen=True)
class Step:
    """One request of the script. `path` may hold `{ns}` (the script's namespace) and
    `{name}` (its cluster-scoped name prefix); `body` and `query` may be functions of the
    memory of earlier steps."""

    name: str
    method: str
    path: str
    body: Any | Dynamic = None
    query: Mapping[str, str] | Dynamic = field(default_factory=dict)
    content_type: str = JSON
    remember: str = ""  # keep the answer's metadata.resourceVersion under this key
    watch: float = 0.0  # seconds to read a watch stream for (0: not a watch)
    generated: str = ""  # a generateName: the random suffix after it is masked in messages


@dataclass(frozen=True)
class Outcome:
    """What a client can tell of one answer."""

    code: int
    reason: str = ""
    message: str = ""
    causes: tuple[tuple[str, str, str], ...] = ()
    body: Any = None
    # The resourceVersion the answer carried (not compared: each server counts its own).
    rv: str = field(default="", compare=False)
    token: str = field(default="", compare=False)  # a list's continue token

    def describe(self) -> str:
        return json.dumps(
            {
                "code": self.code,
                "reason": self.reason,
                "message": self.message,
                "causes": self.causes,
                "body": self.body,
            },
            indent=1,
            sort_keys=True,
        )


def normalise(value: Any) -> Any:
    """`value` with server-set metadata dropped and every timestamp replaced by `<time>`."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "metadata" and isinstance(item, dict):
                meta = {k: v for k, v in item.items() if k not in _SERVER_SET}
                if "resourceVersion" in item:
                    meta["resourceVersion"] = "<rv>"
                out[key] = normalise(meta)
            elif key == "continue" and isinstance(item, str):
                out[key] = "<token>" if item else ""
            elif key == "uid" and isinstance(item, str):
                out[key] = "<uid>"
            else:
                out[key] = normalise(item)
        return out
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str) and _TIME.match(value):
        return "<time>"
    return value


def _message(text: str) -> str:
    return _UID.sub("<uid>", _RV_IN_MESSAGE.sub(r"\1<rv>", text))


def _error(exc: ApiError) -> Outcome:
    causes = tuple(sorted((c.field, c.reason, _message(c.message)) for c in exc.causes))
    message = _message(exc.message)
    if causes and " is invalid: " in message:
        # kube-apiserver lists the causes in its message in no fixed order: the causes are
        # compared one by one instead
        message = message.split(" is invalid: ")[0] + " is invalid: <the causes>"
    return Outcome(exc.code, exc.reason, message, causes)


class WireGateway(Gateway):
    """Our gateway, asked for raw requests: each goes through `Gateway._open`, the path of
    every typed verb."""

    @classmethod
    async def open(cls, access: ClusterAccess) -> WireGateway:
        return cls(await new_api_client(access), backoff=0.01)

    async def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str],
        body: Any,
        content_type: str,
    ) -> Outcome:
        try:
            response = await self._open(
                method, path, query=query, body=body, content_type=content_type
            )
        except ApiError as exc:
            return _error(exc)
        code = response.status
        data = await response.read()
        response.release()
        doc = json.loads(data) if data else None
        meta = (doc.get("metadata") if isinstance(doc, dict) else None) or {}
        rv, token = str(meta.get("resourceVersion") or ""), str(meta.get("continue") or "")
        return Outcome(code, body=normalise(doc), rv=rv, token=token)

    async def watch_for(self, path: str, query: Mapping[str, str], seconds: float) -> Outcome:
        """Read a watch stream until the server ends it (or `seconds` pass): its events,
        BOOKMARKs counted apart."""
        events: list[Any] = []
        bookmarks: list[Any] = []
        try:
            response = await self._open(
                "GET",
                path,
                query={**query, "watch": "true"},
                timeout=aiohttp.ClientTimeout(total=None, sock_read=seconds + 2),
            )
        except ApiError as exc:
            return _error(exc)
        code = response.status
        try:
            async with asyncio.timeout(seconds + 2):
                async for line in response.content:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "BOOKMARK":
                        bookmarks.append(sorted((obj.get("metadata") or {}).keys()))
                    elif event.get("type") == "ERROR":
                        obj = {**obj, "message": _message(str(obj.get("message", "")))}
                        events.append(["ERROR", normalise(obj)])
                    else:
                        events.append([event.get("type"), normalise(obj)])
        except TimeoutError:
            events.append(["<stream not ended by timeoutSeconds>"])
        finally:
            response.release()
        # A bookmark's only content is its resourceVersion; how many arrive is timing.
        shapes = sorted({json.dumps(b) for b in bookmarks})
        return Outcome(code, body={"events": events, "bookmarks": shapes})


def _resolve(value: Any, memory: Memory) -> Any:
    return value(memory) if callable(value) else value


def _named(value: Any, names: Mapping[str, str]) -> Any:
    """`value` with `{ns}` and `{name}` filled in wherever a string holds them."""
    if isinstance(value, str):
        return value.format(**names) if "{" in value else value
    if isinstance(value, dict):
        return {k: _named(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_named(v, names) for v in value]
    return value


async def run_script(
    gateway: WireGateway, script: list[Step], namespace: str, name: str
) -> list[Outcome]:
    """Send every step of `script` in order; their outcomes, in the same order."""
    memory: Memory = {}
    outcomes = []
    for step in script:
        names = {"ns": namespace, "name": name}
        path = step.path.format(**names)
        query = {k: str(v) for k, v in (_resolve(step.query, memory) or {}).items()}
        body = _named(_resolve(step.body, memory), names)
        if step.watch:
            outcome = await gateway.watch_for(path, query, step.watch)
        else:
            outcome = await gateway.call(
                step.method, path, query=query, body=body, content_type=step.content_type
            )
            if step.remember and outcome.code < 300:
                memory[step.remember] = outcome.rv
                memory[step.remember + ":continue"] = outcome.token
        if step.generated:
            outcome = _masked(outcome, step.generated)
        outcomes.append(outcome)
    return outcomes


def _masked(outcome: Outcome, prefix: str) -> Outcome:
    """`outcome` with the 5 random characters after `prefix` (a generated name) masked."""
    suffix = re.compile(re.escape(prefix) + "[a-z0-9]{5}")

    def mask(text: str) -> str:
        return suffix.sub(prefix + "<suffix>", text)

    causes = tuple((f, r, mask(m)) for f, r, m in outcome.causes)
    return replace(outcome, message=mask(outcome.message), causes=causes)
