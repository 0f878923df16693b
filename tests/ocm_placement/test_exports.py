"""`ocm_placement`'s names are the objects of the modules they come from, imported on first use:
`import ocm_placement` (and the `placement` command's entry point, `ocm_placement.cli`) loads
no client, no controller, so the command starts as fast as before and its early Ctrl-C handling
comes before anything heavy."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import ocm_placement

ROOT = Path(__file__).resolve().parents[2]


def test_every_exported_name_is_the_object_of_its_module() -> None:
    modules = {
        "ClusterAccess": "controllers.kube.config",
        "find_access": "controllers.kube.config",
        "DecisionTracker": "controllers.consumer",
        "PlacementNotFoundError": "controllers.consumer",
        "Gateway": "controllers.kube.gateway",
        "RolloutStrategy": "apis.rollout",
    }
    for name in ocm_placement.__all__:
        source = import_module(modules.get(name, "placement.rollout"))
        assert getattr(ocm_placement, name) is getattr(source, name), name
    assert set(ocm_placement.__all__) <= set(dir(ocm_placement))
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = ocm_placement.Nothing


def test_importing_the_package_or_the_command_loads_no_client() -> None:
    probe = (
        "import json, sys\n"
        "import ocm_placement, ocm_placement.cli\n"
        "before = sorted(m for m in sys.modules if m.startswith(('controllers.', 'aiohttp',\n"
        "    'kubernetes_asyncio', 'pydantic')))\n"
        "from ocm_placement import DecisionTracker, Gateway, rollout\n"
        "print(json.dumps([before, 'controllers.kube.gateway' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    before, after = json.loads(done.stdout)
    assert before == []
    assert after  # and on first use, the modules are there
