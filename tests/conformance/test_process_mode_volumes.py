"""Volumes and in-pod API access in process mode, with the real kubectl and the official `kubernetes` client:
ConfigMap, Secret, projected (service-account token, ConfigMap, downward API), downwardAPI and memory
emptyDir volumes are read by the pod at their mount paths; a ConfigMap update reaches the mounted file; a
pod using `load_incluster_config()` is allowed what its ServiceAccount's RBAC allows and gets 403 for the
rest; two pods mounting the same path see their own contents; and after the pods (and localkube) go, no
mount, network namespace, process or listening port of theirs is left.

Pods print what they find as JSON lines; the tests read them with `kubectl logs`. Mount namespaces need
root or unprivileged user namespaces; without root the checks of network namespaces do not apply.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from conformance.support import run_kubectl
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

ROOT = os.geteuid() == 0
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

# A container that prints, every half second, each file under the given paths: content and mode.
_LISTER = r"""
import json, os, sys, time
while True:
    found = {}
    for root in sys.argv[1:]:
        for where, _, names in os.walk(root, followlinks=True):
            for name in names:
                path = os.path.join(where, name)
                if "/.." in path:
                    continue
                with open(path) as f:
                    found[path] = {"content": f.read(), "mode": oct(os.stat(path).st_mode & 0o777)}
    print(json.dumps(found), flush=True)
    time.sleep(0.5)
