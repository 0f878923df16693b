"""Issue 48: configuration files and flags that crashed or misled the scheduler, run as a user
runs the commands. Each is refused at start-up with the CLI's exit code (1 for a bad file or a
flag value the verb checks, 2 for a flag argparse refuses) and exactly one stderr line naming
the file and the field, never a traceback:

* `podInitialBackoffSeconds` / `podMaxBackoffSeconds` of 10**14 (an OverflowError traceback);
* a `--config` nested 1,000 levels deep (a RecursionError traceback);
* `leaderElection.leaseDuration: 99999999999999h` (accepted, then a traceback every 2 s and no
  leader), and the same through `--leader-elect-lease-duration`, also `1e400` (an overflow);
* NodeAffinity's `addedAffinity` with `In` and no values (accepted: every pod unschedulable).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controllers.cli.common import EXIT_ERROR, EXIT_USAGE
from controllers.kube.yamlfiles import MAX_DEPTH
from tests.controllers.cli.test_bad_invocations import (
    assert_one_error_line,
    placement,
)

KUBE_HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

# name -> (the file's text, the error after `<file>: `)
CONFIGS: dict[str, tuple[str, str]] = {
    "backoff-over-duration": (
        KUBE_HEAD + "podMaxBackoffSeconds: 100000000000000\n",
        "podMaxBackoffSeconds: Invalid value: 100000000000000: must be at most 9223372036 "
        "seconds, a Go Duration",
    ),
    "kube-args-range": (
        KUBE_HEAD
        + "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n"
        + "    args: {minCandidateNodesPercentage: 200}\n",
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 200: not "
        "in valid range [0, 100]",
    ),
    "nested-1000": (
        KUBE_HEAD + "profiles: " + "[" * 1000 + "]" * 1000 + "\n",
        f"the document nests deeper than {MAX_DEPTH} levels",
    ),
    "lease-beyond-go": (
        KUBE_HEAD + "leaderElection:\n  leaseDuration: 99999999999999h\n",
        'leaderElection.leaseDuration: invalid duration "99999999999999h" (e.g. "15s", "1m30s")',
    ),
    "lease-1e400h": (
        KUBE_HEAD + "leaderElection:\n  leaseDuration: 1e400h\n",
        'leaderElection.leaseDuration: invalid duration "1e400h" (e.g. "15s", "1m30s")',
    ),
    "added-affinity-in-without-values": (
        KUBE_HEAD + "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n"
        "      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n"
        "          nodeSelectorTerms:\n          - matchExpressions:\n"
        "            - {key: zone, operator: In}\n",
        "profiles[0].pluginConfig[0].args.addedAffinity."
        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
        "matchExpressions[0].values: Required value: must be specified when `operator` is "
        "'In' or 'NotIn'",
    ),
    "ours-backoff-over-duration": (
        "apiVersion: placement.ocm.io/v1alpha1\nkind: PodSchedulerConfiguration\n"
        "backoff:\n  initialSeconds: 100000000000000\n",
        "backoff.initialSeconds: must be at most 9223372036 (got 100000000000000)",
    ),
}
VERBS = {
    "simulate": ["scheduler", "simulate", "-f", "{empty}"],
    "run": ["scheduler", "run", "--embedded", "--http-addr", "127.0.0.1:0"],
}


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("name", CONFIGS)
def test_a_hostile_config_is_one_line_at_start_up(name: str, verb: str, tmp_path: Path) -> None:
    text, error = CONFIGS[name]
    config = tmp_path / f"{name}.yaml"
    config.write_text(text)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    argv = [a.replace("{empty}", str(empty)) for a in VERBS[verb]]
    outcome = placement([*argv, "--config", str(config)], tmp_path)
    assert_one_error_line(outcome, EXIT_ERROR, re.escape(f"{config}: {error}"))
    assert outcome.stdout == ""


@pytest.mark.parametrize(
    "argv",
    [
        *(["run", value] for value in ("99999999999999h", "1e400", "1e400h", "nan", "inf")),
        *(["scheduler", "run", value] for value in ("99999999999999h", "1e400")),
    ],
    ids=" ".join,
)
def test_a_lease_flag_beyond_a_duration_is_a_usage_error(argv: list[str], tmp_path: Path) -> None:
    *verb, value = argv
    flags = ["--embedded", "--leader-elect", "--leader-elect-lease-duration", value]
    outcome = placement([*verb, *flags], tmp_path)
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert outcome.code == EXIT_USAGE, outcome.stderr
    *usage, last = outcome.lines
    assert last == (
        f"placement {' '.join(verb)}: error: argument --leader-elect-lease-duration: "
        f'invalid duration "{value}" (e.g. "15s", "1m30s")'
    )
    assert all(line.startswith(("usage:", " ")) for line in usage), outcome.stderr


def test_a_lease_flag_beyond_the_leases_int32_is_one_line(tmp_path: Path) -> None:
    message = (
        "--leader-elect-lease-duration: must be at most 2147483647s, the Lease's "
        "leaseDurationSeconds is an int32 (got 3600000000s)"
    )
    flags = ["--embedded", "--leader-elect", "--leader-elect-lease-duration", "1000000h"]
    run = placement(["run", *flags], tmp_path)
    assert_one_error_line(run, EXIT_USAGE, re.escape(f"placement run: error: {message}"))
    scheduler = placement(["scheduler", "run", *flags], tmp_path)
    assert_one_error_line(scheduler, EXIT_ERROR, re.escape(f"scheduler run: {message}"))
