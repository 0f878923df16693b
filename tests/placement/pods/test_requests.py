"""Pod requests as kube-scheduler computes them (containers, init containers, sidecars,
overhead), in the scheduler's integer units."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Pod
from placement.pods.cluster.requests import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    non_zero_requests,
    pod_requests,
)

Mi = 1024 * 1024


def _name(keyword: str) -> str:
    """`nvidia_com_gpu` -> `nvidia.com/gpu`, `ephemeral_storage` -> `ephemeral-storage`."""
    return keyword.replace("nvidia_com_", "nvidia.com/").replace("_", "-")


def container(name: str, sidecar: bool = False, limits: Any = None, **requests: Any) -> Any:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = {_name(k): v for k, v in requests.items()}
    if limits:
        resources["limits"] = limits
    out: dict[str, Any] = {"name": name, "resources": resources}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def pod(containers: list[Any], init: list[Any] | None = None, overhead: Any = None) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    return Pod.model_validate({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            pod([container("a", cpu="100m", memory="1Mi"), container("b", cpu="1", memory="1Mi")]),
            {"cpu": 1100, "memory": 2 * Mi, "pods": 1},
            id="containers-are-summed",
        ),
        pytest.param(
            pod(
                [container("a", cpu="100m")],
                init=[container("i", cpu="2"), container("j", cpu="1")],
            ),
            {"cpu": 2000, "pods": 1},
            id="a-larger-init-container-raises-the-requests-to-its-own",
        ),
        pytest.param(
            pod([container("a", cpu="3")], init=[container("i", cpu="2", memory="5Mi")]),
            {"cpu": 3000, "memory": 5 * Mi, "pods": 1},
            id="init-containers-raise-each-resource-separately",
        ),
        pytest.param(
            pod([container("a", cpu="1")], init=[container("s", sidecar=True, cpu="500m")]),
            {"cpu": 1500, "pods": 1},
            id="a-sidecar-adds-to-the-main-containers",
        ),
        pytest.param(
            pod(
                [container("a", cpu="1")],
                init=[container("s", sidecar=True, cpu="500m"), container("i", cpu="2")],
            ),
            {"cpu": 2500, "pods": 1},
            id="a-sidecar-before-an-init-container-runs-next-to-it",
        ),
        pytest.param(
            pod(
                [container("a", cpu="1")],
                init=[container("i", cpu="2"), container("s", sidecar=True, cpu="500m")],
            ),
            {"cpu": 2000, "pods": 1},
            id="a-sidecar-after-an-init-container-does-not-run-next-to-it",
        ),
        pytest.param(
            pod(
                [container("a", cpu="100m")],
                init=[
                    container("s1", sidecar=True, cpu="1"),
                    container("i", cpu="1"),
                    container("s2", sidecar=True, cpu="1"),
                ],
            ),
            {"cpu": 2100, "pods": 1},
            id="sidecars-accumulate-in-order",
        ),
        pytest.param(
            pod([container("a", cpu="1")], overhead={"cpu": "250m", "memory": "120Mi"}),
            {"cpu": 1250, "memory": 120 * Mi, "pods": 1},
            id="overhead-is-added",
        ),
        pytest.param(
            pod([container("a", cpu="1")], init=[container("i", cpu="4")], overhead={"cpu": "1"}),
            {"cpu": 5000, "pods": 1},
            id="overhead-is-added-after-the-init-maximum",
        ),
        pytest.param(
            pod(
                [container("a", nvidia_com_gpu="2"), container("b", nvidia_com_gpu="1")],
                init=[container("i", nvidia_com_gpu="4")],
            ),
            {"nvidia.com/gpu": 4, "pods": 1},
            id="extended-resources-are-integers-like-the-others",
        ),
        pytest.param(
            pod([container("a", ephemeral_storage="1Gi", memory="1.5Ki", cpu="0.0001")]),
            {"ephemeral-storage": 1024 * Mi, "memory": 1536, "cpu": 1, "pods": 1},
            id="quantities-are-rounded-up-to-the-unit",
        ),
        pytest.param(
            pod([container("a", cpu="0.0001"), container("b", cpu="0.0001")]),
            {"cpu": 1, "pods": 1},
            id="quantities-are-summed-exactly-and-rounded-once",
        ),
        pytest.param(
            pod([container("a", cpu="0.0004")], init=[container("i", cpu="0.0009")]),
            {"cpu": 1, "pods": 1},
            id="init-maxima-compare-exact-quantities",
        ),
        pytest.param(
            pod([container("a"), container("b")]),
            {"pods": 1},
            id="containers-without-requests-request-only-a-pod-slot",
        ),
        pytest.param(
            pod([container("a", limits={"cpu": "2", "memory": "1Gi"})]),
            {"pods": 1},
            id="limits-only-request-nothing-since-admission-copies-them-into-requests",
        ),
    ],
)
def test_pod_requests_follow_kube_scheduler(spec: Pod, expected: dict[str, int]) -> None:
    assert pod_requests(spec) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            pod([container("a"), container("b", cpu="1")]),
            {
                "cpu": DEFAULT_MILLI_CPU_REQUEST + 1000,
                "memory": 2 * DEFAULT_MEMORY_REQUEST,
                "pods": 1,
            },
            id="each-container-without-requests-counts-the-defaults",
        ),
        pytest.param(
            pod([container("a", cpu="0", memory="0")]),
            {"cpu": 0, "memory": 0, "pods": 1},
            id="an-explicit-zero-stays-zero",
        ),
        pytest.param(
            pod([container("a", cpu="50m")], init=[container("i", memory="1Gi")]),
            {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": 1024 * Mi, "pods": 1},
            id="init-containers-get-the-defaults-too",
        ),
    ],
)
def test_non_zero_requests_fill_missing_cpu_and_memory_for_scoring(
    spec: Pod, expected: dict[str, int]
) -> None:
    assert non_zero_requests(spec) == expected


def test_container_restart_policy_round_trips_on_the_wire() -> None:
    spec = pod([container("a")], init=[container("s", sidecar=True)])
    wire = spec.model_dump(by_alias=True, exclude_none=True)
    assert wire["spec"]["initContainers"][0]["restartPolicy"] == "Always"
