"""The script of the differential test (`tests.e2e.differential`): every request a client of
ours makes, in an order whose answers depend on the ones before (a stale update, a watch from a
remembered resourceVersion, a list continued).

`{ns}` is the script's namespace (the same name on both servers), `{name}` the prefix of its
cluster-scoped names. Steps are named `<what>`; the names key the known-differences table.
"""

from __future__ import annotations

from tests.e2e.differential import Step
from tests.e2e.differential_kinds import INVALID, MORE
from tests.e2e.differential_paths import (
    APPLY,
    CLUSTER_SCOPED,
    CM,
    JSON_PATCH,
    MERGE,
    PLACEMENTS,
    SPEC,
    STATUS,
    STRATEGIC,
    configmap,
    placement,
    stored_placement,
)

__all__ = ["CLUSTER_SCOPED", "SCRIPT"]

_CRUD = [
    Step("create", "POST", CM, configmap("cm-a", {"a": "1"}, app="x", tier="a"), remember="a1"),
    Step("create: name taken", "POST", CM, configmap("cm-a", {"a": "9"})),
    Step("get", "GET", CM + "/cm-a"),
    Step(
        "update (PUT)",
        "PUT",
        CM + "/cm-a",
        lambda m: {
            **configmap("cm-a", {"a": "2"}, app="x", tier="a"),
            "metadata": {
                "name": "cm-a",
                "labels": {"app": "x", "tier": "a"},
                "resourceVersion": m["a1"],
            },
        },
        remember="a2",
    ),
    Step(
        "update: stale resourceVersion",
        "PUT",
        CM + "/cm-a",
        lambda m: {
            **configmap("cm-a", {"a": "3"}),
            "metadata": {"name": "cm-a", "resourceVersion": m["a1"]},
        },
    ),
    Step(
        "update: no resourceVersion",
        "PUT",
        CM + "/cm-a",
        configmap("cm-a", {"a": "2", "z": "0"}, app="x", tier="a"),
    ),
    Step(
        "merge patch",
        "PATCH",
        CM + "/cm-a",
        {"data": {"b": "3", "z": None}, "metadata": {"labels": {"tier": "b"}}},
        content_type=MERGE,
    ),
    Step(
        "merge patch: stale resourceVersion",
        "PATCH",
        CM + "/cm-a",
        lambda m: {"metadata": {"resourceVersion": m["a1"]}, "data": {"q": "1"}},
        content_type=MERGE,
    ),
    Step(
        "strategic merge patch", "PATCH", CM + "/cm-a", {"data": {"c": "4"}}, content_type=STRATEGIC
    ),
    Step(
        "json patch",
        "PATCH",
        CM + "/cm-a",
        [{"op": "add", "path": "/data/d", "value": "5"}, {"op": "remove", "path": "/data/a"}],
        content_type=JSON_PATCH,
    ),
    Step(
        "json patch: failed test",
        "PATCH",
        CM + "/cm-a",
        [{"op": "test", "path": "/data/d", "value": "nope"}],
        content_type=JSON_PATCH,
    ),
    Step(
        "json patch: missing path",
        "PATCH",
        CM + "/cm-a",
        [{"op": "remove", "path": "/data/nothing"}],
        content_type=JSON_PATCH,
    ),
    Step("patch: missing object", "PATCH", CM + "/cm-none", {"data": {}}, content_type=MERGE),
    Step(
        "apply: create",
        "PATCH",
        CM + "/cm-b",
        configmap("cm-b", {"k": "v"}, app="x", tier="b"),
        query={"fieldManager": "differential"},
        content_type=APPLY,
    ),
    Step(
        "apply: update",
        "PATCH",
        CM + "/cm-b",
        configmap("cm-b", {"k": "w", "l": "m"}, app="x", tier="b"),
        query={"fieldManager": "differential"},
        content_type=APPLY,
    ),
    Step(
        "apply: no fieldManager",
        "PATCH",
        CM + "/cm-b",
        configmap("cm-b", {"k": "v"}),
        content_type=APPLY,
    ),
    Step(
        "create: dryRun=All", "POST", CM, configmap("cm-dry", {"x": "1"}), query={"dryRun": "All"}
    ),
    Step("get: nothing stored by the dry run", "GET", CM + "/cm-dry"),
    Step("delete: dryRun=All", "DELETE", CM + "/cm-b", query={"dryRun": "All"}),
    Step("get: still there after the dry delete", "GET", CM + "/cm-b"),
    Step(
        "update: dryRun=All",
        "PUT",
        CM + "/cm-b",
        configmap("cm-b", {"dry": "1"}),
        query={"dryRun": "All"},
    ),
    Step("create: third", "POST", CM, configmap("cm-c", {"c": "1"}, app="y")),
]

