from typing import Any

from pydantic import Field

from kuberay.api.base import KubeModel


class _Inner(KubeModel):
    pod_ip: str | None = Field(default=None, alias="podIP")


class _Outer(KubeModel):
    replicas: int = 0
    head: _Inner | None = None


def test_round_trip_keeps_unknown_fields_and_writes_only_what_was_set() -> None:
    data: dict[str, Any] = {"head": {"podIP": "10.0.0.1", "future": {"x": 1}}, "newField": [1, 2]}
    model = _Outer.parse(data)
    assert model.head is not None and model.head.pod_ip == "10.0.0.1"
    assert model.replicas == 0
    assert model.dump() == data


def test_python_names_are_accepted_and_aliases_written() -> None:
    assert _Inner(pod_ip="1.2.3.4").dump() == {"podIP": "1.2.3.4"}
