"""A pod plugin's args as its typed model (apis/pluginargs.py), validated once, with errors that
name the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from apis.pluginargs import ArgsModel, validate_args

__all__ = ["args_of"]

M = TypeVar("M", bound=ArgsModel)


def args_of(model: type[M], args: M | Mapping[str, Any] | None) -> M:
    """A plugin's args as its model: the model the registry's caller validated already, or a
    mapping (tests, direct use) validated here. ValueError `field: problem` naming the field."""
    return cast(M, validate_args(model, args))
