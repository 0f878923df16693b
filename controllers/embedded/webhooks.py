"""The embedded API server's mutating admission chain: the `MutatingWebhookConfiguration`
objects it stores, called over HTTPS as kube-apiserver's MutatingAdmissionWebhook plugin calls
them, so that a webhook under test (the spot webhook) sits on the real admission path.

What a create goes through, after the built-in admission (pod defaults, priority) and before
validation and storage:

* **Which webhooks.** Every configuration, sorted by name, each webhook in order. A webhook is
  called when one of its `rules` matches (operation, API group, version, resource with `*`,
  `pods/*` and `*/*` as kube reads them, scope), its `namespaceSelector` matches the labels of
  the object's Namespace (which carries `kubernetes.io/metadata.name`, as on a real cluster)
  and its `objectSelector` the object's labels. `matchPolicy` `Equivalent` and `Exact` agree
  here: each resource is served in one version only, so no request has an equivalent in
  another. `matchConditions` (CEL) are not evaluated: the webhook is called as if they held.
* **The call.** An AdmissionReview v1 POSTed to `clientConfig.url`, verifying the serving
  certificate against `clientConfig.caBundle` (the system roots when it is empty), within
  `timeoutSeconds`. `clientConfig.service` names a Service the embedded server cannot reach (it
  has no cluster network): such a call fails, and the failure policy applies; give the
  embedded server a `url`.
* **Failures.** A webhook that cannot be reached, times out, fails TLS verification, answers
  other than 200 or with an invalid review (another uid, a patch without `patchType:
  JSONPatch`) is skipped under `failurePolicy: Ignore` and refuses the request under `Fail`
  (the default): 500 InternalError `failed calling webhook "<name>": ...`. A patch that does
  not apply always refuses it, whatever the policy (as kube does).
* **Answers.** `allowed: false` refuses the request with the webhook's status (code at least
  400, `admission webhook "<name>" denied the request: <message>`); a base64 JSONPatch is
  applied; `warnings` reach the client as `Warning: 299` headers.
* **Reinvocation.** When a webhook changes the object, every webhook called before it with
  `reinvocationPolicy: IfNeeded` is called once more after the first pass (and only those: a
  webhook skipped in the first pass is not called for the first time then).
* **dryRun.** The review says `dryRun: true`; v1 only admits webhooks whose `sideEffects` are
  `None` or `NoneOnDryRun`, so all of them are called (any other value refuses a dry run).

Only CREATE requests (POST, and server-side apply of a new object) pass through the chain:
rules naming UPDATE, DELETE or CONNECT never match a request of this server.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import ssl
import uuid
from collections.abc import Mapping
from typing import Any, Final

import aiohttp
import jsonpatch

from apis.admissionregistration import MutatingWebhook, MutatingWebhookConfiguration
from apis.errors import ObjectValidationError
from apis.meta import LabelSelector
from apis.registry import parse_as
from controllers.embedded.patch import copy_json
from controllers.embedded.resources import Resource
from controllers.embedded.status import StatusError
from controllers.embedded.store import Store

__all__ = ["NAMESPACE_NAME_LABEL", "MutatingWebhooks", "selector_matches"]

log = logging.getLogger(__name__)

NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
REVIEW_VERSION: Final = "admission.k8s.io/v1"
_CONFIGS: Final = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
_SIDE_EFFECT_FREE_ON_DRY_RUN: Final = ("None", "NoneOnDryRun")
_USER: Final = {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}


class _CallError(Exception):
    """Calling the webhook failed (kube's ErrCallingWebhook): the failure policy decides."""


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether `labels` satisfy a metav1.LabelSelector (None or empty: everything)."""
    if selector is None:
        return True
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions or ():
        present = req.key in labels
        values = req.values or []
        if req.operator == "In" and not (present and labels[req.key] in values):
            return False
        if req.operator == "NotIn" and present and labels[req.key] in values:
            return False
        if req.operator == "Exists" and not present:
            return False
        if req.operator == "DoesNotExist" and present:
            return False
    return True


def _rule_matches(hook: MutatingWebhook, res: Resource, operation: str, sub: str) -> bool:
    for rule in hook.rules or ():
        if not any(op in ("*", operation) for op in rule.operations or ()):
            continue
        if not any(g in ("*", res.group) for g in rule.api_groups or ()):
            continue
        if not any(v in ("*", res.version) for v in rule.api_versions or ()):
            continue
        scope = rule.scope or "*"
        if scope != "*" and (scope == "Namespaced") != res.namespaced:
            continue
        for resource in rule.resources or ():
            name, _, wanted_sub = resource.partition("/")
            if name in ("*", res.plural) and wanted_sub in ("*", sub):
                return True
    return False


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


class MutatingWebhooks:
    """The chain over one store's MutatingWebhookConfigurations; `close()` ends its client."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._configs = next((r for r in store.resources if r.key == _CONFIGS), None)
        self._parsed: dict[str, tuple[str, MutatingWebhookConfiguration]] = {}
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None
        self.calls = 0  # webhook calls made (tests and benchmarks read it)

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    # --- which webhooks -----------------------------------------------------------------------

    def _hooks(self) -> list[MutatingWebhook]:
        if self._configs is None:
            return []
        docs = list(self.store.list(self._configs, "", None))
        if not docs:
            return []
        hooks: list[MutatingWebhook] = []
        seen: set[str] = set()
        for doc in sorted(docs, key=lambda d: str(d["metadata"]["name"])):
            name, rv = doc["metadata"]["name"], doc["metadata"].get("resourceVersion", "")
            seen.add(name)
            cached = self._parsed.get(name)
            if cached is None or cached[0] != rv:
                try:
                    cached = (rv, parse_as(MutatingWebhookConfiguration, doc))
                except ObjectValidationError as exc:  # stored as is by `add`: skip, loudly
                    log.warning("MutatingWebhookConfiguration %s ignored: %s", name, exc)
                    continue
                self._parsed[name] = cached
            hooks.extend(cached[1].webhooks or ())
        for stale in self._parsed.keys() - seen:
            del self._parsed[stale]
        return hooks

    def _namespace_labels(self, res: Resource, obj: Mapping[str, Any], namespace: str) -> Any:
        if res is self.store.namespaces:
            return {**_labels(obj), NAMESPACE_NAME_LABEL: obj["metadata"].get("name", "")}
        if not res.namespaced or self.store.namespaces is None:
            return None  # a namespaceSelector does not apply to cluster-scoped objects
        try:
            ns = self.store.get(self.store.namespaces, "", namespace)
        except StatusError:
            ns = {}
        return {**_labels(ns), NAMESPACE_NAME_LABEL: namespace}

    def _matches(
        self, hook: MutatingWebhook, res: Resource, obj: Mapping[str, Any], namespace: str
    ) -> bool:
        if not _rule_matches(hook, res, "CREATE", ""):
            return False
        if not selector_matches(hook.object_selector, _labels(obj)):
            return False
        ns_labels = self._namespace_labels(res, obj, namespace)
        return ns_labels is None or selector_matches(hook.namespace_selector, ns_labels)

    # --- the chain ----------------------------------------------------------------------------

    async def mutate(
        self,
        res: Resource,
        obj: dict[str, Any],
        namespace: str,
        *,
        dry_run: bool,
        warnings: list[str],
    ) -> dict[str, Any]:
        """The object after every matching webhook (`obj` itself when none matched); the
        webhooks' warnings appended to `warnings`; StatusError when one refuses it."""
        hooks = self._hooks()
        if not hooks:
            return obj
        meta = obj.get("metadata")
        if res.namespaced and isinstance(meta, dict) and not meta.get("namespace") and namespace:
            meta["namespace"] = namespace
        namespace = namespace or str((meta or {}).get("namespace") or "")
        reinvocable: list[int] = []  # called, IfNeeded, not yet due again
        due: set[int] = set()
        for round_ in (1, 2):
            for i, hook in enumerate(hooks):
                if round_ == 2 and i not in due:
                    continue
                if not self._matches(hook, res, obj, namespace):
                    continue
                changed, obj = await self._call(hook, res, obj, namespace, dry_run, warnings)
                if round_ == 1:
                    if changed:  # everything before it that asked to see later changes
                        due.update(reinvocable)
                    if hook.reinvocation_policy == "IfNeeded":
                        reinvocable.append(i)
            if not due:
                break
        return obj

    async def _call(
        self,
        hook: MutatingWebhook,
        res: Resource,
        obj: dict[str, Any],
        namespace: str,
        dry_run: bool,
        warnings: list[str],
    ) -> tuple[bool, dict[str, Any]]:
        if dry_run and hook.side_effects not in _SIDE_EFFECT_FREE_ON_DRY_RUN:
            raise StatusError(400, f'admission webhook "{hook.name}" does not support dry run')
        try:
            response = await self._post(hook, self._review(res, obj, namespace, dry_run))
        except _CallError as exc:
            if hook.effective_failure_policy == "Ignore":
                log.warning("failed calling webhook %s, failing open: %s", hook.name, exc)
                return False, obj
            message = f'Internal error occurred: failed calling webhook "{hook.name}": {exc}'
            raise StatusError(500, message, "InternalError") from None
        warnings.extend(str(w) for w in response.get("warnings") or ())
        if not response.get("allowed"):
            raise _denied(hook.name, response.get("status"))
        raw = response.get("patch")
        if not raw:
            return False, obj
        try:
            ops = json.loads(base64.b64decode(raw, validate=True))
            patched = jsonpatch.JsonPatch(ops).apply(copy_json(obj), in_place=True)
        except (
            ValueError,
            binascii.Error,
            jsonpatch.JsonPatchException,
            jsonpatch.JsonPointerException,
        ) as exc:
            message = f'Internal error occurred: admission webhook "{hook.name}" returned a '
            raise StatusError(500, f"{message}patch that cannot be applied: {exc}") from None
        if not isinstance(patched, dict):
            message = f'Internal error occurred: admission webhook "{hook.name}" patched the '
            raise StatusError(500, message + "object into a non-object", "InternalError")
        return patched != obj, patched

    def _review(
        self, res: Resource, obj: dict[str, Any], namespace: str, dry_run: bool
    ) -> dict[str, Any]:
        kind = {"group": res.group, "version": res.version, "kind": res.kind}
        resource = {"group": res.group, "version": res.version, "resource": res.plural}
        options: dict[str, Any] = {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        if dry_run:
            options["dryRun"] = ["All"]
        request = {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": str((obj.get("metadata") or {}).get("name") or ""),
            "namespace": namespace if res.namespaced else "",
            "operation": "CREATE",
            "userInfo": _USER,
            "object": obj,
            "oldObject": None,
            "dryRun": dry_run,
            "options": options,
        }
        return {"apiVersion": REVIEW_VERSION, "kind": "AdmissionReview", "request": request}

    # --- HTTPS --------------------------------------------------------------------------------

    def _context(self, ca_bundle: str | None) -> ssl.SSLContext:
        key = ca_bundle or ""
        context = self._contexts.get(key)
        if context is None:
            if not key:
                context = ssl.create_default_context()
            else:
                try:
                    pem = base64.b64decode(key, validate=True).decode("ascii")
                    context = ssl.create_default_context(cadata=pem)
                except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
                    raise _CallError(f"caBundle is not a base64 PEM bundle: {exc}") from None
            self._contexts[key] = context
        return context

    async def _post(self, hook: MutatingWebhook, review: dict[str, Any]) -> dict[str, Any]:
        """POST the review; the `response` of the answer, or _CallError."""
        config = hook.client_config
        if config.url is None:
            service = config.service
            where = f"{service.namespace}/{service.name}" if service is not None else "?"
            raise _CallError(
                f"service {where}: the embedded API server has no cluster network to reach a "
                "Service; set clientConfig.url"
            )
        if "v1" not in hook.admission_review_versions:
            raise _CallError("the webhook accepts no AdmissionReview version this server sends")
        context = self._context(config.ca_bundle)
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256))
        timeout = aiohttp.ClientTimeout(total=hook.effective_timeout)
        self.calls += 1
        try:
            async with self._session.post(
                config.url, json=review, ssl=context, timeout=timeout
            ) as answer:
                if answer.status != 200:
                    text = (await answer.text())[:200]
                    raise _CallError(f"the server answered {answer.status}: {text}")
                doc = await answer.json(content_type=None)
        except TimeoutError:
            raise _CallError(
                f'failed to call webhook: Post "{config.url}": context deadline exceeded '
                f"({hook.effective_timeout}s)"
            ) from None
        except (aiohttp.ClientError, ValueError, OSError) as exc:
            raise _CallError(f'failed to call webhook: Post "{config.url}": {exc}') from None
        return _verified(doc, review["request"]["uid"])


