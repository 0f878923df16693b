"""ImageLocality: kube's image names, its spread-scaled sizes and thresholds (scores worked out
by hand below), its cache's first-reported size, node events, and a pod placed by the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from apis.core import Node, Pod
from controllers.cli.common import EXIT_OK
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import NodeEvent
from placement.pods.framework.interface import ClusterView, PodInfo
from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS
from plugins.pods.imagelocality.image_locality import (
    MB,
    ImageLocality,
    normalized_image_name,
    pod_images,
)
from tests.controllers.cli.samples import run
from tests.placement.pods.test_engine import T0, World, binds, make_pod
from tests.plugins.pods.builders import all_rows, by_name, cycle, snapshot


def image_node(name: str, *images: tuple[list[str], int]) -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name},
            "status": {
                "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "images": [{"names": names, "sizeBytes": size} for names, size in images],
            },
        }
    )


def image_pod(*images: str, init: tuple[str, ...] = ()) -> PodInfo:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": x} for i, x in enumerate(images)]
    }
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": x} for i, x in enumerate(init)]
    return PodInfo.of(Pod.model_validate({"metadata": {"name": "p"}, "spec": spec}))


def scores(plugin: ImageLocality, pod: PodInfo, nodes: NodeSnapshot) -> dict[str, int]:
    return by_name(nodes, all_rows(nodes), plugin.score(cycle(), pod, nodes, all_rows(nodes)))


def fed(*nodes: Node) -> tuple[ImageLocality, NodeSnapshot]:
    plugin = ImageLocality()
    for node in nodes:
        plugin.on_event(NodeEvent("Added", node), _NO_VIEW)
    return plugin, snapshot(list(nodes))


_NO_VIEW: ClusterView = None  # type: ignore[assignment]  # the plugin does not read it

# kube's own example nodes: 40, 300 and 2000 MB images on one node, 250 and 10 MB on another.
BIG = image_node(
    "node-403002000",
    (["gcr.io/40:latest", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
)
SMALL = image_node(
    "node-25010", (["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)
)


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.27", "nginx:1.27"),
        ("gcr.io/a/b", "gcr.io/a/b:latest"),
        ("registry:5000/team/app", "registry:5000/team/app:latest"),  # the port is no tag
        ("registry:5000/team/app:v2", "registry:5000/team/app:v2"),
        ("app@sha256:0123abcd", "app@sha256:0123abcd"),
        ("", ":latest"),
    ],
)
def test_image_names_are_normalized_as_kube_does(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


def test_two_nodes_prefer_the_one_holding_more_of_the_pods_images() -> None:
    plugin, nodes = fed(BIG, SMALL)
    # Each image is on 1 of 2 nodes: spread 1/2. Two containers: thresholds 23 MiB..2000 MiB.
    # node-403002000: 40/2 + 300/2 = 170 MiB = 178257920; (178257920 - 24117248) * 100 //
    # (2097152000 - 24117248) = 15414067200 // 2073034752 = 7. node-25010: nothing, 0.
    assert scores(plugin, image_pod("gcr.io/40", "gcr.io/300"), nodes) == {
        "node-403002000": 7,
        "node-25010": 0,
    }
    # node-25010: 250/2 + 10/2 = 130 MiB = 136314880; 112197632 * 100 // 2073034752 = 5.
    assert scores(plugin, image_pod("gcr.io/250:latest", "gcr.io/10:v1"), nodes) == {
        "node-403002000": 0,
        "node-25010": 5,
    }


def test_the_sum_is_clamped_to_the_per_container_maximum() -> None:
    plugin, nodes = fed(BIG, SMALL)
    # 2000 MiB on 1 of 2 nodes: 1000 MiB, exactly the one-container maximum: 100.
    assert scores(plugin, image_pod("gcr.io/2000"), nodes)["node-403002000"] == 100
    # Below 23 MiB counts as 23 MiB: 10 MiB / 2 = 5 MiB gives 0.
    assert scores(plugin, image_pod("gcr.io/10"), nodes)["node-25010"] == 0


def test_spread_truncates_as_kubes_float_arithmetic() -> None:
    plugin, nodes = fed(BIG, SMALL, image_node("empty"))
    # 2000 MiB * (1/3) = 699050666.67 -> 699050666; (699050666 - 24117248) * 100 //
    # (1048576000 - 24117248) = 67493341800 // 1024458752 = 65.
    assert scores(plugin, image_pod("gcr.io/2000"), nodes) == {
        "empty": 0,
        "node-25010": 0,
        "node-403002000": 65,
    }


def test_init_containers_count_in_the_sum_and_in_the_maximum() -> None:
    plugin, nodes = fed(BIG, SMALL)
    # Three containers (one init): maximum 3000 MiB = 3145728000. node-403002000 holds
    # 2000 (init) and 300: 1000 + 150 = 1150 MiB = 1205862400; (1205862400 - 24117248) * 100
    # // (3145728000 - 24117248) = 118174515200 // 3121610752 = 37; node-25010 holds 250:
    # 125 MiB = 131072000; 106954752 * 100 // 3121610752 = 3.
    pod = image_pod("gcr.io/300", "gcr.io/250", init=("gcr.io/2000",))
    assert pod_images(pod.pod) == ("gcr.io/2000:latest", "gcr.io/300:latest", "gcr.io/250:latest")
    assert scores(plugin, pod, nodes) == {"node-403002000": 37, "node-25010": 3}


def test_an_image_on_every_node_scores_by_its_full_size() -> None:
    a = image_node("a", (["busybox:latest"], 523 * MB))
    b = image_node("b", (["busybox:latest"], 523 * MB))
    plugin, nodes = fed(a, b)
    # 523 MiB * 2/2 = 548405248; (548405248 - 24117248) * 100 // 1024458752 = 51.
    assert scores(plugin, image_pod("busybox"), nodes) == {"a": 51, "b": 51}


def test_a_tagless_pod_image_matches_latest_but_not_another_registry_spelling() -> None:
    plugin, nodes = fed(
        image_node("a", (["nginx:latest"], 500 * MB)),
        image_node("b", (["docker.io/library/nginx:latest"], 500 * MB)),
    )
    found = scores(plugin, image_pod("nginx"), nodes)
    assert found["a"] > 0 and found["b"] == 0


def test_the_size_is_the_first_reported_one_while_any_node_lists_the_image() -> None:
    first = image_node("a", (["app:v1"], 800 * MB))
    second = image_node("b", (["app:v1"], 100 * MB))
    plugin, nodes = fed(first, second)
    # 800 MiB on 2 of 2 nodes, for both: (838860800 - 24117248) * 100 // 1024458752 = 79.
    assert scores(plugin, image_pod("app:v1"), nodes) == {"a": 79, "b": 79}
    plugin.on_event(NodeEvent("Deleted", first), _NO_VIEW)
    only_b = snapshot([second])
    assert scores(plugin, image_pod("app:v1"), only_b) == {"b": 79}  # still 800 MiB
    plugin.on_event(NodeEvent("Modified", image_node("b")), _NO_VIEW)  # b drops it
    plugin.on_event(NodeEvent("Modified", second), _NO_VIEW)  # and pulls it again
    # 100 MiB now: (104857600 - 24117248) * 100 // 1024458752 = 7.
    assert scores(plugin, image_pod("app:v1"), only_b) == {"b": 7}


def test_an_image_change_on_the_same_node_set_is_seen() -> None:
    a, b = image_node("a"), image_node("b")
    plugin, nodes = fed(a, b)
    pod = image_pod("model:7b")
    assert scores(plugin, pod, nodes) == {"a": 0, "b": 0}
    plugin.on_event(NodeEvent("Modified", image_node("b", (["model:7b"], 4000 * MB))), _NO_VIEW)
    assert scores(plugin, pod, nodes) == {"a": 0, "b": 100}  # 2000 MiB > 1000 MiB: clamped
    assert scores(plugin, pod, nodes) == {"a": 0, "b": 100}  # from the memo, same answer


def test_only_the_asked_rows_are_returned() -> None:
    plugin, nodes = fed(BIG, SMALL)
    pod = image_pod("gcr.io/250", "gcr.io/10")
    for name, expected in (("node-25010", 5), ("node-403002000", 0)):
        rows = np.array([nodes.row_of(name)], dtype=np.intp)
        assert list(plugin.score(cycle(), pod, nodes, rows)) == [expected]


def test_imagelocality_is_a_default_score_plugin_of_weight_1() -> None:
    assert DEFAULT_SCORE_WEIGHTS["ImageLocality"] == 1
    assert DEFAULT_PLUGINS.index("ImageLocality") == (
        DEFAULT_PLUGINS.index("NodeResourcesBalancedAllocation") + 1
    )
    with pytest.raises(ValueError, match=r"^surprise: unknown field"):
        POD_PLUGINS["ImageLocality"]({"surprise": True})


def test_the_engine_places_a_pod_where_its_image_already_is() -> None:
    world = World.of()
    world.add_nodes(image_node("a"), image_node("b", (["trainer:v3"], 900 * MB)))
    pod = make_pod("job", cpu=1)
    container = pod.spec.containers[0].model_copy(update={"image": "trainer:v3"})
    pod = pod.model_copy(update={"spec": pod.spec.model_copy(update={"containers": [container]})})
    world.add_pods(pod, make_pod("plain", cpu=1))
    # Otherwise equal nodes tie to the first by name: the plain pod goes to a, the job to b.
    assert binds(world.step()) == {"default/job": "b", "default/plain": "a"}
    assert world.now == T0


SIMULATED = """
apiVersion: v1
kind: Node
metadata: {name: a}
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: b}
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
  images: [{names: ["trainer:v3"], sizeBytes: 943718400}]
---
apiVersion: v1
kind: Pod
metadata: {name: job, namespace: default}
spec:
  schedulerName: ocm-pod-scheduler
  containers: [{name: c, image: "trainer:v3", resources: {requests: {cpu: "1"}}}]
"""


def test_scheduler_simulate_reads_node_images(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "cluster.yaml").write_text(SIMULATED)
    now = ["--now", "2026-01-01T00:00:00Z"]
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", str(tmp_path), "-o", "table", *now)
    assert code == EXIT_OK
    assert out.splitlines()[1].split()[:3] == ["default", "job", "b"]  # a would win a tie
