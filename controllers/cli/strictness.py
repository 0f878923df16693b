"""How strictly a manifest's unknown fields are treated, as kubectl's `--validate` says: an
error (`strict`, the default), a warning, or nothing. Its own module so that the command line
builds its parsers without importing the manifest reader."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["VALIDATIONS", "Validation"]

Validation = Literal["strict", "warn", "ignore"]
VALIDATIONS: tuple[Validation, ...] = get_args(Validation)
