import base64
from typing import Any

import pytest

from localkube.node.environment import ContainerConfigError, command_line, container_environment, expand


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)-$(B)", "1-$(B)"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$1"),
        ("a$b$", "a$b$"),
        ("$(A", "$(A"),
        ("$()", "$()"),
        ("x$(A)y$(A)", "x1y1"),
    ],
)
def test_expansion_follows_kubernetes_rules(text: str, expected: str) -> None:
    assert expand(text, {"A": "1"}) == expected


POD = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"tier": "head"}},
    "spec": {"nodeName": "node", "serviceAccountName": "sa", "containers": []},
    "status": {"podIP": "10.0.0.2", "podIPs": [{"ip": "10.0.0.2"}], "hostIP": "10.0.0.1"},
}
OBJECTS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("configmaps", "ns", "cm"): {"data": {"A": "from-cm", "bad key": "x", "B": "b"}},
    ("secrets", "ns", "s"): {"data": {"TOKEN": base64.b64encode(b"t0k").decode()}},
}


def _env(container: dict[str, Any]) -> dict[str, str]:
    return container_environment(
        POD, container, lambda *ref: OBJECTS.get(ref), {"cpu": "8", "memory": "16Gi"}
    )


def test_env_from_then_env_in_order_with_expansion_of_earlier_names_only() -> None:
    container = {
        "name": "c",
        "envFrom": [{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}, "prefix": "S_"}],
        "env": [
            {"name": "B", "value": "$(A)+$(C)"},
            {"name": "C", "value": "c"},
            {"name": "LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['tier']"}}},
            {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
            {"name": "HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            {"name": "K", "valueFrom": {"secretKeyRef": {"name": "s", "key": "TOKEN"}}},
            {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k", "optional": True}}},
        ],
    }
    assert _env(container) == {
        "A": "from-cm",
        "B": "from-cm+$(C)",
        "S_TOKEN": "t0k",
        "C": "c",
        "LABEL": "head",
        "SA": "sa",
        "HOST": "10.0.0.1",
        "K": "t0k",
    }


def test_resource_fields_round_up_and_default_to_node_allocatable() -> None:
    refs = {
        "CPU": {"resource": "limits.cpu"},
        "CPU_M": {"resource": "requests.cpu", "divisor": "1m"},
        "MEM": {"resource": "limits.memory", "divisor": "1Gi"},
    }
    container = {
        "name": "c",
        "resources": {"requests": {"cpu": "250m"}},
        "env": [{"name": n, "valueFrom": {"resourceFieldRef": r}} for n, r in refs.items()],
    }
    assert _env(container) == {"CPU": "8", "CPU_M": "250", "MEM": "16"}


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ({"configMapKeyRef": {"name": "gone", "key": "k"}}, 'configmap "gone" not found'),
        ({"configMapKeyRef": {"name": "cm", "key": "k"}}, "couldn't find key k in ConfigMap ns/cm"),
        ({"secretKeyRef": {"name": "s", "key": "k"}}, "couldn't find key k in Secret ns/s"),
    ],
)
def test_unresolvable_references_give_the_kubelets_message(ref: dict[str, Any], message: str) -> None:
    with pytest.raises(ContainerConfigError, match=message):
        _env({"name": "c", "env": [{"name": "X", "valueFrom": ref}]})


def test_command_line_is_command_then_args_expanded_and_requires_one_of_them() -> None:
    env = {"N": "3"}
    assert command_line({"command": ["sh", "-c"], "args": ["echo $(N) $$(N)"]}, env) == [
        "sh",
        "-c",
        "echo 3 $(N)",
    ]
    assert command_line({"args": ["python", "-V"]}, env) == ["python", "-V"]
    with pytest.raises(ContainerConfigError, match='container "c" has neither command nor args'):
        command_line({"name": "c", "image": "busybox"}, env)


def test_an_image_entrypoint_stands_in_for_a_missing_command() -> None:
    env = {"N": "1"}
    assert command_line({"args": ["--v=$(N)"]}, env, ("collector", "-x")) == ["collector", "-x", "--v=1"]
    assert command_line({"command": ["own"]}, env, ("collector",)) == [
        "own"
    ]  # a command wins, as over ENTRYPOINT
