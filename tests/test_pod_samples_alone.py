"""config/samples/pods/: every scenario runs alone, as the READMEs say (issue 48, item 6).

* Each `$ placement scheduler simulate ...` of a README under config/samples/pods/ runs as
  written (the shell expands it, as a reader's would) and prints every line the README shows,
  in order.
* Each scenario (the top folder's files together, each file of a subfolder alone, the
  numbered files of a subfolder such as `dra/` together) is
  self-contained: its namespaces, its nodes; run alone it binds pods and warns of nothing.
* A scenario keeps its outcome when the whole tree is read at once (`-f config/samples/pods/`),
  but for those whose story is the whole cluster's capacity (quotas, a gang's minResources).
* The spot webhook's sample: 10 pods, all bound, 3 on on-demand nodes (one each), 7 on spot.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.cli.common import EXIT_OK
from controllers.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
PODS = ROOT / "config" / "samples" / "pods"
SPOT = PODS / "spot" / "min-available.yaml"
NOW = "2026-11-23T00:00:00Z"
NUMBERED = re.compile(r"^\d\d-[\w.-]+\.yaml$")
CONSOLE = re.compile(r"^( *)```console\n(.*?)^\1```$", re.DOTALL | re.MULTILINE)
# Scenarios whose outcome is about the whole cluster's capacity: read with every other
# sample, their sums change (the READMEs say so).
CLUSTER_WIDE = {"quotas", "gangs/min-resources.yaml"}


@dataclass(frozen=True)
class Shown:
    where: str
    command: str
    lines: tuple[str, ...]


def shown() -> list[Shown]:
    """Each console block's command (continuations joined) and the lines it shows."""
    found = []
    for readme in sorted(PODS.rglob("README.md")):
        text = readme.read_text(encoding="utf-8")
        for match in CONSOLE.finditer(text):
            indent = len(match[1])
            lines = [line[indent:] for line in match[2].splitlines()]
            command = lines.pop(0).removeprefix("$ ")
            while command.endswith("\\"):
                command = command[:-1] + lines.pop(0).strip()
            line = text.count("\n", 0, match.start()) + 1
            found.append(Shown(f"{readme.relative_to(ROOT)}:{line}", command, tuple(lines)))
    return found


SHOWN = shown()


