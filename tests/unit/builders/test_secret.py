from pathlib import Path
from typing import Any

import pytest

from kuberay.api.raycluster import RayCluster
from kuberay.builders import secret
from support import golden

TESTDATA = Path(__file__).parent / "testdata" / "secret"


@pytest.mark.parametrize("case", golden.cases(TESTDATA), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    data = golden.load(case)
    golden.compare(
        golden.output_for(case), secret.build_auth_secret(RayCluster.parse(data["cluster"]), data["token"])
    )


def test_token_secret() -> None:
    data = golden.load(TESTDATA / "token.input.yaml")
    built = secret.build_auth_secret(RayCluster.parse(data["cluster"]), "tok")
    assert built["metadata"]["name"] == "raycluster-auth"
    assert built["metadata"]["labels"] == {"ray.io/cluster": "raycluster-auth"}
    assert built["stringData"] == {"auth_token": "tok"}
    assert built["metadata"]["ownerReferences"][0]["controller"] is True


def cluster_with(auth: dict[str, Any] | None, name: str = "c") -> RayCluster:
    spec = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray"}]}}}}
    if auth is not None:
        spec["authOptions"] = auth
    return RayCluster.parse({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})


@pytest.mark.parametrize(
    ("auth", "needed"),
    [
        (None, False),
        ({"mode": "disabled"}, False),
        ({"mode": "token"}, True),
        ({}, True),  # upstream: an empty mode still gets a Secret
        ({"mode": "token", "secretName": "mine"}, False),
        ({"mode": "token", "enableK8sTokenAuth": True}, False),
    ],
)
def test_needs_auth_secret(auth: dict[str, Any] | None, needed: bool) -> None:
    assert secret.needs_auth_secret(cluster_with(auth)) is needed


def test_secret_name_is_check_name() -> None:
    built = secret.build_auth_secret(cluster_with({"mode": "token"}, name="9" + "x" * 52), "t")
    assert built["metadata"]["name"] == "x" * 50
    built = secret.build_auth_secret(cluster_with({"mode": "token"}, name="7abc"), "t")
    assert built["metadata"]["name"] == "rabc"
