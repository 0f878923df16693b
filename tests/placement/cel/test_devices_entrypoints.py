"""The entry points that validate objects refuse a device selector that does not compile, in
kube-apiserver's words: the embedded API server (422 through the project's client),
`placement validate` and `scheduler simulate` (both load manifests the same way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.registry import parse_object
from apis.resource import DeviceClass, ResourceClaim
from controllers.cli.main import EXIT_ERROR, EXIT_OK, main
from controllers.kube.errors import InvalidError
from tests.controllers.embedded.hub import hub

BAD = "device.foo == 1"
WORDS = (
    'Invalid value: "device.foo == 1": compilation failed: '
    "ERROR: <input>:1:7: undefined field 'foo'"
)


def _class(expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _claim(expression: str) -> dict[str, Any]:
    request = {
        "name": "gpu",
        "exactly": {"deviceClassName": "gpu", "selectors": [{"cel": {"expression": expression}}]},
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claim", "namespace": "default"},
        "spec": {"devices": {"requests": [request]}},
    }


@pytest.mark.asyncio
async def test_embedded_server_refuses_a_bad_selector() -> None:
    async with hub() as (_, gw):
        with pytest.raises(InvalidError) as err:
            await gw.create(parse_object(_class(BAD)))
        assert err.value.code == 422
        assert [c.field for c in err.value.causes] == ["spec.selectors[0].cel.expression"]
        assert err.value.causes[0].message.startswith(WORDS)
        assert 'DeviceClass.resource.k8s.io "gpu" is invalid' in str(err.value)
        with pytest.raises(InvalidError) as err:
            await gw.create(parse_object(_claim("device.driver")))
        assert [c.message for c in err.value.causes] == [
            'Invalid value: "device.driver": must evaluate to bool or the unknown type, not string'
        ]
        created = await gw.create(parse_object(_class('device.driver == "gpu.example.com"')))
        assert isinstance(created, DeviceClass)
        claim = await gw.create(parse_object(_claim("device.attributes['x'].?y.orValue(true)")))
        assert isinstance(claim, ResourceClaim)


def _manifests(tmp_path: Path) -> Path:
    path = tmp_path / "dra.yaml"
    path.write_text(yaml.safe_dump_all([_class(BAD), _class("true")]))
    return path


def test_validate_refuses_a_bad_selector(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _manifests(tmp_path)
    assert main(["validate", "-f", str(path)]) == EXIT_ERROR
    err = capsys.readouterr().err
    where = f"{path}: document 1: DeviceClass gpu: spec.selectors[0].cel.expression: "
    assert f"{where}{WORDS}" in err
    assert "document 2" not in err
    good = tmp_path / "good.yaml"
    good.write_text(path.read_text().split("---")[1])
    assert main(["validate", "-f", str(good)]) == EXIT_OK


def test_simulate_refuses_a_bad_selector(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _manifests(tmp_path)
    assert main(["scheduler", "simulate", "-f", str(path)]) == EXIT_ERROR
    assert "spec.selectors[0].cel.expression: " + WORDS in capsys.readouterr().err
