"""The raw API-server client (the RayJob dashboard's `--use-kubernetes-proxy` path) authenticates as the
kubeconfig says, through lightkube's loader: bearer tokens, token files and exec credential plugins."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuberay.runtime.client import api_server_http, load_config


def _kubeconfig_with_user(localkube: Any, user: dict[str, Any], target: Path) -> str:
    config = yaml.safe_load(Path(localkube.kubeconfig).read_text())
    config["users"][0]["user"] = user
    target.write_text(yaml.safe_dump(config))
    return str(target)


def _exec_plugin(token: str) -> dict[str, Any]:
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
        }
    }


@pytest.mark.parametrize("how", ["token", "tokenFile", "exec"])
async def test_the_kubeconfig_user_is_honoured(localkube: Any, tmp_path: Path, how: str) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(localkube.token)
    users = {
        "token": {"token": localkube.token},
        "tokenFile": {"tokenFile": str(token_file)},
        "exec": _exec_plugin(localkube.token),
    }
    kube = load_config(_kubeconfig_with_user(localkube, users[how], tmp_path / "kubeconfig"))
    async with api_server_http(kube, timeout=10) as http:
        response = await http.get(f"{kube.cluster.server}/api/v1/namespaces/default")
    assert response.status_code == 200, response.text


async def test_a_credential_the_server_refuses_is_refused(localkube: Any, tmp_path: Path) -> None:
    kube = load_config(_kubeconfig_with_user(localkube, _exec_plugin("not-a-token"), tmp_path / "kubeconfig"))
    async with api_server_http(kube, timeout=10) as http:
        response = await http.get(f"{kube.cluster.server}/api/v1/namespaces/default")
    assert response.status_code == 401
