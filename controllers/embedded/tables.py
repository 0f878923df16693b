"""Table responses: what `kubectl get` asks for (`Accept: application/json;as=Table;v=v1;
g=meta.k8s.io`) and a real API server answers with a meta.k8s.io Table instead of the objects.

Custom resources get `Name` plus the CRD's additionalPrinterColumns (`Age` alone when it has
none), evaluated with `jsonpath`; columns with priority > 0 are those `-o wide` shows (kubectl
hides them otherwise). Core kinds get kube-apiserver's columns (`printers`). Each row carries
the object as `includeObject` asks: `Metadata` by default (a PartialObjectMetadata, from which
kubectl reads the namespace for `-A` and the labels for `--show-labels`), `Object` (what kubectl
asks for with `--sort-by`) or `None`. Watches get one Table per event, the column definitions
in the first only, as kubectl `get -w` expects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from multidict import MultiMapping

from controllers.embedded.eventviews import to_core
from controllers.embedded.jsonpath import cell
from controllers.embedded.policy_printers import POLICY_PRINTERS
from controllers.embedded.printers import PRINTERS, column
from controllers.embedded.resource_printers import RESOURCE_PRINTERS
from controllers.embedded.resources import Resource
from controllers.embedded.service_printers import SERVICE_PRINTERS
from controllers.embedded.status import StatusError
from controllers.embedded.storage_printers import STORAGE_PRINTERS

__all__ = ["TableView", "table_view"]

_INCLUDE = ("None", "Metadata", "Object")
_CREATED = ".metadata.creationTimestamp"


def _table_version(accept: str) -> str | None:
    """The meta.k8s.io version of the first Table media type `accept` lists, if any."""
    for media in accept.split(","):
        kind, *raw = (part.strip() for part in media.split(";"))
        params = dict(p.split("=", 1) for p in raw if "=" in p)
        if (
            kind in ("application/json", "*/*")
            and params.get("as") == "Table"
            and params.get("g") == "meta.k8s.io"
            and params.get("v") in ("v1", "v1beta1")
        ):
            return params["v"]
    return None


def _crd_columns(res: Resource) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    columns = [column("Name", format_="name")]
    paths: list[tuple[str, str]] = []
    declared = res.columns or ({"name": "Age", "type": "date", "jsonPath": _CREATED},)
    for spec in declared:
        definition = column(
            spec["name"], int(spec.get("priority") or 0), spec.get("type", "string")
        )
        definition["format"] = spec.get("format", "")
        definition["description"] = spec.get("description") or (
            f"Custom resource definition column (in JSONPath format): {spec['jsonPath']}"
        )
        columns.append(definition)
        paths.append((spec["jsonPath"], spec.get("type", "string")))
    return columns, paths


class TableView:
    """How one request wants its objects shown as Table rows."""

    def __init__(self, res: Resource, version: str, include: str) -> None:
        self.api_version = f"meta.k8s.io/{version}"
        self.include = include
        self.columns, self._cells = self._printer(res)

    def _printer(
        self, res: Resource
    ) -> tuple[list[dict[str, Any]], Callable[[dict[str, Any], datetime], list[Any]]]:
        if res.group == "events.k8s.io" and res.kind == "Event":
            core = PRINTERS[("", "Event")]
            return core.columns, lambda obj, now: core.row(to_core(obj), now)
        kind = (res.group, res.kind)
        printer = (
            PRINTERS.get(kind)
            or STORAGE_PRINTERS.get(kind)
            or SERVICE_PRINTERS.get(kind)
            or POLICY_PRINTERS.get(kind)
            or RESOURCE_PRINTERS.get(kind)
        )
        if printer is not None:
            return printer.columns, printer.row
        columns, paths = _crd_columns(res)

        def cells(obj: dict[str, Any], now: datetime) -> list[Any]:
            name = (obj.get("metadata") or {}).get("name", "")
            return [name, *(cell(obj, path, type_, now) for path, type_ in paths)]

        return columns, cells

    def _row(self, obj: dict[str, Any], now: datetime) -> dict[str, Any]:
        row: dict[str, Any] = {"cells": self._cells(obj, now)}
        if self.include == "Object":
            row["object"] = obj
        elif self.include == "Metadata":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": self.api_version,
                "metadata": obj.get("metadata") or {},
            }
        return row

    def table(
        self, objects: Iterable[dict[str, Any]], meta: dict[str, Any], headers: bool = True
    ) -> dict[str, Any]:
        """The Table of `objects`; `meta` is the list's (resourceVersion, continue)."""
        now = datetime.now(UTC)
        return {
            "kind": "Table",
            "apiVersion": self.api_version,
            "metadata": meta,
            "columnDefinitions": self.columns if headers else [],
            "rows": [self._row(obj, now) for obj in objects],
        }

    def watch_line(self, line: bytes, first: bool) -> bytes:
        """A watch event line with its object as a one-row Table (errors and bookmarks as
        they are)."""
        event = json.loads(line)
        obj = event.get("object") or {}
        if event.get("type") in ("ERROR", "BOOKMARK") or obj.get("kind") == "Status":
            return line
        meta = {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion", "")}
        event["object"] = self.table([obj], meta, headers=first)
        return json.dumps(event).encode() + b"\n"


def table_view(res: Resource, accept: str, query: MultiMapping[str]) -> TableView | None:
    """The Table this request asks for, None when it wants the objects themselves."""
    version = _table_version(accept)
    if version is None:
        return None
    include = query.get("includeObject") or "Metadata"
    if include not in _INCLUDE:
        raise StatusError(
            400,
            f'includeObject: Unsupported value: "{include}": supported values: '
            '"Metadata", "None", "Object"',
        )
    return TableView(res, version, include)
