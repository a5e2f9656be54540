"""A quantity as apimachinery's `Quantity.String()` prints it: the canonical form that `kubectl`
and vcctl show (`1000m` -> `1`, `1024Mi` -> `1Gi`, `0.5` -> `500m`, `1000` -> `1k`).

The suffix family is the one the value was written with (binary `Ki`.., decimal SI `m`/`k`..,
or an `e` exponent), except that a binary quantity under 1Ki in magnitude, or not a whole
number, is shown in decimal SI so nothing is rounded; values finer than a nano-unit are
rounded up to one, as ParseQuantity does.
"""

from __future__ import annotations

from decimal import ROUND_UP, Decimal

from central.resources.quantity import parse_quantity

_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO = Decimal("1e-9")


def canonical_quantity(value: object) -> str:
    """`value` (a quantity string or number) in its canonical form; InputError if invalid."""
    number = parse_quantity(value).quantize(_NANO, rounding=ROUND_UP)
    text = str(value).strip()
    if text.endswith("i"):
        if abs(number) >= 1024 and number == number.to_integral_value():
            return _binary(int(number))
        return _decimal(number, exponent_form=False)
    return _decimal(number, exponent_form="e" in text.lower() and not text.lower().endswith("e"))


def _decimal(number: Decimal, exponent_form: bool) -> str:
    if not number:
        return "0"
    sign, digits, exponent = number.normalize().as_tuple()
    assert isinstance(exponent, int)  # finite: parse_quantity refuses NaN and infinities
    mantissa = int("".join(map(str, digits))) * (-1 if sign else 1)
    shift = exponent % 3  # down to a multiple of 3, as Go's AsCanonicalBytes
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if exponent_form:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    suffix = _DECIMAL_SUFFIX.get(exponent)
    return f"{mantissa}{suffix}" if suffix is not None else f"{mantissa}e{exponent}"


def _binary(whole: int) -> str:
    power = 0
    while whole % 1024 == 0 and power < len(_BINARY_SUFFIX) - 1:
        whole, power = whole // 1024, power + 1
    return f"{whole}{_BINARY_SUFFIX[power]}"
