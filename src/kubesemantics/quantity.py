"""Kubernetes resource quantities (`resource.Quantity`): parsing, comparing and canonical text.

A quantity is a signed decimal number with an optional suffix: a decimal SI suffix (`n u m k M G T P E`),
a binary one (`Ki Mi Gi Ti Pi Ei`) or a decimal exponent (`e3`, `E-2`). Values are parsed into exact
fractions, so arithmetic and comparison never lose a digit; the conversions upstream uses are reproduced
exactly: `Quantity.Value()` (rounds up, away from zero: `500m` -> 1), `AsApproximateFloat64()`,
`String()` (`canonical`) and `Add` over resource lists (`add`, whose sums keep their first term's format).

Manifests may carry a quantity as a YAML number (`cpu: 1`, `cpu: 0.5`); numbers are read through their
decimal text, as the Kubernetes JSON decoder does.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from kubesemantics.errors import SemanticsError

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)"
)


OPENAPI_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
"""The `pattern` apimachinery publishes for a quantity in OpenAPI schemas (CRDs carry it as is). It is looser
than `parse`: it lets an exponent have a fraction."""


class QuantityError(SemanticsError):
    """The text is not a Kubernetes quantity."""


# Typed, so that `True` is not answered from the entry of `1`. A cluster's pods and nodes repeat a handful of
# quantities, and localkube's scheduler reads a pod's requests and its node's allocatable for each placement.
@functools.lru_cache(maxsize=1024, typed=True)
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


def is_binary(value: str | int | float) -> bool:
    """Whether a quantity is written with a binary suffix (its sums print in binary form)."""
    return str(value).endswith("i")


def canonical(value: Fraction, binary: bool) -> str:
    """Go's canonical text of a quantity (`resource.Quantity.String()`), in binary form (`Ki`, `Mi`, ...)
    or decimal form (`k`, `M`, `m`, ...)."""
    if value == 0:
        return "0"
    if binary and value.denominator == 1 and abs(value) >= 1024:
        number, suffix = int(value), ""
        for candidate in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
            if number % 1024:
                break
            number, suffix = number // 1024, candidate
        return f"{number}{suffix}"
    for exponent, suffix in ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, "")):
        scaled = value / Fraction(10**exponent)
        if scaled.denominator == 1 and abs(value) >= 10**exponent:
            return f"{scaled.numerator}{suffix}"
    for exponent, suffix in ((3, "m"), (6, "u"), (9, "n")):
        scaled = value * 10**exponent
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    # Go rounds finer values up to the nanounit.
    scaled = value * 10**9
    return f"{-(-scaled.numerator // scaled.denominator)}n"


@dataclass
class Amount:
    """A quantity being summed: its exact value and the format (binary or decimal) of its first term, which
    Go's `Quantity.Add` keeps as its receiver's."""

    value: Fraction
    binary: bool

    @classmethod
    def of(cls, value: str | int | float) -> Amount:
        return cls(parse(value), is_binary(value))

    def text(self) -> str:
        return canonical(self.value, self.binary)


def add(
    total: dict[str, Amount], addends: Mapping[str, Amount | str | int | float], factor: int = 1
) -> dict[str, Amount]:
    """Go's `Quantity.Add` over resource lists: each addend, times `factor`, added into `total`'s entry of its
    name (a new entry takes the addend's format). Returns `total`."""
    for name, addend in addends.items():
        amount = addend if isinstance(addend, Amount) else Amount.of(addend)
        if name in total:
            total[name].value += amount.value * factor
        else:
            total[name] = Amount(amount.value * factor, amount.binary)
    return total
