"""Compile errors of device selectors against kube-apiserver's answers.

`data/kube_device_selectors.json` holds what a real kube-apiserver v1.36.2 answered to POSTs of
resource.k8s.io/v1 objects (started with tests/e2e/controlplane.py): DeviceClasses whose
second selector is each expression (the first is `true`), a ResourceClaim with an `exactly`
and a `firstAvailable` request, a ResourceClaimTemplate, and a DeviceClass whose selector is
`"true || " * 1500 + "true"` (over the length limit). `selector_problems` must give the same
causes (field and message); a 201 means the expression compiles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apis.resource import DeviceClass
from placement.cel import selector_problems

DATA = json.loads((Path(__file__).parent / "data" / "kube_device_selectors.json").read_text())
API = "resource.k8s.io/v1"

# Known differences, left as they are: the C++ checker's words for a non-bool operand of `&&`;
# the C++ strings extension's `reverse` (newer than kube's); two-variable comprehensions (the
# C++ parser has none); kube's cost estimate of `type()`
_OWN_WORDS = {
    "true && 1",
    '"abc".reverse() == "cba"',
    "[1,2].all(i, v, v > 0)",
    "type(device.driver) == string",
}


def _class(*expressions: str) -> dict[str, Any]:
    selectors = [{"cel": {"expression": e}} for e in expressions]
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": "c"},
        "spec": {"selectors": selectors},
    }


def _causes(problems: list[Any]) -> list[dict[str, str]]:
    return [{"field": p.path, "message": p.message} for p in problems]


@pytest.mark.parametrize(
    "answer",
    [a for a in DATA["deviceclasses"] if a["expression"] not in _OWN_WORDS],
    ids=lambda a: a["expression"][:40],
)
def test_device_class_selector_as_kube_answers(answer: dict[str, Any]) -> None:
    problems = selector_problems(_class("true", answer["expression"]))
    assert _causes(problems) == answer["causes"]
    assert (answer["code"] == 201) == (not problems)


def _answer(kind: str) -> list[dict[str, str]]:
    return next(o["causes"] for o in DATA["objects"] if o["kind"] == kind)


def test_resource_claim_paths_as_kube_answers() -> None:
    claim = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "a",
                        "exactly": {
                            "deviceClassName": "x",
                            "selectors": [{"cel": {"expression": "device.foo"}}],
                        },
                    },
                    {
                        "name": "b",
                        "firstAvailable": [
                            {
                                "name": "s",
                                "deviceClassName": "x",
                                "selectors": [{"cel": {"expression": "1 +"}}],
                            }
                        ],
                    },
                ]
            }
        },
    }
    assert _causes(selector_problems(claim)) == _answer("ResourceClaim")


def test_resource_claim_template_paths_as_kube_answers() -> None:
    request = {
        "name": "a",
        "exactly": {
            "deviceClassName": "x",
            "selectors": [{"cel": {"expression": "device.driver"}}],
        },
    }
    template = {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }
    assert _causes(selector_problems(template)) == _answer("ResourceClaimTemplate")


def test_too_long_expression_as_kube_answers() -> None:
    problems = selector_problems(_class("true || " * 1500 + "true"))
    assert _causes(problems) == _answer("DeviceClass (long)")


def test_typed_object_and_other_kinds() -> None:
    typed = DeviceClass.model_validate(_class("device.foo"))
    assert [p.path for p in selector_problems(typed)] == ["spec.selectors[0].cel.expression"]
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"selectors": [{"cel": {"expression": "x"}}]}}
    assert selector_problems(pod) == []
    assert selector_problems(_class("true", 'device.driver == "a"')) == []
