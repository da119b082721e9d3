"""localkube's audit log (`--audit-log-path` with `--audit-policy-file`), read as kube-apiserver's log backend
writes it: one `audit.k8s.io/v1` Event per request, at the level the first matching policy rule gives."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml

from conformance.support import PROTOBUF, envelope, f
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "rules": [
        {"level": "None", "verbs": ["get", "list", "watch"]},
        {"level": "RequestResponse", "resources": [{"group": "", "resources": ["pods"]}], "namespaces": ["audited"]},
        {"level": "Request", "resources": [{"group": "", "resources": ["pods/status"]}]},
        {"level": "Metadata"},
    ],
}  # fmt: skip
POD = {
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}


def events(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_each_request_is_logged_at_its_rules_level(
    localkube_factory: Callable[..., LocalKubeProcess], tmp_path: Path
) -> None:
    policy, log = tmp_path / "policy.yaml", tmp_path / "audit.log"
    policy.write_text(yaml.safe_dump(POLICY))
    server = localkube_factory(extra_args=["--audit-log-path", str(log), "--audit-policy-file", str(policy)])
    with server.client() as api:
        api.post("/api/v1/namespaces", json={"metadata": {"name": "audited"}}).raise_for_status()
        # Pods are refused until the namespace's default ServiceAccount exists (reads are not logged).
        eventually(
            lambda: api.get("/api/v1/namespaces/audited/serviceaccounts/default").status_code != 404,
            30,
            "the default ServiceAccount",
            every=0.05,
        )
        made = api.post("/api/v1/namespaces/audited/pods", json=POD, headers={"User-Agent": "drill/1"}).json()
        api.get("/api/v1/namespaces/audited/pods/p").raise_for_status()
        status = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
        api.patch(
            "/api/v1/namespaces/audited/pods/p/status",
            json=status,
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()
        missing = api.delete("/api/v1/namespaces/audited/configmaps/nothing-here")
        assert missing.status_code == 404
    namespace, create, patch, delete = events(log)
    for event in (namespace, create, patch, delete):
        assert event["kind"] == "Event" and event["apiVersion"] == "audit.k8s.io/v1"
        assert event["stage"] == "ResponseComplete" and event["user"]["username"] == "localkube-admin"
        assert event["requestReceivedTimestamp"] <= event["stageTimestamp"]
    assert namespace["level"] == "Metadata" and namespace["verb"] == "create"
    assert namespace["objectRef"] == {"resource": "namespaces", "apiVersion": "v1"}
    assert "requestObject" not in namespace and namespace["responseStatus"]["code"] == 201
    assert create["level"] == "RequestResponse" and create["userAgent"] == "drill/1"
    assert create["objectRef"] == {"resource": "pods", "namespace": "audited", "apiVersion": "v1"}
    assert create["requestObject"] == POD
    assert create["responseObject"]["metadata"]["uid"] == made["metadata"]["uid"]
    assert create["requestURI"] == "/api/v1/namespaces/audited/pods"
    assert patch["level"] == "Request" and patch["verb"] == "patch" and patch["requestObject"] == status
    assert patch["objectRef"]["subresource"] == "status" and "responseObject" not in patch
    assert delete["verb"] == "delete" and delete["responseStatus"]["code"] == 404
    assert delete["objectRef"]["name"] == "nothing-here" and delete["level"] == "Metadata"


def test_a_body_sent_as_protobuf_is_logged_as_the_object_it_encodes(
    localkube_factory: Callable[..., LocalKubeProcess], tmp_path: Path
) -> None:
    # client-go sends the built-in kinds' creates as protobuf; a replay of the log needs the object.
    policy, log = tmp_path / "policy.yaml", tmp_path / "audit.log"
    policy.write_text(yaml.safe_dump({**POLICY, "rules": [{"level": "Request", "verbs": ["create"]}]}))
    server = localkube_factory(extra_args=["--audit-log-path", str(log), "--audit-policy-file", str(policy)])
    meta = f(1, "probe") + f(2, "web-")  # ObjectMeta.name, generateName
    ports = f(1, f(1, "http") + f(2, "TCP") + f(3, 8080))  # ServicePort.name, protocol, port
    service = envelope("v1", "Service", f(1, meta) + f(2, ports))
    with server.client() as api:
        sent = api.post(
            "/api/v1/namespaces/default/services", content=service, headers={"Content-Type": PROTOBUF}
        )
        assert sent.status_code == 201, sent.text
        garbled = api.post(
            "/api/v1/namespaces/default/services", content=b"k8s\x00\xff", headers={"Content-Type": PROTOBUF}
        )
        assert garbled.status_code == 400
    create, refused = events(log)
    assert create["requestObject"]["apiVersion"] == "v1" and create["requestObject"]["kind"] == "Service"
    assert create["requestObject"]["metadata"] == {"name": "probe", "generateName": "web-"}
    assert create["requestObject"]["spec"]["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    assert refused["responseStatus"]["code"] == 400 and refused["requestObject"] is None


def test_a_policy_it_cannot_apply_stops_the_server_with_the_field_named(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({**POLICY, "rules": [{"level": "Everything"}]}))
    command = [
        sys.executable,
        "-m",
        "localkube",
        "serve",
        "--data-dir",
        str(tmp_path / "data"),
        "--port",
        "0",
    ]
    audited = [*command, "--audit-log-path", str(tmp_path / "audit.log"), "--audit-policy-file", str(policy)]
    refused = subprocess.run(audited, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines()[-1] == (
        f"localkube serve: --audit-policy-file {policy}: rules[0].level: must be one of "
        "None, Metadata, Request, RequestResponse"
    )
    alone = subprocess.run([*command, "--audit-log-path", str(tmp_path / "audit.log")], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert alone.returncode != 0 and "go together" in alone.stderr
