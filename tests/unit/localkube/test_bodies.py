import pytest

from localkube.server import bodies

JSON = "application/json"


@pytest.mark.parametrize(
    ("body", "repeated"),
    [
        (b'{"metadata": {"name": "a"}, "data": {"k": "v", "x": ""}}', []),
        (b'{"metadata":{"name":"a","name":"a"},"data":{"k":"1","k":"2"}}', ["metadata.name", "data.k"]),
        (b'{"a": [{"b": 1, "c": {}, "b": 2}]}', ["a[0].b"]),
        (b'{"a" : 1, "a"\n:\t2}', ["a"]),  # blanks around the colons
        (b'{"a": "say \\"hi\\"", "a": "x"}', ["a"]),  # escaped quotes: looked for the long way
        (b'{"a\\u0022": 1, "a\\u0022": 2}', ['a"']),  # a quote written as an escape, repeated
        (b'{"q": "\\u0022\\u0022", "b": 1}', []),
        (b'{"a": {"x": {"y": "z"}}, "a": 1}', ["a"]),  # the value repeated over holds strings too
        (b"{}", []),
    ],
)
def test_each_repeated_key_is_found_by_its_path(body: bytes, repeated: list[str]) -> None:
    assert bodies.duplicate_fields(body, JSON, bodies.decode(body, JSON)) == repeated


def test_yaml_and_protobuf_bodies_are_not_looked_at() -> None:
    body = b"a: 1\na: 2\n"
    assert bodies.duplicate_fields(body, "application/yaml", {"a": 2}) == []