def _verified(doc: Any, uid: str) -> dict[str, Any]:
    """The `response` of a well-formed AdmissionReview v1 answering `uid`, or _CallError."""
    problem = None
    response = doc.get("response") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or (doc.get("apiVersion"), doc.get("kind")) != (
        REVIEW_VERSION,
        "AdmissionReview",
    ):
        problem = f"expected webhook response of {REVIEW_VERSION}, Kind=AdmissionReview"
    elif not isinstance(response, dict):
        problem = "response was absent"
    elif response.get("uid") != uid:
        problem = f"expected response.uid={uid!r}, got {response.get('uid')!r}"
    elif not isinstance(response.get("allowed"), bool):
        problem = "response.allowed is not a boolean"
    elif (response.get("patch") or response.get("patchType")) and response.get(
        "patchType"
    ) != "JSONPatch":
        problem = f"webhook returned invalid response.patchType {response.get('patchType')!r}"
    if problem is not None:
        raise _CallError(f"received invalid webhook response: {problem}")
    assert isinstance(response, dict)
    return response


def _denied(name: str, status: Any) -> StatusError:
    """kube's refusal: the webhook's status, its code at least 400, its message prefixed."""
    status = status if isinstance(status, dict) else {}
    code = status.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    denied = f'admission webhook "{name}" denied the request'
    if status.get("message"):
        message = f"{denied}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied}: {status['reason']}"
    else:
        message = f"{denied} without explanation"
    reason = status.get("reason") if isinstance(status.get("reason"), str) else None
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return StatusError(code, message, reason, details)
