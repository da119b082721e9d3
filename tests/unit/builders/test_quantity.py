import pytest

from kuberay.builders import quantity


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


def test_is_zero() -> None:
    assert quantity.is_zero("0m") and quantity.is_zero(0) and not quantity.is_zero("1n")
