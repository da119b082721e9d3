"""The scheduler binds through `pods/binding` and its admission, as kube-scheduler does: a mutating webhook on
`pods/binding` sees each binding (kind Binding, resource pods, subresource binding, the scheduler's user) and
the annotations it adds land on the pod; a validating webhook that refuses bindings keeps the pod unbound
(PodScheduled=False, the refusal in the message) until it is gone. A client's own POST of a Binding is admitted
the same way. Against a real HTTPS webhook server, on both backends.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.webhookserver import WebhookServer, make_certificates
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


@pytest.fixture
def cluster(kube_backend: LocalKubeProcess, tmp_path: Path) -> Iterator[tuple[httpx.Client, str, WebhookServer, bytes]]:  # fmt: skip
    ca = make_certificates(tmp_path / "certs", ["hooks.binding-test.svc"])
    server = WebhookServer(tmp_path / "certs").start()
    namespace = f"binding-{int(time.time() * 1000) % 10**8}"
    with kube_backend.client(timeout=30) as api:
        api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
        try:
            yield api, namespace, server, ca
        finally:
            for collection in (MUTATING, VALIDATING):
                api.delete(f"{collection}/{namespace}")
            api.delete(f"/api/v1/namespaces/{namespace}")
            server.stop()


def configure(api: httpx.Client, collection: str, namespace: str, ca: bytes, url: str) -> None:
    kind = "MutatingWebhookConfiguration" if collection == MUTATING else "ValidatingWebhookConfiguration"
    webhook = {
        "name": "binding.example.com",
        "clientConfig": {"url": url, "caBundle": base64.b64encode(ca).decode()},
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods/binding"],
            }
        ],  # fmt: skip
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": namespace}, "webhooks": [webhook]}  # fmt: skip
    api.post(collection, json=body).raise_for_status()


def pod(name: str, **spec: Any) -> dict[str, Any]:
    containers = [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": containers, **spec}}  # fmt: skip


def read(api: httpx.Client, namespace: str, name: str) -> dict[str, Any]:
    reply = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    reply.raise_for_status()
    found: dict[str, Any] = reply.json()
    return found


def scheduled(found: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in found["status"].get("conditions") or [] if c["type"] == "PodScheduled"), {})


def test_a_mutating_webhook_sees_the_schedulers_binding_and_its_annotations_reach_the_pod(cluster: tuple[httpx.Client, str, WebhookServer, bytes]) -> None:  # fmt: skip
    api, namespace, server, ca = cluster
    configure(api, MUTATING, namespace, ca, f"https://127.0.0.1:{server.port}/annotate")
    api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("p")).raise_for_status()
    bound = eventually(lambda: read(api, namespace, "p") if read(api, namespace, "p")["spec"].get("nodeName") else None, 60, "p bound")  # fmt: skip
    assert bound["metadata"]["annotations"]["annotated"] == "yes"
    assert scheduled(bound)["status"] == "True"
    request = server.received["/annotate"][0]["request"]
    assert request["operation"] == "CREATE"
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Binding"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["subResource"] == "binding"
    assert (request["namespace"], request["name"]) == (namespace, "p")
    assert request["userInfo"]["username"] == "system:kube-scheduler"
    assert request["object"]["kind"] == "Binding"
    assert request["object"]["target"]["name"] == bound["spec"]["nodeName"]


def test_a_clients_binding_is_admitted_and_its_annotations_merged(cluster: tuple[httpx.Client, str, WebhookServer, bytes]) -> None:  # fmt: skip
    api, namespace, server, ca = cluster
    # Nobody schedules this pod; the client binds it, with an annotation of its own.
    api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("mine", schedulerName="nobody")).raise_for_status()  # fmt: skip
    node = api.get("/api/v1/nodes").json()["items"][0]["metadata"]["name"]
    configure(api, MUTATING, namespace, ca, f"https://127.0.0.1:{server.port}/annotate")
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "mine", "annotations": {"own": "kept"}}, "target": {"name": node}}  # fmt: skip
    path = f"/api/v1/namespaces/{namespace}/pods/mine/binding"

    def webhook_called() -> bool:
        # kube-apiserver takes up a new configuration a moment later: dry runs until the webhook sees one.
        api.post(path, json=binding, params={"dryRun": "All"}).raise_for_status()
        return bool(server.received.get("/annotate"))

    eventually(webhook_called, 30, "the webhook called on a dry-run binding", every=0.2)
    assert server.received["/annotate"][-1]["request"]["dryRun"] is True
    assert not read(api, namespace, "mine")["spec"].get("nodeName")  # a dry run binds nothing
    reply = api.post(path, json=binding)
    assert reply.status_code == 201, reply.text
    found = read(api, namespace, "mine")
    assert found["spec"]["nodeName"] == node
    # The webhook's patch replaced the Binding's annotations; what it left is merged into the pod's.
    assert found["metadata"]["annotations"]["annotated"] == "yes"
    assert server.received["/annotate"][-1]["request"]["dryRun"] is False


def test_a_refused_binding_leaves_the_pod_unbound_until_admission_allows_it(cluster: tuple[httpx.Client, str, WebhookServer, bytes]) -> None:  # fmt: skip
    api, namespace, server, ca = cluster
    configure(api, VALIDATING, namespace, ca, f"https://127.0.0.1:{server.port}/deny")
    api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("p")).raise_for_status()

    def refused() -> dict[str, Any] | None:
        condition = scheduled(read(api, namespace, "p"))
        return condition if condition.get("status") == "False" else None

    condition = eventually(refused, 60, "p's binding refused")
    assert 'admission webhook "binding.example.com" denied the request: no thanks' in condition["message"]
    assert not read(api, namespace, "p")["spec"].get("nodeName")
    api.delete(f"{VALIDATING}/{namespace}").raise_for_status()
    eventually(lambda: read(api, namespace, "p")["spec"].get("nodeName"), 90, "p bound once admission allows it")  # fmt: skip


def test_a_binding_must_name_its_pod_and_match_its_uid(cluster: tuple[httpx.Client, str, WebhookServer, bytes]) -> None:  # fmt: skip
    api, namespace, _, _ = cluster
    created = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("unbound", schedulerName="nobody"))
    created.raise_for_status()
    node = api.get("/api/v1/nodes").json()["items"][0]["metadata"]["name"]
    path = f"/api/v1/namespaces/{namespace}/pods/unbound/binding"
    for metadata in ({}, {"name": "other"}):
        reply = api.post(path, json={"apiVersion": "v1", "kind": "Binding", "metadata": metadata, "target": {"name": node}})  # fmt: skip
        assert (reply.status_code, reply.json()["message"]) == (400, "name in URL does not match name in Binding object")  # fmt: skip
    stale = {"name": "unbound", "uid": "00000000-0000-0000-0000-000000000000"}
    reply = api.post(path, json={"apiVersion": "v1", "kind": "Binding", "metadata": stale, "target": {"name": node}})  # fmt: skip
    assert reply.status_code == 409
    assert reply.json()["message"] == (
        f'Operation cannot be fulfilled on pods "unbound": StorageError: invalid object, Code: 4, Key: '
        f"/registry/pods/{namespace}/unbound, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in "
        f"precondition: {stale['uid']}, UID in object meta: {created.json()['metadata']['uid']}"
    )
    assert not read(api, namespace, "unbound")["spec"].get("nodeName")
