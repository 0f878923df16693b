"""The sample manifests the CLI tests run `placement` on, the placements they hold, and `run`,
which runs the command and returns its exit code, stdout and stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.cli.main import main
from controllers.cli.manifests import load_paths

__all__ = ["NOW", "PLACEMENTS", "ROOT", "SAMPLES", "broken_cel", "run", "sample_placements"]

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = str(ROOT / "config" / "samples" / "hub")
NOW = ["--now", "2026-11-22T12:00:00Z"]


def sample_placements() -> list[str]:
    loaded = load_paths([SAMPLES])
    return sorted(
        f"{o.obj.namespace}/{o.obj.name}" for o in loaded.objects if o.obj.kind == "Placement"
    )


PLACEMENTS = sample_placements()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


BROKEN_CEL = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: web-cel-broken, namespace: apps}
spec:
  predicates:
  - requiredClusterSelector:
      celSelector:
        celExpressions: ["managedCluster.metadata.name =="]
"""


def broken_cel(tmp_path: Path) -> str:
    """A file with one Placement whose CEL does not compile (PlacementMisconfigured)."""
    path = tmp_path / "broken-cel.yaml"
    path.write_text(BROKEN_CEL)
    return str(path)
