"""Authentication built into the APIServer: with `-auth-token-file`, or `-auth-token-review` (the caller's
token checked with a TokenReview, and used for the caller's requests so RBAC decides), a request with no
or a wrong token gets 401 on HTTP and gRPC, and nothing is created."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from kuberay.runtime.client import Client
from kuberay.runtime.resources import CONFIG_MAP
from support.apiserver_process import ApiServerProcess

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def token_file_apiserver(apiserver_config: Path) -> Iterator[ApiServerProcess]:
    tokens = apiserver_config.parent / "tokens"
    tokens.write_text(f"other-token\n{TOKEN}\n")
    process = ApiServerProcess(apiserver_config, apiserver_config.parent / "token-file.log",
                               f"-auth-token-file={tokens}", "-cors-allow-origin=http://portal.example").start()  # fmt: skip
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def token_review_apiserver(apiserver_config: Path) -> Iterator[ApiServerProcess]:
    process = ApiServerProcess(apiserver_config, apiserver_config.parent / "token-review.log",
                               "-auth-token-review").start()  # fmt: skip
    try:
        yield process
    finally:
        process.stop()


def template(namespace: str) -> dict[str, Any]:
    return {"name": "t", "namespace": namespace, "cpu": 1, "memory": 1}


async def _templates(kube: Client, namespace: str) -> list[str]:
    return [c["metadata"]["name"] for c in (await kube.list(CONFIG_MAP, namespace)).items
            if c["metadata"]["name"] == "t"]  # fmt: skip


async def test_token_file(token_file_apiserver: ApiServerProcess, kube: Client, namespace: str) -> None:
    url = f"{token_file_apiserver.url}/apis/v1/namespaces/{namespace}/compute_templates"
    async with httpx.AsyncClient(timeout=30) as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "wrong"}):
            refused = await http.post(url, json=template(namespace), headers=headers)
            assert refused.status_code == 401 and refused.json()["code"] == 16
        assert await _templates(kube, namespace) == []
        assert (
            await http.get(f"{token_file_apiserver.url}/healthz")
        ).status_code == 200  # probes need no token
        accepted = await http.post(
            url, json=template(namespace), headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert accepted.status_code == 200, accepted.text
        bare = await http.get(f"{url}/t", headers={"Authorization": TOKEN})  # the security proxy's form
        assert bare.status_code == 200
        # CORS by flag (this instance's -cors-allow-origin): a browser's preflight needs no token.
        preflight = await http.options(url, headers={"Origin": "http://portal.example",
                                                     "Access-Control-Request-Method": "DELETE"})  # fmt: skip
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "http://portal.example"
        assert "DELETE" in preflight.headers["access-control-allow-methods"]
        v2 = await http.get(f"{token_file_apiserver.url}/apis/ray.io/v1/namespaces/{namespace}/rayclusters")
        assert v2.status_code == 401

    async with grpc.aio.insecure_channel(token_file_apiserver.grpc_target) as channel:
        call = channel.unary_unary("/proto.ComputeTemplateService/ListAllComputeTemplates",
                                   request_serializer=lambda _: b"", response_deserializer=bytes)  # fmt: skip
        with pytest.raises(grpc.aio.AioRpcError) as refused_rpc:
            await call(None)
        assert refused_rpc.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert isinstance(await call(None, metadata=(("authorization", f"Bearer {TOKEN}"),)), bytes)


async def test_token_review(token_review_apiserver: ApiServerProcess, localkube: Any, kube: Client,
                            namespace: str, tmp_path: Path) -> None:  # fmt: skip
    url = f"{token_review_apiserver.url}/apis/v1/namespaces/{namespace}/compute_templates"
    localkube.apply(
        [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "user", "namespace": namespace}}]
    )
    user_config = localkube.service_account_kubeconfig(namespace, "user", tmp_path / "user")
    import yaml

    user_token = yaml.safe_load(user_config.read_text())["users"][0]["user"]["token"]
    async with httpx.AsyncClient(timeout=30) as http:
        for headers in ({}, {"Authorization": "Bearer not-a-token"}):
            refused = await http.post(url, json=template(namespace), headers=headers)
            assert refused.status_code == 401, refused.text
        # A real user whose RBAC allows nothing: authenticated, then refused by the cluster.
        denied = await http.post(
            url, json=template(namespace), headers={"Authorization": f"Bearer {user_token}"}
        )
        assert denied.status_code == 403 and denied.json()["code"] == 7
        assert await _templates(kube, namespace) == []
        localkube.apply([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "templates", "namespace": namespace},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "list"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "templates", "namespace": namespace},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "templates"},
             "subjects": [{"kind": "ServiceAccount", "name": "user", "namespace": namespace}]},
        ])  # fmt: skip
        allowed = await http.post(
            url, json=template(namespace), headers={"Authorization": f"Bearer {user_token}"}
        )
        assert allowed.status_code == 200, allowed.text
        assert await _templates(kube, namespace) == ["t"]