_STATUS = [
    Step("create: status ignored", "POST", PLACEMENTS, placement(SPEC, STATUS), remember="pl"),
    Step(
        "update /status: spec ignored",
        "PUT",
        PLACEMENTS + "/pl-a/status",
        lambda m: stored_placement(m, {"numberOfClusters": 5}, STATUS),
        remember="pl",
    ),
    Step(
        "update: status ignored",
        "PUT",
        PLACEMENTS + "/pl-a",
        lambda m: stored_placement(m, {"numberOfClusters": 4}, {"numberOfSelectedClusters": 9}),
    ),
    Step(
        "merge patch /status",
        "PATCH",
        PLACEMENTS + "/pl-a/status",
        {"status": {"numberOfSelectedClusters": 1}, "spec": {"numberOfClusters": 7}},
        content_type=MERGE,
    ),
    Step("get placement", "GET", PLACEMENTS + "/pl-a"),
]

_LISTS = [
    Step("list: limit=2", "GET", CM, query={"limit": "2", "labelSelector": "app"}, remember="page"),
    Step(
        "list: continue",
        "GET",
        CM,
        query=lambda m: {"limit": "2", "labelSelector": "app", "continue": m["page:continue"]},
    ),
    Step("list: limit=1 labelSelector", "GET", CM, query={"limit": "1", "labelSelector": "app=x"}),
    Step("list: labelSelector set", "GET", CM, query={"labelSelector": "tier in (a,b)"}),
    Step("list: labelSelector not", "GET", CM, query={"labelSelector": "app!=x"}),
    Step("list: labelSelector exists", "GET", CM, query={"labelSelector": "app,!tier"}),
    Step("list: fieldSelector name", "GET", CM, query={"fieldSelector": "metadata.name=cm-b"}),
    Step("list: fieldSelector unknown field", "GET", CM, query={"fieldSelector": "spec.x=1"}),
    Step("list: bad labelSelector", "GET", CM, query={"labelSelector": "a b"}),
    Step("list: bad continue token", "GET", CM, query={"limit": "1", "continue": "bogus"}),
]


_WATCH = [
    Step(
        "watch: from a resourceVersion",
        "GET",
        CM,
        query=lambda m: {"resourceVersion": m["a2"], "timeoutSeconds": "1"},
        watch=1.0,
    ),
    Step(
        "watch: bookmarks",
        "GET",
        CM,
        query=lambda m: {
            "resourceVersion": m["a2"],
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "3",
            "labelSelector": "app=y",
        },
        watch=3.0,
    ),
    Step(
        "watch: too old resourceVersion",
        "GET",
        PLACEMENTS,
        query={"resourceVersion": "1", "timeoutSeconds": "1"},
        watch=1.0,
    ),
]

_DELETE = [
    Step(
        "delete: uid precondition",
        "DELETE",
        CM + "/cm-a",
        {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-it"}},
    ),
    Step("delete", "DELETE", CM + "/cm-a"),
    Step("get: deleted", "GET", CM + "/cm-a"),
    Step("delete: gone already", "DELETE", CM + "/cm-a"),
    Step("delete custom object", "DELETE", PLACEMENTS + "/pl-a"),
    Step("list: after deletes", "GET", CM, query={"labelSelector": "app"}),
]

SCRIPT: list[Step] = [*_CRUD, *_STATUS, *_LISTS, *_WATCH, *INVALID, *MORE, *_DELETE]
