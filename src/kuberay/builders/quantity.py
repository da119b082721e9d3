"""Kubernetes resource quantities (`resource.Quantity`), reduced to what the builders compute with.

A quantity is a signed decimal number with an optional suffix: a decimal SI suffix (`n u m k M G T P E`),
a binary one (`Ki Mi Gi Ti Pi Ei`) or a decimal exponent (`e3`, `E-2`). Values are parsed into exact
fractions so that arithmetic never loses a digit; the two conversions upstream uses are reproduced exactly:
`Quantity.Value()` (rounds up, away from zero: `500m` -> 1) and `AsApproximateFloat64()`.

Manifests may carry a quantity as a YAML number (`cpu: 1`, `cpu: 0.5`); numbers are read through their
decimal text, as the Kubernetes JSON decoder does.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)"
)


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def parse(value: str | int | float) -> Fraction:
    """The exact value of a quantity such as ``"500m"``, ``"4Gi"``, ``"1e3"`` or the number ``2``."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression of a quantity, got {value!r}")
    text = value.strip() if isinstance(value, str) else repr(value)
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise QuantityError(f"quantities must match the regular expression of a quantity, got {value!r}")
    number = Fraction(match["number"])
    suffix = match["suffix"]
    if suffix in _BINARY_SUFFIXES:
        return number * Fraction(2 ** _BINARY_SUFFIXES[suffix])
    exponent = int(suffix[1:]) if suffix[:1] in ("e", "E") and len(suffix) > 1 else _DECIMAL_SUFFIXES[suffix]
    return number * Fraction(10**exponent) if exponent >= 0 else number / Fraction(10**-exponent)


def ceil_value(value: str | int | float) -> int:
    """`Quantity.Value()`: the integer value, rounded up away from zero (``"1500m"`` -> 2)."""
    exact = parse(value)
    return math.ceil(exact) if exact >= 0 else -math.ceil(-exact)


def approximate_float(value: str | int | float) -> float:
    """`Quantity.AsApproximateFloat64()` (``"500m"`` -> 0.5)."""
    return float(parse(value))


def is_zero(value: str | int | float) -> bool:
    return parse(value) == 0
