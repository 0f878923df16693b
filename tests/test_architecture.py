"""The layers and rooms of docs/architecture.md, checked on the imports of every module.

* Layers: controllers -> plugins -> placement -> apis. Nothing imports leftwards, only
  controllers/kube/ talks to the Kubernetes client libraries, numpy stays in placement/ and
  plugins/.
* Rooms: every module of controllers/ lives in a room, and a room imports only what its row of
  `ROOMS` names (besides itself).
* Core rooms: every module of placement/pods/ lives in a room of the pod scheduler's core, the
  spot webhook's core is the room placement/spot/, and every pod plugin lives in its family's
  folder of plugins/pods/ (helpers shared by several families in plugins/pods/helper/). A room
  imports only the rooms its row of `CORE_ROOMS` names; a family only what plugins see of the
  engine and the helpers, never another family; the hub's core (the rest of placement/ and of
  plugins/) none of them.
* No cycles: no project module imports itself back through other project modules. The whole
  tree is one graph, so this covers every package (apis, placement, plugins, each room) and the
  rooms that may import each other (cli and embedded).

The code is read with `ast`, never imported. Every import counts wherever it stands: at module
level, inside a function, under `if TYPE_CHECKING:`. Relative imports are resolved, and
`from pkg import name` imports the submodule `pkg.name` when there is one (else `pkg` itself).
`import a.b.c` counts as importing `a.b.c` only, not the packages `a` and `a.b` it passes through.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("apis", "placement", "plugins", "controllers", "ocm_placement")
# What each layer may import besides the standard library and itself.
ALLOWED: dict[str, set[str]] = {
    "apis": {"pydantic", "pydantic_core", "typing_extensions", "annotated_types"},
    "placement": {"apis", "numpy", "cel_expr_python"},  # the CEL runtime of placement/cel
    "plugins": {"apis", "placement", "numpy"},
    "controllers": {"apis", "placement", "plugins", "*"},
    # the consumer API for add-on authors: a facade over the others, imported by none of them
    "ocm_placement": {"apis", "placement", "plugins", "controllers", "*"},
}
KUBE_CLIENTS = {"kubernetes", "kubernetes_asyncio"}

CORE = ("apis", "placement", "plugins")
# The apis modules that know nothing of placements or pods.
GENERIC_APIS = (
    "apis.meta",
    "apis.core",
    "apis.errors",
    "apis.registry",
    "apis.quantity",
    "apis.admission",
)
# The rooms of controllers/ and what each may import from the project besides itself. A name
# allows that module and everything below it ("apis" allows apis.placements).
ROOMS: dict[str, tuple[str, ...]] = {
    "kube": CORE,  # the one client seam: no other room
    "runtime": ("controllers.kube", *GENERIC_APIS),  # generic: nothing of placements or pods
    "hub": ("controllers.runtime", "controllers.kube", *CORE),  # never addons, cli, embedded
    "addons": ("controllers.runtime", "controllers.kube", *CORE),  # never hub, cli, embedded
    # decision consumers (add-on agents, managers): never hub, addons, cli, embedded
    "consumer": ("controllers.runtime", "controllers.kube", "apis", "placement"),
    "embedded": ("controllers.kube", "controllers.cli", *CORE),  # cli: CRD folder, manifests
    "cli": ("controllers", *CORE),  # every room
}


PODS, POD_PLUGINS = "placement.pods", "plugins.pods"
# What a pod plugin sees of the engine: the cluster model, the framework, preemption's helpers,
# the status rules (the quota in force) and the device allocator.
PLUGIN_SEES = tuple(
    f"{PODS}.{room}" for room in ("cluster", "framework", "preemption", "status", "dra")
)
# The rooms of the core layers and what each may import of the other rooms, bottom up. Its own
# modules, apis and the hub's core (the modules of placement/ outside these rooms) are always
# allowed. Every package of plugins/pods/ but helper is a plugin family: `core_rooms` adds it.
CORE_ROOMS: dict[str, tuple[str, ...]] = {
    f"{PODS}.cluster": (),  # nodes, pods, requests, volumes: the model every room reads
    f"{PODS}.framework": (f"{PODS}.cluster",),  # extension points, views, results, events
    f"{PODS}.backend": (f"{PODS}.framework", f"{PODS}.cluster"),  # queue, cache, nominator
    f"{PODS}.preemption": (f"{PODS}.framework", f"{PODS}.cluster"),
    f"{PODS}.scheduler": (  # the scheduling and binding cycles, the engine, several profiles
        f"{PODS}.backend",
        f"{PODS}.preemption",
        f"{PODS}.framework",
        f"{PODS}.cluster",
    ),
    f"{PODS}.config": (f"{PODS}.framework", f"{PODS}.cluster"),
    f"{PODS}.status": (f"{PODS}.cluster",),
    f"{PODS}.dra": (f"{PODS}.cluster",),
    f"{PODS}.simulator": (
        f"{PODS}.status",
        f"{PODS}.framework",
        f"{PODS}.cluster",
        "placement.spot",
    ),
    "placement.spot": (),  # the spot webhook's rules and ledger: nothing of the scheduler
    f"{POD_PLUGINS}.helper": PLUGIN_SEES,
}
# The package modules that gather their rooms' names for others (the lazy exports of
# placement.pods, the registry of plugins.pods): they may import every room.
GATHERERS = (PODS, POD_PLUGINS)


@dataclass(frozen=True)
class Import:
    line: int
    module: str  # absolute dotted name


@dataclass(frozen=True)
class Module:
    path: str  # relative to the root, "/"-separated: "placement/framework.py"
    name: str  # "placement.framework"; a package's __init__.py is the package itself
    imports: tuple[Import, ...]

    @property
    def room(self) -> str | None:
        """The room of controllers/ the module lives in, None outside one."""
        parts = self.path.split("/")
        return parts[1] if parts[0] == "controllers" and len(parts) > 2 else None


def module_name(path: PurePosixPath) -> str:
    """The dotted name Python gives the module in this file (relative to the root)."""
    parts = path.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files(root: Path) -> list[Path]:
    """Every .py file of the four layers, sorted."""
    return sorted(path for layer in LAYERS for path in (root / layer).rglob("*.py"))


def absolute_base(node: ast.ImportFrom, package: str) -> str:
    """The module a `from ... import` statement names, its leading dots resolved in `package`."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    return ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [node.module])])


