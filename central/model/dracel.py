"""CEL device selectors of DeviceClasses and ResourceClaim requests, compiled once and cached.

A selector sees `device.driver`, `device.attributes[domain].<name>` and
`device.capacity[domain].<name>`, as kube-scheduler's DRA allocator exposes them. Capacities are
integers in the quantity's base unit (bytes for memory), so `quantity("16Gi")` yields the same
form and both `>=` and `.compareTo(...)` work on them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import ROUND_CEILING
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from central.errors import InputError
from central.resources.quantity import parse_quantity

_ENV = celpy.Environment()


class SelectorError(ValueError):
    """A selector that does not compile, or that does not evaluate to a bool."""


def _quantity(text: Any) -> celtypes.IntType:
    try:
        value = parse_quantity(str(text))
    except InputError as error:
        raise CELEvalError(str(error)) from None
    return celtypes.IntType(int(value.to_integral_value(rounding=ROUND_CEILING)))


def _compare_to(left: Any, right: Any) -> celtypes.IntType:
    return celtypes.IntType((left > right) - (left < right))


_FUNCTIONS: dict[str, Callable[..., Any]] = {"quantity": _quantity, "compareTo": _compare_to}


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> Any:
    """The compiled program for one expression; SelectorError (with the parser's words) if it does not compile."""
    try:
        ast = _ENV.compile(expression)
    except CELParseError as error:
        raise SelectorError(f"CEL expression does not compile: {str(error).splitlines()[0]}") from None
    return _ENV.program(ast, functions=_FUNCTIONS)


def device_activation(driver: str, attributes: Mapping[str, Mapping[str, Any]],
                      capacity: Mapping[str, Mapping[str, int]]) -> Any:
    """The CEL form of one device (built once per device, reused by every selector)."""
    return json_to_cel({"device": {"driver": driver, "attributes": attributes, "capacity": capacity}})


def matches(expression: str, activation: Any) -> bool:
    """Whether the device passes the selector. A runtime error (a missing attribute) is a no,
    as in Kubernetes, where such a device simply does not match; a non-bool result is an error."""
    program = compile_selector(expression)
    try:
        result = program.evaluate(activation)
    except CELEvalError:
        return False
    if isinstance(result, CELEvalError):
        return False
    if not isinstance(result, celtypes.BoolType):
        raise SelectorError(f"CEL expression must evaluate to a bool, got {type(result).__name__}")
    return bool(result)
