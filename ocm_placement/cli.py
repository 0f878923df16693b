"""The `placement` console script's entry point, wherever the package is installed from: in the
wheel the command line is `ocm_placement.controllers.cli.main`, in a source checkout (an
editable install) `controllers.cli.main`; the wheel's build rewrites the import below.

`main` imports the command line when called, and the package `ocm_placement` imports nothing
eagerly, so the command starts as fast as `controllers.cli.main:main` itself would.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from controllers.cli.main import main as placement

    return placement(argv)