def imports_in(source: str, name: str, is_package: bool, known: set[str]) -> tuple[Import, ...]:
    """Every import of one module's source, as absolute module names, by line, without repeats.

    `known` holds the names of the project's modules, to tell `from pkg import submodule` from
    `from pkg import name`.
    """
    package = name if is_package else name.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(Import(node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = absolute_base(node, package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}" if base else alias.name
                found.append(Import(node.lineno, submodule if submodule in known else base))
    return tuple(sorted(dict.fromkeys(found), key=lambda imported: imported.line))


@cache
def modules_of(root: Path) -> tuple[Module, ...]:
    """Every module of the project under `root`, with its imports."""
    paths = {PurePosixPath(path.relative_to(root).as_posix()): path for path in source_files(root)}
    names = {rel: module_name(rel) for rel in paths}
    known = set(names.values())
    return tuple(
        Module(
            str(rel), names[rel], imports_in(source, names[rel], rel.name == "__init__.py", known)
        )
        for rel, path in paths.items()
        for source in [path.read_text(encoding="utf-8")]
    )


def within(module: str, prefixes: Iterable[str]) -> bool:
    """Whether `module` is one of `prefixes` or lies below one of them."""
    return any(module == prefix or module.startswith(f"{prefix}.") for prefix in prefixes)


def layer_violations(layer: str, root: Path = ROOT) -> list[str]:
    """The imports of one layer that its row of ALLOWED (or the client and numpy rules) forbid."""
    problems = []
    for module in modules_of(root):
        if not module.path.startswith(f"{layer}/"):
            continue
        in_kube = module.room == "kube"
        for line, top in dict.fromkeys((i.line, i.module.split(".")[0]) for i in module.imports):
            where = f"{module.path}:{line} imports {top}"
            if top in KUBE_CLIENTS and not in_kube:
                problems.append(f"{where}: only controllers/kube/ may use the Kubernetes clients")
            elif top == "numpy" and layer in ("apis", "controllers"):
                problems.append(f"{where}: numpy belongs to placement/ and plugins/")
            elif top == layer or top in sys.stdlib_module_names:
                continue
            elif top in LAYERS and top not in ALLOWED[layer]:
                problems.append(f"{where}: {layer} may not import {top} (docs/architecture.md)")
            elif top not in LAYERS and "*" not in ALLOWED[layer] and top not in ALLOWED[layer]:
                problems.append(f"{where}: third-party import not allowed in {layer}")
    return problems


def room_violations(room: str, root: Path = ROOT) -> list[str]:
    """The project imports of one room of controllers/ that its row of ROOMS does not allow."""
    allowed = (f"controllers.{room}", *ROOMS[room])
    return [
        f"{module.path}:{imported.line} imports {imported.module}: "
        f"the {room} room may import only {', '.join(ROOMS[room])} (docs/architecture.md)"
        for module in modules_of(root)
        if module.room == room
        for imported in module.imports
        if within(imported.module, LAYERS) and not within(imported.module, allowed)
    ]


def homeless_modules(root: Path = ROOT) -> list[str]:
    """The modules of controllers/ outside the rooms of ROOMS (its __init__.py aside)."""
    problems = []
    for module in modules_of(root):
        if not module.path.startswith("controllers/") or module.path == "controllers/__init__.py":
            continue
        if module.room is None:
            problems.append(
                f"{module.path}: every module of controllers/ lives in a room "
                "(docs/architecture.md)"
            )
        elif module.room not in ROOMS:
            problems.append(
                f"{module.path}: {module.room} is not a room of ROOMS (docs/architecture.md)"
            )
    return problems


def core_rooms(root: Path = ROOT) -> dict[str, tuple[str, ...]]:
    """CORE_ROOMS and a row for each plugin family (each package of plugins/pods/ but helper)."""
    rooms = dict(CORE_ROOMS)
    families = root / "plugins" / "pods"
    for folder in sorted(families.iterdir()) if families.is_dir() else ():
        if (folder / "__init__.py").exists() and folder.name != "helper":
            rooms[f"{POD_PLUGINS}.{folder.name}"] = (*PLUGIN_SEES, f"{POD_PLUGINS}.helper")
    return rooms


def core_room_of(name: str, rooms: Iterable[str]) -> str | None:
    """The room a module of the core layers lives in (the longest that holds it), None outside."""
    holding = [room for room in rooms if within(name, [room])]
    return max(holding, key=len) if holding else None


def core_room_violations(root: Path = ROOT) -> list[str]:
    """The imports between the core rooms that the rows of `core_rooms` do not allow."""
    rooms = core_rooms(root)
    problems = []
    for module in modules_of(root):
        if module.name.split(".")[0] not in ("placement", "plugins") or module.name in GATHERERS:
            continue
        mine = core_room_of(module.name, rooms)
        for imported in module.imports:
            theirs = core_room_of(imported.module, rooms)
            if theirs is None or theirs == mine:
                continue
            where = f"{module.path}:{imported.line} imports {imported.module}"
            if mine is None:
                problems.append(
                    f"{where}: the hub's core imports no room of placement/pods, "
                    "placement/spot or plugins/pods (docs/architecture.md)"
                )
            elif not within(theirs, rooms[mine]):
                allowed = ", ".join(rooms[mine]) or "no other room"
                problems.append(
                    f"{where}: the room {mine} may import only {allowed} (docs/architecture.md)"
                )
    return problems


def homeless_core_modules(root: Path = ROOT) -> list[str]:
    """The modules of placement/pods/ and plugins/pods/ outside a room (package inits aside)."""
    rooms = core_rooms(root)
    problems = []
    for module in modules_of(root):
        if not within(module.name, (PODS, POD_PLUGINS)) or module.name in GATHERERS:
            continue
        if core_room_of(module.name, rooms) is None:
            problems.append(
                f"{module.path}: every module of placement/pods/ and plugins/pods/ lives in a "
                "room's folder (docs/architecture.md)"
            )
    return problems


MAX_MODULE_LINES = 450
"""At most 450 lines per product module (docs/architecture.md): a longer one holds two things."""


def oversized_modules(root: Path = ROOT, limit: int = MAX_MODULE_LINES) -> list[str]:
    """The product modules (every layer's, tests and perf aside) longer than `limit` lines."""
    problems = []
    for path in source_files(root):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > limit:
            rel = path.relative_to(root).as_posix()
            problems.append(f"{rel}: {lines} lines, over {limit} (docs/architecture.md): split it")
    return sorted(problems)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each project file -> the other project files it imports."""
    path_of = {module.name: module.path for module in modules_of(root)}
    return {
        module.path: {
            path_of[imported.module]
            for imported in module.imports
            if imported.module in path_of and imported.module != module.name
        }
        for module in modules_of(root)
    }


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of a graph (Tarjan): every cycle lies inside one."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for successor in sorted(graph[node]):
            if successor not in order:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], order[successor])
        if low[node] == order[node]:
            component: set[str] = set()
            while not component or node not in component:
                component.add(stack.pop())
            components.append(component)

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return components


def cycles_from(start: str, graph: dict[str, set[str]], others: set[str]) -> list[list[str]]:
    """The simple cycles that leave `start` and come back to it through `others` only."""
    cycles: list[list[str]] = []

    def walk(path: list[str]) -> None:
        for successor in sorted(graph[path[-1]]):
            if successor == start:
                cycles.append(path)
            elif successor in others and successor not in path:
                walk([*path, successor])

    walk([start])
    return cycles


def import_cycles(root: Path = ROOT) -> list[str]:
    """Every import cycle among project modules, once each, starting from its smallest file."""
    graph = import_graph(root)
    cycles = [
        " -> ".join([*cycle, start])
        for component in strongly_connected(graph)
        for start in component
        for cycle in cycles_from(start, graph, {other for other in component if other > start})
    ]
    return sorted(cycles)


# The real tree.


def test_the_checker_reads_the_real_tree() -> None:
    paths = [module.path for module in modules_of(ROOT)]
    assert {path.split("/")[0] for path in paths} == set(LAYERS)
    assert {f"controllers/{room}/__init__.py" for room in ROOMS} <= set(paths)
    assert sum(len(module.imports) for module in modules_of(ROOT)) > len(paths)


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_only_what_design_allows(layer: str) -> None:
    assert layer_violations(layer) == []


@pytest.mark.parametrize("room", ROOMS)
def test_room_imports_only_what_its_row_allows(room: str) -> None:
    assert room_violations(room) == []


def test_every_module_of_controllers_lives_in_a_room() -> None:
    assert homeless_modules() == []


def test_core_rooms_import_only_what_their_row_allows() -> None:
    assert core_room_violations() == []


def test_every_module_of_the_pod_core_and_plugins_lives_in_a_room() -> None:
    assert homeless_core_modules() == []


def test_the_rooms_are_the_folders_of_the_tree() -> None:
    rooms = core_rooms()
    folders = {module.name for module in modules_of(ROOT) if module.path.endswith("/__init__.py")}
    assert set(rooms) <= folders
    assert f"{POD_PLUGINS}.coscheduling" in rooms
    assert f"{POD_PLUGINS}.noderesources" in rooms


def test_no_import_cycles() -> None:
    assert import_cycles() == []


def test_no_product_module_is_over_the_size_limit() -> None:
    assert oversized_modules() == []


def test_size_check_names_a_module_over_the_limit(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "placement/__init__.py": "",
            "placement/short.py": "x = 1\n" * 3,
            "placement/long.py": "x = 1\n" * 4,
            "tests/long_test.py": "x = 1\n" * 9,
        },
    )
    assert oversized_modules(tmp_path, limit=3) == [
        "placement/long.py: 4 lines, over 3 (docs/architecture.md): split it"
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


# The checker itself, on synthetic trees.

# A small tree that keeps every rule, with an import of each kind between allowed places.
CLEAN_TREE = {
    "apis/__init__.py": "",
    "apis/meta.py": "",
    "apis/placements.py": "from apis.meta import KubeObject\n",
    "placement/__init__.py": "from placement.snapshot import FleetSnapshot\n",
    "placement/framework.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from apis.placements import Placement\n"
    ),
    "placement/snapshot.py": "import numpy\nfrom . import framework\n",
    "plugins/__init__.py": "",
    "plugins/balance.py": "from placement.framework import Status\n",
    "controllers/__init__.py": "",
    "controllers/kube/__init__.py": "",
    "controllers/kube/gateway.py": "import kubernetes_asyncio\nfrom apis.meta import KubeObject\n",
    "controllers/runtime/__init__.py": "",
    "controllers/runtime/cache.py": "from controllers.kube.gateway import Gateway\n"
    "from apis import meta\n",
    "controllers/hub/__init__.py": "",
    "controllers/hub/manager.py": "from ..runtime import cache\nfrom plugins import balance\n",
    "controllers/addons/__init__.py": "",
    "controllers/addons/webhook.py": "from controllers.runtime.cache import Informer\n"
    "from placement import snapshot\n",
    "controllers/embedded/__init__.py": "",
    "controllers/embedded/apiserver.py": "from controllers.cli.crds import CRD_DIR\n",
    "controllers/cli/__init__.py": "",
    "controllers/cli/crds.py": "from apis.meta import KubeObject\n",
    "controllers/cli/main.py": (
        "from controllers.embedded.apiserver import EmbeddedApiServer\n"
        "from controllers.hub.manager import Manager\n"
        "from controllers.addons import webhook\n"
    ),
}
CLEAN_GRAPH = {
    "apis/__init__.py": set(),
    "apis/meta.py": set(),
    "apis/placements.py": {"apis/meta.py"},
    "placement/__init__.py": {"placement/snapshot.py"},
    "placement/framework.py": {"apis/placements.py"},
    "placement/snapshot.py": {"placement/framework.py"},
    "plugins/__init__.py": set(),
    "plugins/balance.py": {"placement/framework.py"},
    "controllers/__init__.py": set(),
    "controllers/kube/__init__.py": set(),
    "controllers/kube/gateway.py": {"apis/meta.py"},
    "controllers/runtime/__init__.py": set(),
    "controllers/runtime/cache.py": {"controllers/kube/gateway.py", "apis/meta.py"},
    "controllers/hub/__init__.py": set(),
    "controllers/hub/manager.py": {"controllers/runtime/cache.py", "plugins/balance.py"},
    "controllers/addons/__init__.py": set(),
    "controllers/addons/webhook.py": {"controllers/runtime/cache.py", "placement/snapshot.py"},
    "controllers/embedded/__init__.py": set(),
    "controllers/embedded/apiserver.py": {"controllers/cli/crds.py"},
    "controllers/cli/__init__.py": set(),
    "controllers/cli/crds.py": {"apis/meta.py"},
    "controllers/cli/main.py": {
        "controllers/embedded/apiserver.py",
        "controllers/hub/manager.py",
        "controllers/addons/webhook.py",
    },
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (path -> source) under `root`; returns `root`."""
    for rel, source in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(source, encoding="utf-8")
    return root


def every_violation(root: Path) -> list[str]:
    """What every check finds in a tree: layers, rooms, homeless modules and cycles."""
    return [
        *(problem for layer in LAYERS for problem in layer_violations(layer, root)),
        *(problem for room in ROOMS for problem in room_violations(room, root)),
        *homeless_modules(root),
        *core_room_violations(root),
        *homeless_core_modules(root),
        *import_cycles(root),
    ]


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

    assert layer_violations("placement", tmp_path) == [
        "placement/bad.py:1 imports plugins: "
        "placement may not import plugins (docs/architecture.md)"
    ]
    assert len(layer_violations("apis", tmp_path)) == 2
    assert layer_violations("controllers", tmp_path) == [
        "controllers/bad.py:1 imports kubernetes_asyncio: "
        "only controllers/kube/ may use the Kubernetes clients"
    ]


def test_a_clean_tree_passes_every_check_after_reading_every_import(tmp_path: Path) -> None:
    root = write_tree(tmp_path, CLEAN_TREE)

    assert every_violation(root) == []
    assert import_graph(root) == CLEAN_GRAPH


@pytest.mark.parametrize(
    ("line", "imported"),
    [
        pytest.param("import placement.snapshot", "placement.snapshot", id="import-dotted"),
        pytest.param("import numpy as np", "numpy", id="import-third-party"),
        pytest.param("from placement import snapshot", "placement.snapshot", id="from-submodule"),
        pytest.param("from placement import Scheduler", "placement", id="from-package-a-name"),
        pytest.param("from placement.snapshot import Row", "placement.snapshot", id="from-module"),
        pytest.param("from . import snapshot", "placement.snapshot", id="relative-submodule"),
        pytest.param("from .snapshot import Row", "placement.snapshot", id="relative-module"),
        pytest.param("from . import Scheduler", "placement", id="relative-package-a-name"),
        pytest.param("from .. import apis", "apis", id="relative-parent"),
        pytest.param(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .snapshot import Row",
            "placement.snapshot",
            id="under-type-checking",
        ),
        pytest.param(
            "def f():\n    from .snapshot import Row", "placement.snapshot", id="in-function"
        ),
    ],
)
def test_imports_are_resolved_to_modules(line: str, imported: str) -> None:
    known = {"apis", "placement", "placement.framework", "placement.snapshot"}

    modules = [i.module for i in imports_in(line, "placement.framework", False, known)]

    assert modules[-1] == imported


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"controllers/runtime/bad.py": "from controllers.hub.manager import Manager\n"},
            "controllers/runtime/bad.py:1 imports controllers.hub.manager: the runtime room",
            id="runtime-imports-hub",
        ),
        pytest.param(
            {"controllers/runtime/bad.py": "import os\nfrom apis.placements import Placement\n"},
            "controllers/runtime/bad.py:2 imports apis.placements: the runtime room",
            id="runtime-imports-apis-placements",
        ),
        pytest.param(
            {"controllers/runtime/bad.py": "from apis import meta, placements\n"},
            "controllers/runtime/bad.py:1 imports apis.placements: the runtime room",
            id="runtime-imports-apis-placements-as-a-submodule",
        ),
        pytest.param(
            {"controllers/runtime/bad.py": "def f():\n    import placement.snapshot\n"},
            "controllers/runtime/bad.py:2 imports placement.snapshot: the runtime room",
            id="runtime-imports-placement-in-a-function",
        ),
        pytest.param(
            {"controllers/hub/bad.py": "from controllers.addons.webhook import Webhook\n"},
            "controllers/hub/bad.py:1 imports controllers.addons.webhook: the hub room",
            id="hub-imports-addons",
        ),
        pytest.param(
            {"controllers/addons/bad.py": "from ..hub import manager\n"},
            "controllers/addons/bad.py:1 imports controllers.hub.manager: the addons room",
            id="addons-imports-hub-relatively",
        ),
        pytest.param(
            {"controllers/hub/bad.py": "from controllers.cli import crds\n"},
            "controllers/hub/bad.py:1 imports controllers.cli.crds: the hub room",
            id="hub-imports-cli",
        ),
        pytest.param(
            {"controllers/embedded/bad.py": "from controllers.runtime.cache import Informer\n"},
            "controllers/embedded/bad.py:1 imports controllers.runtime.cache: the embedded room",
            id="embedded-imports-runtime",
        ),
        pytest.param(
            {
                "controllers/kube/bad.py": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from controllers.runtime import cache\n"
            },
            "controllers/kube/bad.py:3 imports controllers.runtime.cache: the kube room",
            id="kube-imports-runtime-under-type-checking",
        ),
        pytest.param(
            {"controllers/helpers.py": ""},
            "controllers/helpers.py: every module of controllers/ lives in a room "
            "(docs/architecture.md)",
            id="stray-module-in-controllers",
        ),
        pytest.param(
            {"controllers/shared/__init__.py": ""},
            "controllers/shared/__init__.py: shared is not a room of ROOMS (docs/architecture.md)",
            id="unknown-room",
        ),
    ],
)
def test_checker_catches_a_room_violation(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    root = write_tree(tmp_path, CLEAN_TREE | files)

    found = every_violation(root)

    assert len(found) == 1, found
    assert found[0].startswith(expected)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {
                "placement/framework.py": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from placement.snapshot import FleetSnapshot\n",
                "placement/snapshot.py": "from placement.framework import BoolMask\n",
            },
            ["placement/framework.py -> placement/snapshot.py -> placement/framework.py"],
            id="two-modules-one-under-type-checking",
        ),
        pytest.param(
            {
                "plugins/a.py": "from .b import B\n",
                "plugins/b.py": "from . import c\n",
                "plugins/c.py": "def f():\n    from .a import A\n",
            },
            ["plugins/a.py -> plugins/b.py -> plugins/c.py -> plugins/a.py"],
            id="three-modules-relative-and-in-a-function",
        ),
        pytest.param(
            {
                "controllers/runtime/queue.py": "import controllers.runtime.leader\n",
                "controllers/runtime/leader.py": "from controllers.runtime import queue\n",
            },
            [
                "controllers/runtime/leader.py -> controllers/runtime/queue.py"
                " -> controllers/runtime/leader.py"
            ],
            id="two-modules-in-a-room",
        ),
        pytest.param(
            {"controllers/cli/crds.py": "from controllers.embedded import apiserver\n"},
            [
                "controllers/cli/crds.py -> controllers/embedded/apiserver.py"
                " -> controllers/cli/crds.py"
            ],
            id="across-rooms-that-may-import-each-other",
        ),
        pytest.param(
            {
                "apis/a.py": "from apis import b\n",
                "apis/b.py": "from apis import a, c\n",
                "apis/c.py": "from apis.b import B\n",
            },
            ["apis/a.py -> apis/b.py -> apis/a.py", "apis/b.py -> apis/c.py -> apis/b.py"],
            id="two-cycles-sharing-a-module-each-reported-once",
        ),
        pytest.param(
            {
                "plugins/__init__.py": "from plugins.topn import TopN\n",
                "plugins/topn.py": "from plugins import DEFAULTS\n",
            },
            ["plugins/__init__.py -> plugins/topn.py -> plugins/__init__.py"],
            id="through-the-package-init",
        ),
    ],
)
def test_checker_catches_an_import_cycle(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    root = write_tree(tmp_path, CLEAN_TREE | files)

    assert every_violation(root) == expected