"""


def _lister(*paths: str, **container: Any) -> dict[str, Any]:
    return {"name": "c", "image": "python", "command": ["python", "-u", "-c", _LISTER, *paths], **container}


def _pod(name: str, container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name, "tier": "test"}},
        "spec": {"terminationGracePeriodSeconds": 2, "containers": [container], **spec},
    }


def _config_map(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def _apply(server: LocalKubeProcess, *objects: dict[str, Any]) -> None:
    run_kubectl(server, "apply", "-f", "-", input=yaml.safe_dump_all(objects))


def _last_listing(server: LocalKubeProcess, pod: str) -> dict[str, Any] | None:
    lines = run_kubectl(server, "logs", pod, "--tail=1").stdout.splitlines()
    return json.loads(lines[-1]) if lines else None


def _until_listing(
    server: LocalKubeProcess, pod: str, check: Callable[[dict[str, Any]], bool], timeout: float = 60
) -> dict[str, Any]:
    # A one-item list, so that an empty listing that satisfies the check is a result too.
    found: list[dict[str, Any]] = eventually(
        lambda: [listing] if (listing := _last_listing(server, pod)) is not None and check(listing) else None,
        timeout,
        f"pod {pod} listing what was expected",
        every=0.5,
    )
    return found[0]


class Traces:
    """What a pod leaves on the host while it runs: its processes, network namespace and mounts."""

    def __init__(self, server: LocalKubeProcess, pod: str) -> None:
        status = json.loads(run_kubectl(server, "get", "pod", pod, "-o", "json").stdout)["status"]
        self.pid = int(status["containerStatuses"][0]["containerID"].removeprefix("process://"))
        self.uid = json.loads(run_kubectl(server, "get", "pod", pod, "-o", "json").stdout)["metadata"]["uid"]
        self.pod_dir = str(server.data_dir / "kubelet" / "pods" / self.uid)
        identified = subprocess.run(
            ["ip", "netns", "identify", str(self.pid)], capture_output=True, text=True
        )
        self.netns = identified.stdout.strip() if ROOT else ""

    def host_mounts(self) -> list[str]:
        return [
            line for line in Path("/proc/self/mountinfo").read_text().splitlines() if self.pod_dir in line
        ]

    def assert_gone(self) -> None:
        assert not Path(f"/proc/{self.pid}").exists(), "the container's process is still there"
        assert self.host_mounts() == [], "a mount of the pod is left on the host"
        if self.netns:
            listing = subprocess.run(
                ["ip", "netns", "list"], capture_output=True, text=True, check=True
            ).stdout
            assert self.netns not in listing.split(), f"network namespace {self.netns} is left"


def _delete(server: LocalKubeProcess, *pods: str) -> None:
    run_kubectl(server, "delete", "pod", *pods, "--timeout=60s")


@pytest.fixture
def server(localkube_factory: Callable[..., LocalKubeProcess]) -> Iterator[LocalKubeProcess]:
    """A private process-mode localkube, stopped (not killed) afterwards so it removes its bridge."""
    started = localkube_factory(extra_args=["--node-mode", "process"])
    yield started
    started.stop(timeout=30)


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return claims


def test_config_map_secret_token_and_downward_api_files_are_read_and_follow_updates(
    server: LocalKubeProcess,
) -> None:
    token_path = "/var/run/vault/token"
    volumes = [
        {"name": "config", "configMap": {"name": "app-config"}},
        {"name": "secret", "secret": {"secretName": "app-secret", "defaultMode": 0o400,
                                      "items": [{"key": "password", "path": "db/password"}]}},
        {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                                                   {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "vault", "projected": {"sources": [
            {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 3600, "path": "token"}},
            {"configMap": {"name": "app-config", "items": [{"key": "greeting", "path": "greeting.txt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
        ]}},
        {"name": "scratch", "emptyDir": {"medium": "Memory"}},
    ]  # fmt: skip
    mounts = [
        {"name": "config", "mountPath": "/etc/app"},
        {"name": "secret", "mountPath": "/etc/secret"},
        {"name": "info", "mountPath": "/etc/podinfo"},
        {"name": "vault", "mountPath": "/var/run/vault"},
        {"name": "scratch", "mountPath": "/home/ray/scratch"},
    ]
    paths = ["/etc/app", "/etc/secret", "/etc/podinfo", "/var/run/vault", SA_DIR]
    _apply(
        server,
        _config_map("app-config", greeting="hello"),
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "app-secret"}, "stringData": {"password": "s3cret"}},
        _pod("files", _lister(*paths, volumeMounts=mounts), volumes=volumes),
    )  # fmt: skip
    run_kubectl(server, "wait", "--for=condition=Ready", "pod/files", "--timeout=60s")
    listing = _until_listing(server, "files", lambda found: token_path in found)

    assert listing["/etc/app/greeting"]["content"] == "hello"
    assert listing["/etc/secret/db/password"] == {"content": "s3cret", "mode": "0o400"}
    assert listing["/etc/podinfo/name"]["content"] == "files"
    assert listing["/etc/podinfo/labels"]["content"] == 'app="files"\ntier="test"'
    assert listing["/var/run/vault/greeting.txt"]["content"] == "hello"
    assert listing["/var/run/vault/namespace"]["content"] == "default"
    claims = _claims(listing[token_path]["content"])
    assert claims["aud"] == ["vault"]
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["sub"] == "system:serviceaccount:default:default"
    assert listing[f"{SA_DIR}/namespace"]["content"] == "default"
    assert listing[f"{SA_DIR}/ca.crt"]["content"] == server.ca_cert.read_text()
    # localkube's ServiceAccount controller made `default`, whose token every pod that names none gets.
    assert _claims(listing[f"{SA_DIR}/token"]["content"])["sub"] == "system:serviceaccount:default:default"
    assert not Path("/etc/app").exists() and not Path("/etc/podinfo").exists()  # the host's tree is untouched

    traces = Traces(server, "files")
    if ROOT:
        assert any(" tmpfs " in line for line in traces.host_mounts())  # the memory emptyDir, while it runs

    _apply(server, _config_map("app-config", greeting="updated"))
    listing = _until_listing(
        server, "files", lambda found: found["/etc/app/greeting"]["content"] == "updated"
    )
    assert listing["/var/run/vault/greeting.txt"]["content"] == "updated"

    _delete(server, "files")
    traces.assert_gone()


def _official_client(server: LocalKubeProcess) -> kubernetes.client.ApiClient:
    configuration = kubernetes.client.Configuration()
    configuration.host = server.url
    configuration.ssl_ca_cert = str(server.ca_cert)
    configuration.api_key = {"authorization": f"Bearer {server.token}"}
    return kubernetes.client.ApiClient(configuration)


# The in-cluster client: what its ServiceAccount may list, and the status of what it may not.
_IN_CLUSTER = """
import json
import kubernetes
from kubernetes.client.rest import ApiException
kubernetes.config.load_incluster_config()
api = kubernetes.client.CoreV1Api()
result = {"configmaps": sorted(c.metadata.name for c in api.list_namespaced_config_map("default").items)}
try:
    api.list_namespaced_secret("default")
    result["secrets"] = "allowed"
