"""Kubernetes resource quantities (`500m`, `1Gi`, `1e3`, ...), parsed exactly.

The grammar is apimachinery's: a signed decimal number followed by a binary-SI suffix
(Ki..Ei), a decimal-SI suffix (n, u, m, "", k, M..E) or a decimal exponent (e3, E-2). This
module is equivalent to `kubernetes.utils.parse_quantity` (a property test checks it), but
keeps the scheduling core free of the Kubernetes client, whose import alone costs ~270 ms.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from central.errors import InputError

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<binary>[KMGTPE]i)|[eE](?P<exponent>[+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)


def parse_quantity(value: object) -> Decimal:
    """The exact value of a quantity given as a string, int or float; InputError if invalid."""
    if isinstance(value, bool):
        raise InputError("", f"invalid quantity {value!r}: expected a number or a string like '500m'")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise InputError("", f"invalid quantity {value!r}: expected a number or a string like '500m'")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise InputError("", f"invalid quantity {value!r}: expected e.g. '2', '500m', '1Gi', '1G' or '1e3'")
    try:
        number = Decimal(match["number"])
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        raise InputError("", f"invalid quantity {value!r}") from None
    if match["binary"]:
        return number * _BINARY[match["binary"]]
    if match["exponent"] is not None:
        return number.scaleb(int(match["exponent"]))
    return number.scaleb(_DECIMAL[match["decimal"]])
