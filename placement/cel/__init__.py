"""CEL cluster selectors (`celSelector.celExpressions`) as OCM evaluates them, and the device
selectors of dynamic resource allocation as kube evaluates them."""

from placement.cel.device_problems import selector_problems
from placement.cel.devices import (
    DeviceProgram,
    DeviceSelectorError,
    DeviceSelectors,
    DeviceView,
    compile_device_selector,
)
from placement.cel.engine import (
    PER_CALL_LIMIT,
    TOTAL_BUDGET,
    CelCompileError,
    CelSelector,
    ScoreLookup,
    Verdict,
    compile_selector,
)

__all__ = [
    "PER_CALL_LIMIT",
    "TOTAL_BUDGET",
    "CelCompileError",
    "CelSelector",
    "DeviceProgram",
    "DeviceSelectorError",
    "DeviceSelectors",
    "DeviceView",
    "ScoreLookup",
    "Verdict",
    "compile_device_selector",
    "compile_selector",
    "selector_problems",
]
