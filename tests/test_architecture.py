"""The layering of DESIGN §1, checked on the imports of every module.

controllers -> plugins -> placement -> apis: nothing imports leftwards, only controllers/kube/
talks to the Kubernetes client libraries, numpy stays in placement/ and plugins/.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("apis", "placement", "plugins", "controllers")
# What each layer may import besides the standard library and itself.
ALLOWED: dict[str, set[str]] = {
    "apis": {"pydantic", "pydantic_core", "typing_extensions", "annotated_types"},
    "placement": {"apis", "numpy"},
    "plugins": {"apis", "placement", "numpy"},
    "controllers": {"apis", "placement", "plugins", "*"},
}
KUBE_CLIENTS = {"kubernetes", "kubernetes_asyncio"}


def imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, top-level module) of every import in a file, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append((node.lineno, package))  # relative: stays inside the package
            elif node.module:
                found.append((node.lineno, node.module.split(".")[0]))
    return found


def violations(layer: str, root: Path = ROOT) -> list[str]:
    problems = []
    for path in sorted((root / layer).rglob("*.py")):
        rel = path.relative_to(root)
        in_kube = rel.parts[:2] == ("controllers", "kube")
        for line, module in imported_modules(path, layer):
            where = f"{rel}:{line} imports {module}"
            if module in KUBE_CLIENTS and not in_kube:
                problems.append(f"{where}: only controllers/kube/ may use the Kubernetes clients")
            elif module == "numpy" and layer in ("apis", "controllers"):
                problems.append(f"{where}: numpy belongs to placement/ and plugins/")
            elif module == layer or module in sys.stdlib_module_names:
                continue
            elif module in LAYERS and module not in ALLOWED[layer]:
                problems.append(f"{where}: {layer} may not import {module} (DESIGN §1)")
            elif (
                module not in LAYERS and "*" not in ALLOWED[layer] and module not in ALLOWED[layer]
            ):
                problems.append(f"{where}: third-party import not allowed in {layer}")
    return problems


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_only_what_design_allows(layer: str) -> None:
    assert violations(layer) == []


def test_checker_catches_a_leftward_import(tmp_path: Path) -> None:
    (tmp_path / "placement").mkdir()
    (tmp_path / "placement" / "bad.py").write_text("from plugins import balance\nimport numpy\n")
    (tmp_path / "apis").mkdir()
    (tmp_path / "apis" / "bad.py").write_text("import numpy as np\nimport yaml\n")
    (tmp_path / "controllers").mkdir()
    (tmp_path / "controllers" / "bad.py").write_text("import kubernetes_asyncio\n")
    (tmp_path / "controllers" / "kube").mkdir()
    (tmp_path / "controllers" / "kube" / "ok.py").write_text(
        "from kubernetes_asyncio import client\n"
    )

    assert violations("placement", tmp_path) == [
        "placement/bad.py:1 imports plugins: placement may not import plugins (DESIGN §1)"
    ]
    assert len(violations("apis", tmp_path)) == 2
    assert violations("controllers", tmp_path) == [
        "controllers/bad.py:1 imports kubernetes_asyncio: "
        "only controllers/kube/ may use the Kubernetes clients"
    ]


@pytest.mark.parametrize("layer", LAYERS)
def test_every_package_declares_its_public_names(layer: str) -> None:
    for init in (ROOT / layer).rglob("__init__.py"):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        names = {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        assert "__all__" in names, f"{init.relative_to(ROOT)} has no __all__"
        assert (init.parent / "py.typed").exists() or init.parent.name != layer