def argv_of(command: str) -> list[str]:
    """The words bash makes of the command (its `$(...)` and globs expanded), run from the
    repository's root as the READMEs' paths are; without the leading `placement`."""
    assert command.startswith("placement "), command
    words = subprocess.run(
        ["bash", "-c", "printf '%s\\0' " + command.removeprefix("placement ")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return words.split("\0")[:-1]


def simulate(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.chdir(ROOT):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def numbered(folder: Path) -> bool:
    """A subfolder whose files are numbered (`00-namespaces.yaml`, ...) is one scenario, its
    files applied in the order of their numbers (`dra/`)."""
    files = list(folder.glob("*.yaml"))
    return bool(files) and all(NUMBERED.match(f.name) for f in files)


def scenarios() -> dict[str, list[Path]]:
    """Scenario -> its files: the top folder's together, each subfolder's file alone but those
    of a numbered subfolder, together."""
    found = {"top": sorted(PODS.glob("*.yaml"))}
    for path in sorted(PODS.glob("*/*.yaml")):
        if numbered(path.parent):
            found.setdefault(f"{path.parent.name}/", []).append(path)
        else:
            found[str(path.relative_to(PODS))] = [path]
    return found


def pods_of(files: list[Path]) -> dict[str, dict[str, Any]]:
    """`namespace/name` -> the pod as `scheduler simulate -o json` prints it."""
    argv = ["scheduler", "simulate", "-o", "json", "--now", NOW]
    argv += [arg for path in files for arg in ("-f", str(path))]
    code, out, err = simulate(argv)
    assert (code, err) == (EXIT_OK, ""), err
    items = json.loads(out)["items"]
    return {
        f"{i['metadata']['namespace']}/{i['metadata']['name']}": i
        for i in items
        if i["kind"] == "Pod"
    }


def where(pod: dict[str, Any]) -> tuple[str | None, bool]:
    """(node, evicted) of a pod."""
    return pod["spec"].get("nodeName"), bool(pod["metadata"].get("deletionTimestamp"))


def test_the_readmes_show_commands() -> None:
    commands = {s.command.split(" -f ")[1].split()[0] for s in SHOWN if " -f " in s.command}
    assert "config/samples/pods/spot/min-available.yaml" in commands
    assert len(SHOWN) >= 5


@pytest.mark.parametrize("block", SHOWN, ids=[s.where for s in SHOWN])
def test_a_readme_command_runs_one_scenario_and_prints_what_it_shows(block: Shown) -> None:
    argv = argv_of(block.command)
    paths = [argv[i + 1] for i, word in enumerate(argv) if word == "-f"]
    # files, or a folder of numbered files (one scenario, such as dra/)
    one = [(ROOT / p).is_file() or ((ROOT / p).is_dir() and numbered(ROOT / p)) for p in paths]
    assert paths and all(one), f"{block.where}: {paths}"
    code, out, err = simulate(argv)
    assert (code, err) == (EXIT_OK, ""), f"{block.where}: {err}"
    printed = [line.rstrip() for line in out.splitlines()]
    at = 0
    for line in block.lines:
        if line.strip() in {"", "..."}:
            continue
        assert line.rstrip() in printed[at:], f"{block.where}: not printed (in order): {line}"
        at = printed.index(line.rstrip(), at) + 1


@pytest.mark.parametrize("name", sorted(scenarios()))
def test_a_scenario_alone_holds_its_nodes_and_namespaces_and_binds(name: str) -> None:
    files = scenarios()[name]
    docs = [d for f in files for d in yaml.safe_load_all(f.read_text()) if isinstance(d, dict)]
    namespaces = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    used = {d["metadata"]["namespace"] for d in docs if d["metadata"].get("namespace")}
    assert used <= namespaces, f"{name}: namespaces of other files: {used - namespaces}"
    nodes = {d["metadata"]["name"] for d in docs if d["kind"] == "Node"}
    assert nodes, f"{name}: no nodes of its own"
    pods = pods_of(files)
    bound = [p for p in pods.values() if where(p)[0]]
    assert bound, f"{name}: run alone, no pod is bound"
    assert {where(p)[0] for p in bound} <= nodes


def test_a_scenario_keeps_its_outcome_when_the_whole_tree_is_read() -> None:
    whole = pods_of([PODS])
    for name, files in scenarios().items():
        if any(name.startswith(prefix) for prefix in CLUSTER_WIDE):
            continue
        for key, pod in pods_of(files).items():
            assert where(whole[key]) == where(pod), f"{name}: {key} moved in the whole tree"


def test_the_spot_sample_alone_puts_3_on_demand_and_7_on_spot() -> None:
    capacity = {
        d["metadata"]["name"]: d["metadata"]["labels"]["node.kubernetes.io/capacity"]
        for d in yaml.safe_load_all(SPOT.read_text())
        if isinstance(d, dict) and d["kind"] == "Node"
    }
    pods = pods_of([SPOT])
    assert len(pods) == 10
    nodes = [where(p)[0] for p in pods.values()]
    assert all(nodes), "every pod bound"
    assert Counter(capacity[n] for n in nodes if n) == {"on-demand": 3, "spot": 7}
    on_demand = [n for n in nodes if n and capacity[n] == "on-demand"]
    assert len(set(on_demand)) == 3  # one per on-demand node


def test_the_top_folder_alone_tells_the_readmes_story() -> None:
    pods = pods_of(scenarios()["top"])
    assert not any(key.startswith("shop/checkout") for key in pods)  # the spot sample is apart
    assert where(pods["batch/nightly-etl-a"]) == ("od-1", True)  # preempted by db-2
    assert where(pods["batch/nightly-etl-b"]) == ("od-2", False)
    assert {where(pods[f"shop/db-{i}"])[0] for i in range(3)} <= {"od-1", "od-2", "od-3"}
    assert where(pods["shop/cache-warmer"]) == (None, False)
    assert sum(1 for p in pods.values() if where(p)[0] and not where(p)[1]) == 12


def test_the_dra_sample_alone_gives_each_pod_its_own_gpu_on_its_node() -> None:
    """dra/: every pod bound; each claim allocated one device of the pool of its pod's node (the
    driver's pools are named after the nodes), reserved for that pod; no GPU twice; the claim
    `h100` an H100 of 80Gi, as its selectors ask."""
    files = scenarios()["dra/"]
    argv = ["scheduler", "simulate", "-o", "json", "--now", NOW]
    argv += [arg for path in files for arg in ("-f", str(path))]
    code, out, err = simulate(argv)
    assert (code, err) == (EXIT_OK, ""), err
    items = json.loads(out)["items"]
    pods = {i["metadata"]["name"]: i for i in items if i["kind"] == "Pod"}
    claims = {i["metadata"]["name"]: i for i in items if i["kind"] == "ResourceClaim"}
    devices = {
        (s["spec"]["pool"]["name"], d["name"]): d
        for s in items
        if s["kind"] == "ResourceSlice"
        for d in s["spec"]["devices"]
    }
    assert sorted(pods) == ["inference", *(f"trainer-{i}" for i in range(4))]
    given = []
    for name, pod in pods.items():
        node = pod["spec"].get("nodeName")
        assert node and not pod["metadata"].get("deletionTimestamp"), name
        made = {
            s["name"]: s["resourceClaimName"]
            for s in pod["status"].get("resourceClaimStatuses", [])
        }
        claim = claims["h100" if name == "inference" else made["gpu"]]
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}
        ]
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"]) == ("gpu.example.com", node)
        given.append((result["pool"], result["device"]))
    assert len(set(given)) == len(given) == 5
    inference = claims["h100"]["status"]["allocation"]["devices"]["results"][0]
    gpu = devices[(inference["pool"], inference["device"])]
    assert gpu["attributes"]["model"] == {"string": "H100"}
    assert gpu["capacity"]["memory"] == {"value": "80Gi"}
