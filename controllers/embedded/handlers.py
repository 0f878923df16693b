"""HTTP handlers of the embedded API server: URL routing to resources, the verbs (with their
`fieldValidation`, `dryRun` and Table answers), subresources (`/status`, `pods/binding`,
`pods/eviction`), the audit log and fault injection; watches are served by `watches`, and
reading bodies and query integers is `requests`'. Every error is answered as a
`metav1.Status`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web

from apis.services import free_cluster_ip, replication_controller_defaults, service_defaults
from controllers.embedded.audit import Audit, AuditEntry
from controllers.embedded.continuetoken import decode_continue, encode_continue
from controllers.embedded.faults import Faults
from controllers.embedded.history import encoded_as_stored
from controllers.embedded.openapi import openapi_document, openapi_index
from controllers.embedded.openapi_v2 import openapi_v2_response
from controllers.embedded.patch import APPLY_PATCH, apply_patch
from controllers.embedded.pods import (
    admit_pod,
    admit_priority_class,
    bind_pod,
    grace_period,
    is_pod,
)
from controllers.embedded.requests import (
    check_type_meta,
    json_response,
    query_int,
    read_body,
)
from controllers.embedded.resources import (
    SERVER_VERSION,
    Resource,
    api_group_list,
    api_resource_list,
)
from controllers.embedded.selectors import query_predicate
from controllers.embedded.status import StatusError, status_doc, success_json
from controllers.embedded.store import Propagation, Store
from controllers.embedded.tables import table_view
from controllers.embedded.watches import Watches
from controllers.embedded.webhooks import MutatingWebhooks
from controllers.embedded.writes import checked_fields, require_field_manager, write_options
from placement.pods.cluster.volumes import with_default_class

__all__ = ["Handlers", "Target"]

_TRUE = ("true", "1")
_TYPE_META = ("apiVersion", "kind")
_NOT_FOUND = "the server could not find the requested resource"
_NO_STRATEGIC = (  # kube's answer to a strategic merge patch of a custom object
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
PRIORITY_CLASSES = ("scheduling.k8s.io", "priorityclasses")
STORAGE_CLASSES = ("storage.k8s.io", "storageclasses")


@dataclass(frozen=True)
class Target:
    """What a resource URL names: a collection, an object, or one of its subresources."""

    resource: Resource
    namespace: str
    name: str = ""
    sub: str = ""


class Handlers:
    """The request handlers over one store, with its fault injection."""

    def __init__(
        self, store: Store, faults: Faults, bookmark_interval: float, audit: Audit
    ) -> None:
        self.store = store
        self.faults = faults
        self.audit = audit
        self.watches = Watches(store, faults, bookmark_interval)
        self.webhooks = MutatingWebhooks(store)  # the mutating admission chain (CREATE)
        self._by_path = {(r.group, r.version, r.plural): r for r in store.resources}
        # With the kubelet simulation, a pod deleted without a grace period gets its own
        # (`terminationGracePeriodSeconds`); without it, it goes at once (no kubelet would
        # ever finish the deletion). See `pods.grace_period`.
        self.pod_grace_from_spec = False
        self._priority_classes = next(
            (r for r in store.resources if (r.group, r.plural) == PRIORITY_CLASSES), None
        )
        self._storage_classes = next(
            (r for r in store.resources if (r.group, r.plural) == STORAGE_CLASSES), None
        )

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        if self.faults.latency:
            await asyncio.sleep(self.faults.latency)
        try:
            return await self._route(request)
        except StatusError as exc:
            return json_response(exc.doc, exc.code)

    # --- routing -----------------------------------------------------------------------------

    async def _route(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if parts in (["healthz"], ["readyz"], ["livez"]):
            return web.Response(text="ok")
        if parts == ["version"]:
            return json_response(SERVER_VERSION)
        if parts == ["api"]:
            return json_response({"kind": "APIVersions", "versions": ["v1"]})
        if parts == ["apis"]:
            return json_response(api_group_list(self.store.resources))
        if parts == ["openapi", "v2"]:
            version = str(SERVER_VERSION["gitVersion"])
            return openapi_v2_response(request, self.store.resources, version)
        if parts[:2] == ["openapi", "v3"]:
            doc = (
                openapi_index(self.store.resources)
                if len(parts) == 2
                else openapi_document("/".join(parts[2:]), self.store.resources)
            )
            if doc is None:
                raise StatusError(404, f"no OpenAPI document for {'/'.join(parts[2:])}")
            return json_response(doc)
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 2:
            group, version, rest = parts[1], parts[2] if len(parts) > 2 else "", parts[3:]
            if len(parts) == 2:
                return self._group(group)
        else:
            raise StatusError(404, _NOT_FOUND)
        if not rest:
            served = [r for r in self.store.resources if (r.group, r.version) == (group, version)]
            if not served:
                raise StatusError(404, _NOT_FOUND)
            gv = f"{group}/{version}" if group else version
            return json_response(api_resource_list(gv, served))
        target = self._target(group, version, rest)
        return await self._serve(request, target)

    def _group(self, group: str) -> web.Response:
        for entry in api_group_list(self.store.resources)["groups"]:
            if entry["name"] == group:
                return json_response({"kind": "APIGroup", "apiVersion": "v1", **entry})
        raise StatusError(404, _NOT_FOUND)

    def _resource(self, group: str, version: str, plural: str) -> Resource:
        res = self._by_path.get((group, version, plural))
        if res is None:
            raise StatusError(404, _NOT_FOUND)
        return res

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        if len(rest) >= 3 and rest[0] == "namespaces":
            res = self._by_path.get((group, version, rest[2]))
            if res is not None and res.namespaced and len(rest) <= 5:
                return Target(res, rest[1], *rest[3:5])
        res = self._resource(group, version, rest[0])
        if len(rest) > 3:
            raise StatusError(404, "the server could not find the requested resource")
        return Target(res, "", *rest[1:3])

    def _check_fault(self, verb: str) -> None:
        code = self.faults.error_for(verb)
        if code is not None:
            raise StatusError(code, f"injected fault on {verb}")

    # --- verbs -------------------------------------------------------------------------------

    async def _serve(self, request: web.Request, t: Target) -> web.StreamResponse:
        method, query = request.method, request.query
        res = t.resource
        if not t.name:
            if method == "GET" and query.get("watch", "").lower() in _TRUE:
                self.audit[AuditEntry("watch", res.group, res.plural, "", t.namespace)] += 1
                self._check_fault("watch")
                query_int(query, "timeoutSeconds")  # 400 before the stream starts
                view = table_view(res, request.headers.get("Accept", ""), query)
                return await self.watches.serve(request, res, t.namespace, view)
            verb = {"GET": "list", "POST": "create", "DELETE": "deletecollection"}.get(method)
        else:
            verb = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
                method, "create" if method == "POST" and t.sub else None
            )
        if verb is None:
            raise StatusError(405, f"{method} is not allowed here")
        self.audit[AuditEntry(verb, res.group, res.plural, t.sub, t.namespace)] += 1
        self._check_fault(verb)
        if t.sub and t.sub != "status":
            return await self._pod_subresource(request, t)
        if t.sub == "status" and not t.resource.has_status:
            raise StatusError(404, _NOT_FOUND)  # kube's words: no /status for this kind
        store = self.store
        if not t.name:
            if verb == "list":
                return self._list(request, t)
            if verb == "create":
                options = write_options(query)
                body = await read_body(request)
                if not isinstance(body, dict):
                    raise StatusError(400, "the request body must be an object")
                check_type_meta(res, body)
                warnings = checked_fields(res, body, options.validation)
                keep = self._admit(res, body)
                body = await self.webhooks.mutate(
                    res, body, t.namespace, dry_run=options.dry_run, warnings=warnings
                )
                created = store.create(
                    res, body, t.namespace, dry_run=options.dry_run, keep_status=keep
                )
                return json_response(created, 201, warnings, encoded_as_stored(store.last, created))
            return self._delete_collection(t, query)
        if verb == "get":
            obj = store.get(res, t.namespace, t.name)
            view = table_view(res, request.headers.get("Accept", ""), query)
            if view is None:
                return json_response(obj)
            return json_response(
                view.table([obj], {"resourceVersion": obj["metadata"]["resourceVersion"]})
            )
        if verb == "delete":
            return await self._delete(request, t)
        options = write_options(query)
        body = sent = await read_body(request)
        if verb == "patch":
            if request.content_type == APPLY_PATCH:
                require_field_manager(query)
            elif request.content_type == STRATEGIC_PATCH and not res.builtin:
                raise StatusError(415, _NO_STRATEGIC, "UnsupportedMediaType")
            current = self._patched(request.content_type, t)
            body = apply_patch(request.content_type, current or {}, sent)
            if current is None:  # server-side apply of an object that does not exist creates it
                warnings = checked_fields(res, body, options.validation, name=t.name, patch=sent)
                keep = self._admit(res, body)
                body = await self.webhooks.mutate(
                    res, body, t.namespace, dry_run=options.dry_run, warnings=warnings
                )
                created = store.create(
                    res, body, t.namespace, dry_run=options.dry_run, keep_status=keep
                )
                return json_response(created, 201, warnings, encoded_as_stored(store.last, created))
        if not isinstance(body, dict):
            raise StatusError(400, "the request body must be an object")
        check_type_meta(res, body)
        patch = sent if verb == "patch" else None
        warnings = checked_fields(res, body, options.validation, name=t.name, patch=patch)
        obj = store.update(
            res, t.namespace, t.name, body, status=t.sub == "status", dry_run=options.dry_run
        )
        return json_response(obj, 200, warnings, encoded_as_stored(store.last, obj))

    def _admit(self, res: Resource, body: dict[str, Any]) -> bool:
        """The admission of a real server beyond validation, on create: pods get their defaults
        and priority, PriorityClasses theirs and the user-class limits. True when the status
        it wrote is to be kept (a new pod's phase and QoS class). A claim naming no class gets
        the default StorageClass (kube's DefaultStorageClass admission); a Service and a
        ReplicationController their defaults (a Service its cluster IP)."""
        if res.group == "" and res.kind == "Service":
            listed = self.store.list(res, "", None)
            taken = {(o.get("spec") or {}).get("clusterIP") for o in listed}
            service_defaults(body, free_cluster_ip(taken))
            return False
        if res.group == "" and res.kind == "ReplicationController":
            replication_controller_defaults(body)
            return False
        if res.kind == "PersistentVolumeClaim" and self._storage_classes is not None:
            with_default_class(body, self.store.list(self._storage_classes, "", None))
            return False
        if is_pod(res.group, res.kind) or res is self._priority_classes:
            classes: dict[str, dict[str, Any]] = {}
            if self._priority_classes is not None:
                for pc in self.store.list(self._priority_classes, "", None):
                    classes[pc["metadata"]["name"]] = pc
            if res is self._priority_classes:
                admit_priority_class(body, classes)
                return False
            admit_pod(body, classes)
            return True
        return False

    def _grace(self, t: Target, options: dict[str, Any], query: Any) -> int:
        """The grace period of deleting the pod `t` names (0 for other kinds)."""
        if not is_pod(t.resource.group, t.resource.kind):
            return 0
        sent = options.get("gracePeriodSeconds")
        if sent is None:
            sent = query_int(query, "gracePeriodSeconds")
        elif isinstance(sent, bool) or not isinstance(sent, int) or not -(2**63) <= sent < 2**63:
            raise StatusError(400, "gracePeriodSeconds must be an integer (int64)")
        pod = self.store.get(t.resource, t.namespace, t.name)
        return grace_period(pod, sent, self.pod_grace_from_spec)

    def _patched(self, content_type: str, t: Target) -> dict[str, Any] | None:
        """The object a patch applies to; None when an apply patch will create it."""
        try:
            return self.store.get(t.resource, t.namespace, t.name)
        except StatusError as exc:
            if exc.code == 404 and content_type == APPLY_PATCH and not t.sub:
                return None
            raise

    def _list(self, request: web.Request, t: Target) -> web.Response:
        query = request.query
        kind = (t.resource.group, t.resource.kind)
        items = self.store.list(t.resource, t.namespace, query_predicate(query, kind))
        rv, start = str(self.store.rv), None
        if query.get("continue"):
            rv, start = decode_continue(query["continue"])
        out: list[dict[str, Any]] = []
        meta: dict[str, Any] = {"resourceVersion": rv}
        limit = query_int(query, "limit") or 0
        query_int(query, "timeoutSeconds")  # a ListOptions field: checked on a list too
        for obj in items:
            key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            if start is not None and key <= start:
                continue
            if limit and len(out) == limit:
                last = out[-1]["metadata"]
                meta["continue"] = encode_continue(rv, (last.get("namespace", ""), last["name"]))
                break
            out.append(obj)
        res = t.resource
        view = table_view(res, request.headers.get("Accept", ""), query)
        if view is not None:
            return json_response(view.table(out, meta))
        doc = {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta}
        if res.builtin:
            out = [_listed(res, o) for o in out]
        return json_response({**doc, "items": out})

    async def _delete(self, request: web.Request, t: Target) -> web.Response:
        options = await read_body(request) or {}
        if not isinstance(options, dict) or not isinstance(
            options.get("preconditions") or {}, dict
        ):
            raise StatusError(400, "the request body must be a DeleteOptions object")
        propagation = request.query.get("propagationPolicy") or options.get("propagationPolicy")
        if propagation not in (None, "Background", "Foreground", "Orphan"):
            raise StatusError(400, f"unknown propagationPolicy {propagation!r}")
        preconditions = options.get("preconditions") or {}
        dry_run = write_options(request.query).dry_run or options.get("dryRun") == ["All"]
        obj, gone = self.store.delete(
            t.resource,
            t.namespace,
            t.name,
            cast(Propagation, propagation or "Background"),
            preconditions.get("resourceVersion"),
            dry_run=dry_run,
            grace=self._grace(t, options, request.query),
            precondition_uid=preconditions.get("uid"),
        )
        if gone and not t.resource.delete_answers_object:
            return json_response(deleted_status(t.resource, obj))
        return json_response(obj, encoded=encoded_as_stored(self.store.last, obj))

    def _delete_collection(self, t: Target, query: Any) -> web.Response:
        """Delete what the selectors select; the answer is the list of the objects deleted
        (as they were, or marked for deletion), as kube-apiserver answers."""
        kind = (t.resource.group, t.resource.kind)
        predicate, dry_run = query_predicate(query, kind), write_options(query).dry_run
        res, deleted = t.resource, []
        for obj in list(self.store.list(res, t.namespace, predicate)):
            meta = obj["metadata"]
            one = Target(res, meta.get("namespace", ""), meta["name"])
            gone, _ = self.store.delete(
                res, one.namespace, one.name, dry_run=dry_run, grace=self._grace(one, {}, query)
            )
            deleted.append(_listed(res, gone))
        meta = {"resourceVersion": str(self.store.rv)}
        doc = {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta}
        return json_response({**doc, "items": deleted})

    async def _pod_subresource(self, request: web.Request, t: Target) -> web.Response:
        if t.resource.kind != "Pod" or t.resource.group or t.sub not in ("binding", "eviction"):
            raise StatusError(404, _NOT_FOUND)
        if request.method != "POST":
            raise StatusError(405, f"pods/{t.sub} only accepts POST")
        body = await read_body(request)
        if body is not None and not isinstance(body, dict):
            raise StatusError(400, "the request body must be an object")
        pod = self.store.get(t.resource, t.namespace, t.name)
        if t.sub == "eviction":
            options = (body or {}).get("deleteOptions") or {}
            if not isinstance(options, dict):
                raise StatusError(400, "deleteOptions must be a DeleteOptions object")
            preconditions = options.get("preconditions") or {}
            self.store.delete(
                t.resource,
                t.namespace,
                t.name,
                precondition_rv=preconditions.get("resourceVersion"),
                grace=self._grace(t, options, {}),
                precondition_uid=preconditions.get("uid"),
            )
            return json_response(status_doc(201, f"pod {t.name} evicted"), 201)
        bound = bind_pod(pod, t.name, body)
        if write_options(request.query).dry_run:
            return json_response(status_doc(201, "bound (dry run)"), 201)
        # The pod was valid when stored and the binding sets only its node and PodScheduled
        # condition: not validated again, as kube's binding does not (annotations copied
        # from the Binding are, as any write's).
        annotated = bool(((body or {}).get("metadata") or {}).get("annotations"))
        self.store.update(
            t.resource, t.namespace, t.name, bound, internal=True, revalidate=annotated
        )
        node = bound["spec"]["nodeName"]
        answer = success_json(201, f"pod {t.name} bound to {node}")
        return json_response(None, 201, encoded=answer)


def deleted_status(res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """kube-apiserver's answer to a DELETE that removed an object of a kind whose deletes do
    not answer the object: a Status of Success naming it."""
    meta = obj["metadata"]
    details = {"name": meta["name"], "group": res.group, "kind": res.plural, "uid": meta["uid"]}
    details = {k: v for k, v in details.items() if v}
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


def _listed(res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """An object as a list's item: kube-apiserver's items of its own kinds carry no type meta."""
    return {k: v for k, v in obj.items() if k not in _TYPE_META} if res.builtin else obj
