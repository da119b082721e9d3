import pytest

from kuberay.builders import goformat


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (0.5, "0.5"),
        (-0.0, "-0"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1e-100, "1e-100"),
        (1e20, "100000000000000000000"),
        (1.5e21, "1.5e+21"),
    ],
)
def test_json_float_is_go_shortest_form(value: float, expected: str) -> None:
    assert goformat.json_float(value) == expected


def test_json_sorts_keys_and_escapes_html() -> None:
    value = {"b": [1, "<a&b>", None, True], "a": {"z": 2.0}, "é": "\u2028"}
    assert goformat.json(value) == '{"a":{"z":2},"b":[1,"\\u003ca\\u0026b\\u003e",null,true],"é":"\\u2028"}'


def test_json_rejects_nan() -> None:
    with pytest.raises(goformat.GoEncodingError):
        goformat.json(float("nan"))


def test_yaml_to_json_keeps_go_scalars() -> None:
    text = "pip:\n  - requests==2.26.0\nenv_vars:\n  n: 1\nday: 2020-01-01\non: yes\n"
    assert (
        goformat.yaml_to_json(text)
        == '{"day":"2020-01-01","env_vars":{"n":1},"pip":["requests==2.26.0"],"true":true}'
    )
