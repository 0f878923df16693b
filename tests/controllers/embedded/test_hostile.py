"""Issue 20, items 3 and 6-9 on the embedded API server, and items 4-6 in the controller
against it: what a real kube-apiserver refuses is refused with its status code and words
(never a 500), and what it accepts is scheduled, with a condition saying why when the placement
cannot be written as asked.

The server's answers are read over raw HTTP, as any client would see them; the controller runs
as in the controller tests, through the real client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from apis.cluster import Taint
from apis.meta import parse_time
from apis.placements import PlacementDecision
from controllers.embedded import EmbeddedApiServer
from controllers.embedded.requests import MAX_BODY_DEPTH, MAX_REQUEST_BODY
from placement.outcome import MAX_CONDITION_MESSAGE
from placement.testing import binding, cluster, cluster_set, placement
from tests.controllers.hub.controller_hub import hub as controller_hub
from tests.controllers.hub.test_controller import create

pytestmark = pytest.mark.asyncio

GROUP = "/apis/cluster.open-cluster-management.io"
PLACEMENTS = f"{GROUP}/v1beta1/namespaces/default/placements"
CLUSTERS = f"{GROUP}/v1/managedclusters"


class Client:
    """Raw HTTP to one server: each call answers (status code, decoded body)."""

    def __init__(self, server: EmbeddedApiServer, session: aiohttp.ClientSession) -> None:
        self.url = server.url
        self.session = session

    async def send(
        self, method: str, path: str, body: Any = None, raw: str | bytes | None = None
    ) -> tuple[int, dict[str, Any]]:
        data = raw if raw is not None else None if body is None else json.dumps(body)
        headers = {"Content-Type": "application/json"}
        async with self.session.request(
            method, self.url + path, data=data, headers=headers
        ) as response:
            return response.status, json.loads(await response.text())


@asynccontextmanager
async def server() -> AsyncIterator[Client]:
    async with EmbeddedApiServer() as embedded, aiohttp.ClientSession() as session:
        yield Client(embedded, session)


def placement_doc(name: str = "p", spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": name},
        "spec": spec or {},
    }


def failure(code: int, doc: dict[str, Any]) -> tuple[int, str, str]:
    assert doc["kind"] == "Status" and doc["status"] == "Failure"
    assert doc["code"] == code
    return code, doc["reason"], doc["message"]


# --- item 9: query parameters and the kind of a body -----------------------------------------


@pytest.mark.parametrize(
    "query", ["limit=abc", "limit=1.5", "watch=true&timeoutSeconds=abc", "timeoutSeconds=x"]
)
async def test_a_query_integer_that_is_none_is_400_as_kube_says(query: str) -> None:
    async with server() as c:
        code, doc = await c.send("GET", f"{PLACEMENTS}?{query}")
        value = query.rsplit("=", 1)[1]
        assert failure(code, doc) == (
            400,
            "BadRequest",
            f'strconv.ParseInt: parsing "{value}": invalid syntax',
        )


@pytest.mark.parametrize(
    "query", ["limit=99999999999999999999", "watch=true&timeoutSeconds=9223372036854775808"]
)
async def test_a_query_integer_beyond_int64_is_400_out_of_range(query: str) -> None:
    async with server() as c:
        code, doc = await c.send("GET", f"{PLACEMENTS}?{query}")
        value = query.rsplit("=", 1)[1]
        assert failure(code, doc) == (
            400,
            "BadRequest",
            f'strconv.ParseInt: parsing "{value}": value out of range',
        )


@pytest.mark.parametrize(
    ("query", "body"),
    [
        ("", "[1]"),
        ("", '{"preconditions": "x"}'),
        ("?gracePeriodSeconds=abc", None),
        ("?gracePeriodSeconds=99999999999999999999", None),
        ("", '{"gracePeriodSeconds": "abc"}'),
        ("", '{"gracePeriodSeconds": 99999999999999999999}'),
    ],
)
async def test_bad_delete_options_are_400_and_delete_nothing(query: str, body: str | None) -> None:
    pods = "/api/v1/namespaces/default/pods"
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    async with server() as c:
        assert (await c.send("POST", pods, pod))[0] == 201
        code, doc = await c.send("DELETE", f"{pods}/p{query}", raw=body)
        assert failure(code, doc)[:2] == (400, "BadRequest")
        assert (await c.send("GET", f"{pods}/p"))[0] == 200
        code, doc = await c.send("POST", f"{pods}/p/eviction", raw="[1]")
        assert failure(code, doc)[:2] == (400, "BadRequest")


async def test_a_valid_limit_still_pages() -> None:
    async with server() as c:
        for name in ("a", "b"):
            assert (await c.send("POST", PLACEMENTS, placement_doc(name)))[0] == 201
        code, doc = await c.send("GET", f"{PLACEMENTS}?limit=1")
        assert code == 200
        assert [i["metadata"]["name"] for i in doc["items"]] == ["a"]
        assert doc["metadata"]["continue"]


async def test_a_managed_cluster_posted_to_placements_is_400_not_an_empty_placement() -> None:
    async with server() as c:
        body = {
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {"name": "spoke"},
            "spec": {"hubAcceptsClient": True},
        }
        code, doc = await c.send("POST", PLACEMENTS, body)
        assert failure(code, doc) == (
            400,
            "BadRequest",
            "the API version in the data (cluster.open-cluster-management.io/v1) does not match "
            "the expected API version (cluster.open-cluster-management.io/v1beta1)",
        )
        code, doc = await c.send("GET", PLACEMENTS)
        assert doc["items"] == []


async def test_another_kind_of_the_same_version_is_invalid_as_on_a_crd() -> None:
    async with server() as c:
        body = {**placement_doc("d"), "kind": "PlacementDecision"}
        code, doc = await c.send("POST", PLACEMENTS, body)
        assert failure(code, doc) == (
            422,
            "Invalid",
            'PlacementDecision.cluster.open-cluster-management.io "d" is invalid: kind: '
            'Invalid value: "PlacementDecision": must be Placement',
        )
        # A replace is checked the same way; a body without type meta takes the URL's.
        assert (await c.send("POST", PLACEMENTS, {"metadata": {"name": "p"}, "spec": {}}))[0] == 201
        current = (await c.send("GET", f"{PLACEMENTS}/p"))[1]
        code, doc = await c.send("PUT", f"{PLACEMENTS}/p", {**current, "kind": "ManagedCluster"})
        assert failure(code, doc)[0] == 422


# --- items 3 and 8: body size and shape ------------------------------------------------------


async def test_a_body_over_3_mib_is_413_with_kubes_words() -> None:
    async with server() as c:
        doc = placement_doc()
        doc["metadata"]["annotations"] = {"a": "x" * MAX_REQUEST_BODY}
        code, status = await c.send("POST", PLACEMENTS, doc)
        assert failure(code, status) == (
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        )
        # Just under the limit the body is read, and refused by validation as kube refuses it.
        doc["metadata"]["annotations"] = {"a": "x" * (MAX_REQUEST_BODY - 500)}
        code, status = await c.send("POST", PLACEMENTS, doc)
        assert (code, status["reason"]) == (422, "Invalid")
        assert "metadata.annotations: Too long: must have at most 262144 bytes" in status["message"]


async def test_a_chunked_body_over_3_mib_is_413_too() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b" " * (1024 * 1024)

    async with (
        EmbeddedApiServer() as embedded,
        aiohttp.ClientSession() as session,
        session.post(
            embedded.url + PLACEMENTS, data=chunks(), headers={"Content-Type": "application/json"}
        ) as response,
    ):
        assert response.status == 413


@pytest.mark.parametrize("depth", [MAX_BODY_DEPTH + 1, 1000, 100_000])
async def test_a_body_nesting_too_deep_is_400_not_500(depth: int) -> None:
    async with server() as c:
        raw = '{"metadata":{"name":"d"},"spec":{"x":' + "[" * depth + "]" * depth + "}}"
        code, doc = await c.send("POST", PLACEMENTS, raw=raw)
        assert failure(code, doc) == (
            400,
            "BadRequest",
            f"the request body nests deeper than {MAX_BODY_DEPTH} levels",
        )


@pytest.mark.parametrize("field", ["name", "generateName"])
async def test_a_name_that_is_no_string_is_400_as_go_decoding_says(field: str) -> None:
    async with server() as c:
        code, doc = await c.send("POST", PLACEMENTS, {"metadata": {field: 5}, "spec": {}})
        assert failure(code, doc) == (
            400,
            "BadRequest",
            f"json: cannot unmarshal int into Go struct field ObjectMeta.metadata.{field} of "
            "type string",
        )


@pytest.mark.parametrize(
    "spec", ["{numberOfClusters: " + "9" * 5000 + "}", "!!python/object:os.system {}"]
)
async def test_a_yaml_apply_patch_python_cannot_decode_is_400(spec: str) -> None:
    patch = "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\n"
    patch += f"metadata: {{name: p}}\nspec: {spec}\n"
    async with (
        EmbeddedApiServer() as embedded,
        aiohttp.ClientSession() as session,
        session.patch(
            f"{embedded.url}{PLACEMENTS}/p?fieldManager=test",
            data=patch,
            headers={"Content-Type": "application/apply-patch+yaml"},
        ) as response,
    ):
        doc = json.loads(await response.text())
        assert failure(response.status, doc) == (
            400,
            "BadRequest",
            "the apply patch is not valid YAML",
        )


async def test_a_yaml_apply_patch_alias_bomb_is_400() -> None:
    bomb = "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\n"
    bomb += "metadata: {name: p}\nspec:\n  l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n"
    bomb += "".join(
        f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n" for i in range(1, 9)
    )
    async with (
        EmbeddedApiServer() as embedded,
        aiohttp.ClientSession() as session,
        session.patch(
            f"{embedded.url}{PLACEMENTS}/p?fieldManager=test",
            data=bomb,
            headers={"Content-Type": "application/apply-patch+yaml"},
        ) as response,
    ):
        doc = json.loads(await response.text())
        assert failure(response.status, doc) == (
            400,
            "BadRequest",
            "the request body expands to more than 3145728 values",
        )


# --- items 6 and 7: ranges and names ---------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "doc", "field"),
    [
        (PLACEMENTS, placement_doc(spec={"numberOfClusters": 2**31}), "spec.numberOfClusters"),
        (
            PLACEMENTS,
            placement_doc(
                spec={
                    "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 2**63}]
                }
            ),
            "spec.tolerations[0].tolerationSeconds",
        ),
        (
            CLUSTERS,
            {"metadata": {"name": "c1"}, "spec": {"leaseDurationSeconds": 2**31}},
            "spec.leaseDurationSeconds",
        ),
    ],
)
async def test_an_integer_beyond_its_format_is_invalid(
    path: str, doc: dict[str, Any], field: str
) -> None:
    async with server() as c:
        code, status = await c.send("POST", path, doc)
        code, reason, message = failure(code, status)
        assert (code, reason) == (422, "Invalid")
        assert f"{field}: must be between" in message


async def test_no_object_lands_in_a_namespace_that_is_no_label() -> None:
    async with server() as c:
        code, doc = await c.send("POST", "/api/v1/namespaces", {"metadata": {"name": "Team_A"}})
        assert failure(code, doc)[:2] == (422, "Invalid")
        team = f"{GROUP}/v1beta1/namespaces/Team_A/placements"
        code, doc = await c.send("POST", team, placement_doc())
        assert failure(code, doc)[0] == 404


# --- items 4-6 in the controller -------------------------------------------------------------


async def test_the_controller_writes_a_status_for_each_hostile_placement() -> None:
    taint = Taint(key="k", effect="NoSelect", time_added=parse_time("9999-12-31T23:59:59Z"))
    exists = {"key": "k", "operator": "Exists"}
    long_name = "p" * 64
    async with controller_hub(["apps"]) as h:
        await create(
            h,
            [
                cluster("c1", labels={"env": "prod"}, cluster_set="s", taints=[taint]),
                cluster_set("s"),
                binding("apps", "s"),
                placement("apps", long_name),
                placement("apps", "web.prod.v2", tolerations=[exists]),
                placement("apps", "mode", prioritizer_policy={"mode": "X" * 40_000}),
                placement("apps", "expiry", tolerations=[{**exists, "tolerationSeconds": 100}]),
                placement(
                    "apps", "forever", tolerations=[{**exists, "tolerationSeconds": 2**63 - 1}]
                ),
            ],
        )
        manager = await h.manager()
        await manager.wait_idle()

        status, reason, message = await h.condition("apps", long_name, "PlacementMisconfigured")
        assert (status, reason) == ("True", "Misconfigured")
        assert "at most 63 characters" in message
        # no decision: its name is no label value, so none can carry it (nor be selected by
        # it: kube-apiserver refuses such a selector)
        every = await h.gateway.list(PlacementDecision, "apps")
        assert not [pd for pd in every.items if pd.name.startswith(long_name)]

        status, reason, message = await h.condition("apps", "mode", "PlacementMisconfigured")
        assert (status, reason) == ("True", "Misconfigured")
        assert len(message) == MAX_CONDITION_MESSAGE and message.endswith(" ...")

        # A taint added in the year 9999 and a toleration for int64-max seconds: tolerated.
        for name in ("web.prod.v2", "expiry", "forever"):
            assert await h.decided("apps", name) == ["c1"], name
            assert (await h.condition("apps", name, "PlacementSatisfied"))[0] == "True"

        # Nothing is retried in a loop: the controller is idle with every status written.
        await manager.wait_idle()
        assert manager.ready()[0]
