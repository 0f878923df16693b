"""The command's exit codes and the error a verb raises for bad input: a module of their own,
light enough for the entry point to import before anything else (`controllers.cli.main`)."""

from __future__ import annotations

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "CliError"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


class CliError(Exception):
    """Bad input: printed on stderr, exit code 1."""
