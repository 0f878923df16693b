"""Calling a plugin: an exception is a bug in that plugin, never the engine's end.

The cycles call every plugin method through `call`; an exception becomes `PluginError` with an
ERROR status naming the plugin, which the engine turns into a SchedulerError for the pod (back
to the queue with backoff) while it goes on with the others.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from placement.pods.framework.interface import PodStatus

__all__ = ["PluginError", "at_point", "call", "failed", "named"]


class PluginError(Exception):
    """A plugin raised: carries the status the pod gets."""

    def __init__(self, status: PodStatus) -> None:
        super().__init__(status.message)
        self.status = status


def call(plugin: str, method: Any, *args: Any) -> Any:
    """Call a plugin method; an exception becomes an ERROR status naming the plugin."""
    try:
        return method(*args)
    except Exception as exc:
        raise failed(plugin, exc) from exc


def failed(plugin: str, exc: Exception, point: str = "") -> PluginError:
    """What `call` raises for `exc`; the scheduling cycle's hot loops call their plugins in
    their own `try` (one Python call less per plugin and pod) and raise this the same way,
    naming their extension point (`at_point`)."""
    if point:
        return PluginError(at_point(point, plugin, cause=exc))
    return PluginError(
        PodStatus.error(plugin, f"running plugin {plugin!r}: {type(exc).__name__}: {exc}")
    )


_WRAPS = {
    "PreFilter": 'running PreFilter plugin "{}": ',
    "Filter": 'running "{}" filter plugin: ',
    "Score": 'running Score plugins: plugin "{}" failed with: ',
    "Reserve": 'running Reserve plugin "{}": ',
    "Permit": 'running Permit plugin "{}": ',
    "PreBind": 'running PreBind plugin "{}": ',
    "Bind": 'running Bind plugin "{}": ',
}
"""How kube-scheduler v1.36 words a plugin's error at each extension point (the pod's
SchedulerError message)."""


def at_point(
    point: str,
    plugin: str,
    status: PodStatus | None = None,
    cause: BaseException | None = None,
) -> PodStatus:
    """A plugin's ERROR at an extension point, worded as kube-scheduler wraps it there
    (`running Reserve plugin "VolumeBinding": <error>`). The error is the exception the
    plugin raised (`cause`: its type and text), else the message of its ERROR `status`."""
    if cause is not None:
        inner = f"{type(cause).__name__}: {cause}"
    else:
        inner = status.message if status is not None else ""
    return PodStatus.error(plugin, _WRAPS[point].format(plugin) + inner)


def named(status: PodStatus, plugin: str) -> PodStatus:
    """The status with its plugin named (the plugin that returned it, when it did not say)."""
    return status if status.plugin else dataclasses.replace(status, plugin=plugin)
