"""Kubernetes resource quantities (`500m`, `1Gi`, `1e3`, ...), parsed exactly.

The grammar is apimachinery's: a signed decimal number followed by a binary-SI suffix
(Ki..Ei), a decimal-SI suffix (n, u, m, "", k, M..E) or a decimal exponent (e3, E-2). This
module is equivalent to `kubernetes.utils.parse_quantity` (a property test checks it), but
keeps the scheduling core free of the Kubernetes client, whose import alone costs ~270 ms.

It is total: every input is a finite Decimal or an InputError. NaN, infinities and numbers
whose magnitude no int64 field could hold (`1e999999999`) are refused here, before any
arithmetic; `parse_resource_list` then bounds each value in its canonical unit by int64, as
the API server's Quantity does (its milli-value saturates there).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from central.errors import InputError, shown

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
INT64_MAX = 2**63 - 1
# Decimal exponents beyond these are out of any int64 range (or below a nano-unit, which
# rounds to zero); checked before scaling so `1e999999999` costs nothing.
_MAX_EXPONENT, _MIN_EXPONENT = 30, -30
_MAX_TEXT = 64  # no valid quantity is longer; bounds the regex and Decimal work
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<binary>[KMGTPE]i)|[eE](?P<exponent>[+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)


def parse_quantity(value: object) -> Decimal:
    """The exact value of a quantity given as a string, int or float; InputError if invalid."""
    if isinstance(value, bool):
        raise InputError("", f"invalid quantity {value!r}: expected a number or a string like '500m'")
    if isinstance(value, int):
        return _bounded(Decimal(value), value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InputError("", f"invalid quantity {value!r}: must be a finite number")
        return _bounded(Decimal(repr(value)), value)
    if not isinstance(value, str):
        raise InputError("", f"invalid quantity {shown(value)}: expected a number or a string like '500m'")
    match = _QUANTITY.match(value.strip()) if len(value) <= _MAX_TEXT else None
    if match is None:
        raise InputError("", f"invalid quantity {shown(value)}: expected e.g. '2', '500m', '1Gi', '1G' or '1e3'")
    try:
        number = Decimal(match["number"])
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        raise InputError("", f"invalid quantity {value!r}") from None
    if match["binary"]:
        return _bounded(number * _BINARY[match["binary"]], value)
    exponent = int(match["exponent"]) if match["exponent"] is not None else _DECIMAL[match["decimal"]]
    if number and number.adjusted() + exponent > _MAX_EXPONENT:
        raise InputError("", f"invalid quantity {value!r}: too large (at most {INT64_MAX} in the field's unit)")
    if not number or number.adjusted() + exponent < _MIN_EXPONENT:
        return Decimal(0)
    return _bounded(number.scaleb(exponent), value)


def _bounded(number: Decimal, value: object) -> Decimal:
    if abs(number) > INT64_MAX:
        raise InputError("", f"invalid quantity {shown(value)}: too large (at most {INT64_MAX} in the field's unit)")
    return number

