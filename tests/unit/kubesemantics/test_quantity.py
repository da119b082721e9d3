from fractions import Fraction

import pytest

from kubesemantics import quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", 1),
        ("1500m", 2),
        ("2", 2),
        (2, 2),
        ("1Gi", 1073741824),
        ("4Gi", 4294967296),
        ("1e3", 1000),
        ("1E-3", 1),
        ("1.5G", 1500000000),
        ("100Mi", 104857600),
        ("1k", 1000),
        ("0", 0),
        ("-1500m", -2),
        ("1E", 10**18),
    ],
)
def test_value_rounds_up_away_from_zero(text: str | int, value: int) -> None:
    assert quantity.ceil_value(text) == value


@pytest.mark.parametrize(
    ("text", "value"), [("500m", 0.5), ("4", 4.0), (0.5, 0.5), ("250u", 0.00025), ("1Ki", 1024.0)]
)
def test_approximate_float(text: str | float, value: float) -> None:
    assert quantity.approximate_float(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1Gb", "1.2.3", "--1", "1 Gi", "Gi", True])
def test_rejects_what_is_not_a_quantity(text: str) -> None:
    with pytest.raises(quantity.QuantityError):
        quantity.parse(text)


def test_a_boolean_is_refused_after_its_number_was_parsed() -> None:
    assert quantity.parse(1) == quantity.parse(1.0) == 1
    with pytest.raises(quantity.QuantityError):
        quantity.parse(True)


def test_is_zero() -> None:
    assert quantity.is_zero("0m") and quantity.is_zero(0) and not quantity.is_zero("1n")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2Gi", Fraction(2**31)),
        ("1k", Fraction(1000)),
        (3, Fraction(3)),
        ("1e3", Fraction(1000)),
        (" 250u ", Fraction(1, 4000)),
    ],
)
def test_parse_is_exact(text: str | int, value: Fraction) -> None:
    assert quantity.parse(text) == value


@pytest.mark.parametrize(
    ("value", "binary", "text"),
    [
        (Fraction(0), False, "0"),
        (Fraction(3, 2), False, "1500m"),
        (Fraction(2000), False, "2k"),
        (Fraction(4), False, "4"),
        (Fraction(6 * 2**30), True, "6Gi"),
        (Fraction(1536 * 2**20), True, "1536Mi"),
        (Fraction(512), True, "512"),  # below 1Ki binary quantities print as decimal
        (Fraction(1, 3 * 10**9), False, "1n"),  # finer than a nanounit rounds up
    ],
)
def test_canonical(value: Fraction, binary: bool, text: str) -> None:
    assert quantity.canonical(value, binary) == text


def test_binary_form_follows_the_suffix() -> None:
    assert quantity.is_binary("4Gi") and not quantity.is_binary("4G") and not quantity.is_binary(4)


def test_add_keeps_the_first_terms_format_and_scales_by_the_factor() -> None:
    total = quantity.add({}, {"memory": "1Gi", "cpu": "500m"})
    quantity.add(total, {"memory": "512Mi", "cpu": 1, "nvidia.com/gpu": "1"}, 2)
    assert {name: amount.text() for name, amount in total.items()} == {
        "memory": "2Gi",
        "cpu": "2500m",
        "nvidia.com/gpu": "2",
    }
    # A decimal first term keeps the sum decimal, as Go's receiver does.
    assert quantity.add({}, {"memory": "1G", "other": "1Gi"}, 1)["memory"].text() == "1G"
    assert (
        quantity.add({"memory": quantity.Amount.of("1G")}, {"memory": "1Gi"})["memory"].text() == "2073741824"
    )
