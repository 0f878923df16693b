"""OCM's own CEL selector table (`pkg/placement/helpers/cel_test.go`, TestCELSelector), case by
case: what matches, what does not, what fails to compile."""

from __future__ import annotations

from typing import Any

import pytest

from placement.cel import CelCompileError, compile_selector

ENV_PROD = 'managedCluster.metadata.labels["env"] == "prod"'
REGION = 'managedCluster.metadata.labels["region"] == "us-east-1"'


def labelled(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "c", "labels": labels}, "spec": {}, "status": {}}


@pytest.mark.parametrize(
    ("expressions", "cluster", "expected"),
    [
        pytest.param([ENV_PROD], labelled(env="prod"), True, id="valid-expression-matches"),
        pytest.param([ENV_PROD], labelled(env="dev"), False, id="valid-expression-no-match"),
        pytest.param(
            [ENV_PROD, REGION],
            labelled(env="prod", region="us-east-1"),
            True,
            id="multiple-expressions-all-match",
        ),
        pytest.param(
            [ENV_PROD, REGION],
            labelled(env="prod", region="us-west-1"),
            False,
            id="multiple-expressions-one-fails",
        ),
        # OCM's nil cluster converts to an object without labels: the lookup fails, no match.
        pytest.param([ENV_PROD], {"metadata": {"name": "c"}}, False, id="cluster-without-labels"),
        pytest.param([], labelled(), True, id="empty-expressions"),
    ],
)
def test_ocm_helper_table(expressions: list[str], cluster: dict[str, Any], expected: bool) -> None:
    assert compile_selector(expressions).evaluate(cluster).matched is expected


def test_ocm_helper_table_invalid_expression_does_not_compile() -> None:
    with pytest.raises(CelCompileError) as caught:
        compile_selector(["invalid.expression"])
    assert caught.value.index == 0
    # cel-go reports `<input>:1:1: undeclared reference to 'invalid'`; the C++ checker points
    # at the selection and names the qualified identifier (docs/hub-admins.md, "CEL selectors").
    message = str(caught.value)
    assert message.startswith("compilation failed: ERROR: <input>:1:")
    assert "undeclared reference to 'invalid" in message
