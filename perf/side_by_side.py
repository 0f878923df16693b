"""What the two side-by-side drivers share (`perf.vs_kube`: the pod scheduler beside
kube-scheduler; `perf.vs_ocm`: the hub beside OCM's controller): their report options
(`--out`, `--render`, `--json`), the `--render` path that redoes a report from its saved JSON,
and the check that the control plane's binaries are there."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["add_report_options", "missing_binaries", "render"]


def add_report_options(parser: argparse.ArgumentParser, default_out: str) -> None:
    parser.add_argument("--out", type=Path, default=Path(default_out))
    parser.add_argument("--render", action="store_true", help="redo the report from --out")
    parser.add_argument(
        "--json", action="store_true", help="print a JSON summary last; exit 0 unless it broke"
    )


def render(out: Path, saved: str, write: Callable[[Path, dict[str, Any]], Path]) -> int:
    """`--render`: the report written again from `out/saved`."""
    print(f"report: {write(out, json.loads((out / saved).read_text()))}")
    return 0


def missing_binaries(program: str, *names: str) -> bool:
    """True (and why, on stderr) when `$KUBEBUILDER_ASSETS` lacks one of `names`."""
    from tests.e2e.controlplane import missing_assets

    missing = missing_assets(*names)
    if missing is not None:
        print(f"python -m {program}: {missing}", file=sys.stderr)
    return missing is not None
