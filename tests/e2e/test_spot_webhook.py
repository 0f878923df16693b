"""The spot webhook called by the real kube-apiserver: `placement webhook run` on a loopback
port with a certificate for 127.0.0.1, registered by a MutatingWebhookConfiguration with a `url`
clientConfig and the `caBundle`, scoped to a namespace of the test's own; pods made by kube's
ReplicaSet controller from a Deployment annotated with min-available M (no kubelet: the pods only
need to exist). Counted through the API:

* a 50-replica burst under `failurePolicy: Fail`: every pod mutated, exactly M on-demand;
* answers later than the apiserver's `timeoutSeconds: 1` (the webhook's fault-injection delay on
  its first answers) under `failurePolicy: Ignore`: those pods are created unmutated, and the
  places their reservations took are given back, so later pods make exactly M on-demand; a
  restarted webhook, a scale-up and a deleted on-demand pod keep exactly M;
* the same late answers under `failurePolicy: Fail`: those creates fail, the ReplicaSet
  controller retries, every pod ends mutated and exactly M on-demand.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.webhook_helpers import (
    WebhookProcess,
    capacities,
    deployment,
    kubectl_apply,
    mutations,
    namespace,
    registered,
    wait_for,
    webhook_process,
)

LATE = "1.5"  # seconds each delayed answer is held: past the configuration's timeoutSeconds 1


def count(plane: ControlPlane, ns: str) -> Counter[str | None]:
    return Counter(asyncio.run(capacities(plane, ns)))


def settled(
    plane: ControlPlane,
    ns: str,
    pods: int,
    expected: Counter[str | None],
    hook: WebhookProcess | None = None,
) -> Counter[str | None]:
    """Wait until `ns` holds `pods` pods counted as `expected` (or time out); the last count."""
    seen: list[Counter[str | None]] = [Counter()]

    def check() -> bool:
        seen[0] = count(plane, ns)
        return sum(seen[0].values()) >= pods and seen[0] == expected

    try:
        wait_for(f"{pods} pods counted {dict(expected)}", check, 20, 0.25)
    except AssertionError as exc:
        log = f"\nwebhook log:\n{hook.output()}" if hook is not None else ""
        raise AssertionError(f"{exc}; counted {dict(seen[0])}{log}") from None
    return seen[0]


def test_a_50_pod_burst_from_a_deployment_gives_exactly_m_on_demand(
    controller_manager: ControlPlane,
) -> None:
    plane, m = controller_manager, 7
    with (
        namespace(plane, unique_name("spot-burst")) as ns,
        webhook_process(plane) as hook,
        registered(plane, hook, ns, ns, policy="Fail"),
    ):
        kubectl_apply(plane, deployment("web", ns, 50, m))
        settled(plane, ns, 50, Counter({"on-demand": m, "spot": 50 - m}), hook)
        assert mutations(plane, ns) == {"on-demand": m, "spot": 50 - m}
        assert hook.metric("spot_webhook_admissions_total", decision="on-demand") == m


def test_answers_after_the_apiserver_timeout_give_their_places_back(
    controller_manager: ControlPlane,
) -> None:
    plane, m, late = controller_manager, 3, 3
    delay = ("--fault-delay", LATE, "--fault-delay-first", str(late))
    with namespace(plane, unique_name("spot-late")) as ns:
        with (
            webhook_process(plane, *delay) as hook,
            registered(plane, hook, ns, ns, policy="Ignore", timeout=1),
        ):
            kubectl_apply(plane, deployment("web", ns, 10, m))
            # The first three answers came late: those pods are unmutated (Ignore); the
            # places their reservations took are free again, so the next pods fill M.
            expected = Counter({None: late, "on-demand": m, "spot": 10 - late - m})
            settled(plane, ns, 10, expected, hook)
            assert mutations(plane, ns) == {
                "unmutated": late,
                "on-demand": m,
                "spot": 10 - late - m,
            }
            released = hook.metric("spot_webhook_reservations_released_total", reason="gone")
            assert released == late, hook.output()
        # A restarted webhook counts the on-demand pods that exist, nothing more: a scale-up
        # goes spot, the replacement of a deleted on-demand pod goes on-demand.
        with (
            webhook_process(plane) as hook,
            registered(plane, hook, ns, ns, policy="Ignore", timeout=1),
        ):
            plane.kubectl("scale", "deployment", "web", "-n", ns, "--replicas=14")
            expected = Counter({None: late, "on-demand": m, "spot": 14 - late - m})
            settled(plane, ns, 14, expected, hook)
            selector = "distributed-scheduling/desired-capacity=on-demand"
            names = plane.kubectl("get", "pods", "-n", ns, "-l", selector, "-o", "name")
            gone = names.stdout.split()[0]
            plane.kubectl("delete", "-n", ns, gone, "--wait=false")
            wait_for(
                f"{gone} deleted",
                lambda: gone not in plane.kubectl("get", "pods", "-n", ns, "-o", "name").stdout,
                10,
            )
            settled(plane, ns, 14, expected, hook)


def test_late_answers_under_failure_policy_fail_are_retried_to_exactly_m(
    controller_manager: ControlPlane,
) -> None:
    plane, m = controller_manager, 3
    delay = ("--fault-delay", LATE, "--fault-delay-first", "3")
    with (
        namespace(plane, unique_name("spot-retry")) as ns,
        webhook_process(plane, *delay) as hook,
        registered(plane, hook, ns, ns, policy="Fail", timeout=1),
    ):
        kubectl_apply(plane, deployment("web", ns, 8, m))
        settled(plane, ns, 8, Counter({"on-demand": m, "spot": 8 - m}), hook)
        assert mutations(plane, ns) == {"on-demand": m, "spot": 8 - m}
        assert hook.metric("spot_webhook_reservations_released_total", reason="gone") == 3