except ApiException as refused:
    result["secrets"] = refused.status
print(json.dumps(result), flush=True)
"""


def test_a_pod_with_in_cluster_config_gets_what_its_rbac_allows_and_403_for_the_rest(
    server: LocalKubeProcess, request: pytest.FixtureRequest
) -> None:
    client = _official_client(server)
    request.addfinalizer(client.close)  # its pooled TLS sockets, else closed by the collector in a later test
    core, rbac = kubernetes.client.CoreV1Api(client), kubernetes.client.RbacAuthorizationV1Api(client)
    core.create_namespaced_service_account("default", {"metadata": {"name": "reader"}})
    core.create_namespaced_config_map("default", _config_map("visible", key="value"))
    rbac.create_namespaced_role(
        "default",
        {"metadata": {"name": "read-configmaps"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]},
    )  # fmt: skip
    rbac.create_namespaced_role_binding(
        "default",
        {"metadata": {"name": "reader"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-configmaps"},
         "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "default"}]},
    )  # fmt: skip
    client_pod = _pod(
        "in-cluster",
        {"name": "c", "image": "python", "command": ["python", "-c", _IN_CLUSTER]},
        serviceAccountName="reader",
        restartPolicy="Never",
    )
    opted_out = _pod(
        "no-token", _lister(SA_DIR), serviceAccountName="reader", automountServiceAccountToken=False
    )
    _apply(server, client_pod, opted_out)
    run_kubectl(server, "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/in-cluster", "--timeout=60s")
    result = json.loads(run_kubectl(server, "logs", "in-cluster").stdout.splitlines()[-1])
    assert "visible" in result["configmaps"]
    assert result["secrets"] == 403

    run_kubectl(server, "wait", "--for=condition=Ready", "pod/no-token", "--timeout=60s")
    listing = _until_listing(server, "no-token", lambda found: True)
    assert listing == {}  # nothing is mounted at the service-account directory
    traces = Traces(server, "no-token")
    _delete(server, "in-cluster", "no-token")
    traces.assert_gone()

    endpoints = core.read_namespaced_endpoints("kubernetes", "default")
    address = endpoints.subsets[0].addresses[0].ip
    port = endpoints.subsets[0].ports[0].port
    server.stop()
    listening = subprocess.run(["ss", "-Htln"], capture_output=True, text=True, check=True).stdout
    assert f"{address}:{port} " not in listening  # the pods' way to the API server is closed with localkube


def test_two_pods_mounting_the_same_path_see_their_own_contents(server: LocalKubeProcess) -> None:
    home_existed = Path("/home/ray").exists()
    pods = []
    for name in ("left", "right"):
        volumes = [{"name": "app", "configMap": {"name": f"{name}-app"}}]
        container = _lister("/home/ray/app", volumeMounts=[{"name": "app", "mountPath": "/home/ray/app"}])
        pods += [_config_map(f"{name}-app", owner=name), _pod(name, container, volumes=volumes)]
    _apply(server, *pods)
    traces = []
    for name in ("left", "right"):
        run_kubectl(server, "wait", "--for=condition=Ready", f"pod/{name}", "--timeout=60s")
        listing = _until_listing(server, name, lambda found: "/home/ray/app/owner" in found)
        assert listing["/home/ray/app/owner"]["content"] == name
        traces.append(Traces(server, name))
    assert Path("/home/ray").exists() == home_existed  # made inside the pods' namespaces only
    _delete(server, "left", "right")
    for trace in traces:
        trace.assert_gone()
