"""Hostile AdmissionReviews: whatever a review holds, the webhook answers a well-formed
AdmissionReview (allowed, no patch, a warning naming the problem) or, for a body that is not
a review, a 400; never a 500, which `failurePolicy: Ignore` would turn into an unmutated pod."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controllers.addons.webhook import SpotWebhook
from controllers.addons.webhook_input import MAX_DEPTH, _shallow, parse_review
from placement.spot.ledger import Ledger
from tests.controllers.addons.test_webhook import (
    Served,
    StaticWorkloads,
    client_context,
    pod_doc,
    review,
    served,  # noqa: F401  (the fixture)
)

HOSTILE = [
    (("spec", "affinity"), "string", "spec.affinity: must be an object"),
    (("metadata", "labels"), "x", "metadata.labels: must be an object"),
    (("metadata", "annotations"), {"a": [1]}, "metadata.annotations.a: must be a string"),
    (("metadata", "ownerReferences"), [1], "metadata.ownerReferences[0]: must be an object"),
    (("spec", "tolerations"), "x", "spec.tolerations: must be a list"),
    (("spec",), "x", "spec: must be an object"),
]


def _set(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    at = doc
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return doc


@pytest.mark.asyncio
@pytest.mark.parametrize(("path", "value", "message"), HOSTILE)
async def test_a_pod_of_the_wrong_shape_is_allowed_unchanged_with_its_problem(
    served: Served,  # noqa: F811
    path: tuple[str, ...],
    value: Any,
    message: str,
) -> None:
    answer = await served.post(review("bad", _set(pod_doc(), path, value)))
    response = answer["response"]
    assert response["uid"] == "bad" and response["allowed"] is True
    assert "patch" not in response
    assert response["warnings"][0].startswith("pod not placed: " + message), response


@pytest.mark.asyncio
async def test_an_annotation_nested_100000_lists_deep_gets_a_well_formed_answer(
    served: Served,  # noqa: F811
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    body = json.dumps(review("deep", pod_doc())).replace(
        '"namespace": "default"', f'"namespace": "default", "annotations": {{"x": {deep}}}', 1
    )
    ctx = client_context(served.ca)
    headers = {"Content-Type": "application/json"}
    async with served.session.post(served.url, data=body, ssl=ctx, headers=headers) as response:
        assert response.status == 200
        answer = await response.json()
    assert answer["response"]["uid"] == "deep" and answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]
    assert f"nested deeper than {MAX_DEPTH} levels" in answer["response"]["warnings"][0]
    # The pod's place was not counted: the next one is still on-demand.
    good = await served.post(review("next", pod_doc()))
    assert "patch" in good["response"]


def test_shallow_keeps_shallow_json_as_it_is_and_cuts_deep_values() -> None:
    text = '{"a": "x[{\\"y", "b": [[[1, 2]], {"c": [3]}], "d": []}'
    assert _shallow(text, 10) == text
    assert json.loads(_shallow(text, 2)) == {"a": 'x[{"y', "b": [None, None], "d": []}
    assert json.loads(_shallow(text, 1)) == {"a": 'x[{"y', "b": None, "d": None}
    doc, cut = parse_review("[" * 5000 + "]" * 5000)
    assert cut and doc is not None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
paths = st.sampled_from(
    [
        ("metadata",),
        ("metadata", "labels"),
        ("metadata", "annotations"),
        ("metadata", "ownerReferences"),
        ("metadata", "namespace"),
        ("metadata", "name"),
        ("spec",),
        ("spec", "affinity"),
        ("spec", "nodeSelector"),
        ("spec", "tolerations"),
        ("spec", "containers"),
        ("spec", "priority"),
    ]
)


@pytest.mark.asyncio
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(paths, json_values), min_size=1, max_size=3), st.booleans())
async def test_fuzzed_reviews_always_get_a_well_formed_answer(
    changes: list[tuple[tuple[str, ...], Any]], whole_request: bool
) -> None:
    webhook = SpotWebhook(StaticWorkloads(), Ledger())
    doc = review("fuzz", pod_doc())
    pod = doc["request"]["object"]
    for path, value in changes:
        if whole_request:
            doc["request"][path[-1]] = value  # the request's own fields broken instead
        else:
            parent = pod
            for key in path[:-1]:
                if not isinstance(parent.get(key), dict):
                    parent[key] = {}
                parent = parent[key]
            parent[path[-1]] = value
    answer = await webhook.review(json.loads(json.dumps(doc)))
    response = answer["response"]
    assert answer["kind"] == "AdmissionReview"
    assert response["uid"] == "fuzz" and response["allowed"] is True
    if "patch" in response:
        assert response["patchType"] == "JSONPatch"
    for warning in response.get("warnings", []):
        assert isinstance(warning, str) and warning
