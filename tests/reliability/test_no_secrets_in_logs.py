"""No token, Secret value or Authorization header reaches a log line.

Representative flows run against a private localkube and the real operator, both logging at debug level
(the most they ever write): kubectl with the admin token, a ServiceAccount's token, a wrong token and an
impersonation; a Secret created and read back; a RayCluster and a RayJob with Ray token authentication,
whose token Secret the operator makes and then reads to call the Ray dashboard. Then every log either
process wrote is searched for each secret value (and its base64 form) and for bearer credentials."""

from __future__ import annotations

import base64
import re
import secrets
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

if shutil.which("kubectl") is None:
    pytest.skip("kubectl is not on the PATH", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "secrets-drill"
BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")


def _kubectl(server: LocalKubeProcess, *args: str, input: str | None = None, check: bool = True) -> str:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(server.kubeconfig), *args],
        input=input, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def _with_token_auth(path: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load(path.read_text())
    spec = manifest["spec"]["rayClusterSpec"] if manifest["kind"] == "RayJob" else manifest["spec"]
    spec["authOptions"] = {"mode": "token"}
    return manifest


def test_no_log_line_holds_a_token_or_a_secret_value(
    localkube_factory: Callable[..., LocalKubeProcess],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("LOCALKUBE_LOG_LEVEL", "debug")
    server = localkube_factory()
    server.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
    operator_log = tmp_path / "operator.log"
    operator = OperatorProcess(server.kubeconfig, operator_log, "--zap-log-level=debug").start()
    try:
        _kubectl(server, "create", "namespace", NAMESPACE)
        password = secrets.token_urlsafe(24)
        _kubectl(
            server,
            "create",
            "secret",
            "generic",
            "-n",
            NAMESPACE,
            "db",
            f"--from-literal=password={password}",
        )
        _kubectl(server, "get", "secret", "-n", NAMESPACE, "db", "-o", "yaml")
        _kubectl(server, "create", "serviceaccount", "-n", NAMESPACE, "reader")
        account_token = _kubectl(server, "create", "token", "-n", NAMESPACE, "reader").strip()
        _kubectl(
            server, "--token", account_token, "auth", "can-i", "get", "secrets", "-n", NAMESPACE, check=False
        )
        wrong_token = secrets.token_urlsafe(24)
        _kubectl(server, "--token", wrong_token, "get", "pods", check=False)
        _kubectl(server, "--as", "bob", "get", "secrets", "-n", NAMESPACE, check=False)

        for example in ("ray-cluster.minimal.yaml", "ray-job.http-mode.yaml"):
            manifest = _with_token_auth(REPO / "examples" / example)
            _kubectl(server, "apply", "-n", NAMESPACE, "-f", "-", input=yaml.safe_dump(manifest))
        ray_tokens = []
        with server.client(timeout=30) as api:
            for cluster in ("minimal", "http-mode"):
                # The RayJob's cluster is named after the job with a random suffix.
                def token_secret(prefix: str = cluster) -> dict[str, Any] | None:
                    items = api.get(f"/api/v1/namespaces/{NAMESPACE}/secrets").json()["items"]
                    return next((s for s in items if s["metadata"]["name"].startswith(prefix)
                                 and "auth_token" in (s.get("data") or {})), None)  # fmt: skip

                secret = eventually(token_secret, 120, f"the token Secret of {cluster}", every=0.5)
                ray_tokens.append(base64.b64decode(secret["data"]["auth_token"]).decode())
            # The operator has made the job's cluster and has its token: it now calls the dashboard with it.
            eventually(
                lambda: any(
                    (c.get("status") or {}).get("state") == "ready"
                    for c in api.get(f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayclusters").json()["items"]
                    if c["metadata"]["name"].startswith("http-mode")
                ),
                120,
                "the RayJob's cluster to be ready",
                every=0.5,
            )
        _kubectl(server, "get", "secrets", "-n", NAMESPACE, "-o", "json")
    finally:
        operator.stop()
        server.stop()

    admin_token = (server.data_dir / "admin-token").read_text().strip()
    values = {
        "the admin token": admin_token,
        "a ServiceAccount token": account_token,
        "a wrong token": wrong_token,
        "a Secret's value": password,
        **{f"Ray auth token {i}": token for i, token in enumerate(ray_tokens)},
    }
    logs = [operator_log, *server.data_dir.rglob("*.log")]
    assert operator_log.stat().st_size > 0 and (server.data_dir / "localkube.log").stat().st_size > 0
    for log in logs:
        text = log.read_text(errors="replace")
        for what, value in values.items():
            for form in (value, base64.b64encode(value.encode()).decode()):
                assert form not in text, f"{what} is in {log.name}"
        assert not BEARER.search(text), f"a bearer credential is in {log.name}: {BEARER.search(text)}"
