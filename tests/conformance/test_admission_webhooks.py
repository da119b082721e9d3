"""localkube calls admission webhooks as kube-apiserver does: Validating- and MutatingWebhookConfigurations
against a real HTTPS webhook server in the test, reached by url or through a Service, with caBundle
verification, timeouts, failure policies, rules and selectors, and the real server's messages (through
kubectl where a user would see them).

Every configuration selects only the test's own namespace, so the other tests sharing the session's
localkube never meet it; each is deleted at the end of its test.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.support import Kubectl
from conformance.webhookserver import WebhookServer, make_certificates

VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    directory = tmp_path_factory.mktemp("webhook-certs")
    return directory, make_certificates(directory, ["hooks.webhooks-test.svc"])


@pytest.fixture
def server(certificates: tuple[Path, bytes]) -> Iterator[WebhookServer]:
    started = WebhookServer(certificates[0]).start()
    yield started
    started.stop()


@pytest.fixture
def configure(api: httpx.Client) -> Iterator[Any]:
    made: list[str] = []

    def create(collection: str, name: str, webhooks: list[dict[str, Any]]) -> dict[str, Any]:
        kind = (
            "ValidatingWebhookConfiguration" if collection == VALIDATING else "MutatingWebhookConfiguration"
        )
        body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": webhooks}  # fmt: skip
        reply = api.post(collection, json=body)
        assert reply.status_code == 201, reply.text
        made.append(f"{collection}/{name}")
        created: dict[str, Any] = reply.json()
        return created

    yield create
    for path in made:
        api.delete(path)


def hook(name: str, namespace: str, ca: bytes, *, url: str | None = None, service: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:  # fmt: skip
    client_config: dict[str, Any] = {"caBundle": base64.b64encode(ca).decode()}
    if url is not None:
        client_config["url"] = url
    if service is not None:
        client_config["service"] = service
    return {
        "name": name,
        "clientConfig": client_config,
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }
        ],  # fmt: skip
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }


def configmap(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}


def test_refusal_through_kubectl_and_nothing_stored(api: httpx.Client, kubectl: Kubectl, namespace: str, server: WebhookServer, certificates: tuple[Path, bytes], configure: Any) -> None:  # fmt: skip
    stored = configure(VALIDATING, f"deny-{namespace}", [hook("deny.example.com", namespace, certificates[1], url=f"https://127.0.0.1:{server.port}/deny")])  # fmt: skip
    webhook = stored["webhooks"][0]
    assert (webhook["failurePolicy"], webhook["matchPolicy"], webhook["timeoutSeconds"]) == (
        "Fail",
        "Equivalent",
        10,
    )
    done = kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(configmap("c")), check=False)
    assert done.returncode != 0
    assert 'admission webhook "deny.example.com" denied the request: no thanks' in done.stderr
    assert api.get(f"/api/v1/namespaces/{namespace}/configmaps/c").status_code == 404
    review = server.received["/deny"][0]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    request = review["request"]
    assert request["operation"] == "CREATE"
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert (request["namespace"], request["name"]) == (namespace, "c")
    assert request["object"]["data"] == {"k": "v"}
    assert request["oldObject"] is None
    assert request["userInfo"]["username"]


def test_service_reference_and_mutation(api: httpx.Client, namespace: str, server: WebhookServer, certificates: tuple[Path, bytes], configure: Any) -> None:  # fmt: skip
    # The certificate names hooks.webhooks-test.svc: the Service of that name in that namespace reaches us.
    api.post("/api/v1/namespaces", json={"metadata": {"name": "webhooks-test"}})
    service = {"metadata": {"name": "hooks"}, "spec": {"ports": [{"name": "https", "port": 443, "targetPort": server.port}]}}  # fmt: skip
    endpoints = {"metadata": {"name": "hooks"}, "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": server.port}]}]}  # fmt: skip
    for kind, body in (("services", service), ("endpoints", endpoints)):
        api.delete(f"/api/v1/namespaces/webhooks-test/{kind}/hooks")
        assert api.post(f"/api/v1/namespaces/webhooks-test/{kind}", json=body).status_code == 201
    reference = {"namespace": "webhooks-test", "name": "hooks", "path": "/label"}
    configure(MUTATING, f"label-{namespace}", [hook("label.example.com", namespace, certificates[1], service=reference)])  # fmt: skip
    reply = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("m"))
    assert reply.status_code == 201, reply.text
    assert reply.json()["metadata"]["labels"] == {"mutated": "yes"}
    stored = api.get(f"/api/v1/namespaces/{namespace}/configmaps/m").json()
    assert stored["metadata"]["labels"] == {"mutated": "yes"}
    # An update is sent with the old object; the patch applies to it as well.
    updated = api.patch(f"/api/v1/namespaces/{namespace}/configmaps/m", content=b'{"data":{"k":"w"}}', headers={"content-type": "application/merge-patch+json"})  # fmt: skip
    assert updated.status_code == 200, updated.text
    update_review = server.received["/label"][-1]["request"]
    assert update_review["operation"] == "UPDATE"
    assert update_review["oldObject"]["data"] == {"k": "v"}
    assert update_review["object"]["data"] == {"k": "w"}


def test_failure_policies_and_call_errors(api: httpx.Client, namespace: str, server: WebhookServer, certificates: tuple[Path, bytes], configure: Any) -> None:  # fmt: skip
    ca = certificates[1]
    configure(VALIDATING, f"down-{namespace}", [hook("down.example.com", namespace, ca, url="https://127.0.0.1:1/x", failurePolicy="Ignore")])  # fmt: skip
    assert (
        api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("ignored")).status_code == 201
    )
    configure(VALIDATING, f"slow-{namespace}", [hook("slow.example.com", namespace, ca, url=f"https://127.0.0.1:{server.port}/slow", timeoutSeconds=1)])  # fmt: skip
    reply = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("slow"))
    assert reply.status_code == 500
    assert reply.json()["message"] == (
        f'Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: '
        f'Post "https://127.0.0.1:{server.port}/slow?timeout=1s": context deadline exceeded'
    )
    assert api.get(f"/api/v1/namespaces/{namespace}/configmaps/slow").status_code == 404


def test_untrusted_certificate_and_bad_response(api: httpx.Client, namespace: str, server: WebhookServer, tmp_path: Path, configure: Any) -> None:  # fmt: skip
    other_ca = make_certificates(tmp_path, ["elsewhere"])
    configure(VALIDATING, f"untrusted-{namespace}", [hook("untrusted.example.com", namespace, other_ca, url=f"https://127.0.0.1:{server.port}/allow")])  # fmt: skip
    reply = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("x"))
    assert reply.status_code == 500
    assert 'failed calling webhook "untrusted.example.com"' in reply.json()["message"]
    assert "tls: failed to verify certificate" in reply.json()["message"]
    assert "/allow" not in server.received


def test_rules_and_selectors(api: httpx.Client, namespace: str, server: WebhookServer, certificates: tuple[Path, bytes], configure: Any) -> None:  # fmt: skip
    ca, url = certificates[1], f"https://127.0.0.1:{server.port}/deny"
    selected = hook("selected.example.com", namespace, ca, url=url, objectSelector={"matchLabels": {"guarded": "yes"}})  # fmt: skip
    deletes = hook("deletes.example.com", namespace, ca, url=url)
    deletes["rules"] = [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["secrets"], "scope": "Namespaced"}]  # fmt: skip
    configure(VALIDATING, f"rules-{namespace}", [selected, deletes])
    assert api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("free")).status_code == 201
    guarded = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("guarded", {"guarded": "yes"}))  # fmt: skip
    assert guarded.status_code == 403
    assert (
        guarded.json()["message"] == 'admission webhook "selected.example.com" denied the request: no thanks'
    )
    secret = {"metadata": {"name": "s"}, "stringData": {"a": "b"}}
    assert api.post(f"/api/v1/namespaces/{namespace}/secrets", json=secret).status_code == 201
    refused = api.delete(f"/api/v1/namespaces/{namespace}/secrets/s")
    assert refused.status_code == 403
    assert api.get(f"/api/v1/namespaces/{namespace}/secrets/s").status_code == 200
    assert server.received["/deny"][-1]["request"]["operation"] == "DELETE"
    # deletecollection deletes each object through admission.
    assert api.delete(f"/api/v1/namespaces/{namespace}/secrets").status_code == 403
    assert api.get(f"/api/v1/namespaces/{namespace}/secrets/s").status_code == 200
    assert server.received["/deny"][-1]["request"]["name"] == "s"
    # A dry run is sent with dryRun set (v1 webhooks have no side effects) and stores nothing.
    dry = api.post(f"/api/v1/namespaces/{namespace}/configmaps?dryRun=All", json=configmap("dry", {"guarded": "yes"}))  # fmt: skip
    assert dry.status_code == 403
    assert server.received["/deny"][-1]["request"]["dryRun"] is True


def test_wrong_uid_is_a_call_failure(api: httpx.Client, namespace: str, server: WebhookServer, certificates: tuple[Path, bytes], configure: Any) -> None:  # fmt: skip
    configure(VALIDATING, f"uid-{namespace}", [hook("uid.example.com", namespace, certificates[1], url=f"https://127.0.0.1:{server.port}/wrong-uid")])  # fmt: skip
    reply = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("u"))
    assert reply.status_code == 500
    sent = server.received["/wrong-uid"][0]["request"]["uid"]
    assert reply.json()["message"] == (
        'Internal error occurred: failed calling webhook "uid.example.com": received invalid webhook response: '
        f'expected response.uid="{sent}", got "not-the-uid"'
    )


def test_configurations_are_validated_as_the_real_server_does(api: httpx.Client, kubectl: Kubectl, namespace: str) -> None:  # fmt: skip
    broken = hook("broken", namespace, b"", url="http://127.0.0.1:1/x", timeoutSeconds=31)
    del broken["sideEffects"]
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": f"broken-{namespace}"}, "webhooks": [broken]}  # fmt: skip
    done = kubectl("apply", "-f", "-", input=json.dumps(body), check=False)
    assert done.returncode != 0
    assert f'The ValidatingWebhookConfiguration "broken-{namespace}" is invalid:' in done.stderr
    for cause in (
        'webhooks[0].name: Invalid value: "broken": should be a domain with at least three segments separated by dots',
        "webhooks[0].clientConfig.url: Invalid value: \"http://127.0.0.1:1/x\": 'https' is the only allowed URL scheme",
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
    ):
        assert cause in done.stderr
    assert api.get(f"{VALIDATING}/broken-{namespace}").status_code == 404


def test_match_conditions(api: httpx.Client, namespace: str, server: WebhookServer, certificates: tuple[Path, bytes], configure: Any) -> None:  # fmt: skip
    url = f"https://127.0.0.1:{server.port}/deny"
    conditions = [{"name": "not-exempt", "expression": '!object.metadata.name.startsWith("exempt")'}, {"name": "creates", "expression": 'request.operation == "CREATE"'}]  # fmt: skip
    configure(VALIDATING, f"conditions-{namespace}", [hook("conditions.example.com", namespace, certificates[1], url=url, matchConditions=conditions)])  # fmt: skip
    assert api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("exempt")).status_code == 201
    assert api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("other")).status_code == 403
    # A condition that cannot be evaluated is a call failure under the failure policy.
    failing = [{"name": "labelled", "expression": 'object.metadata.labels.team == "a"'}]
    configure(VALIDATING, f"failing-{namespace}", [hook("failing.example.com", namespace, certificates[1], url=url.replace("/deny", "/allow"), matchConditions=failing)])  # fmt: skip
    reply = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("exempt-too"))
    assert reply.status_code == 500
    assert reply.json()["message"].startswith(
        'Internal error occurred: failed calling webhook "failing.example.com": failed to evaluate match '
        "conditions: expression 'labelled' resulted in error"
    )
    broken = hook("broken.example.com", namespace, certificates[1], url=url, matchConditions=[{"name": "x", "expression": "object.("}])  # fmt: skip
    body = {"metadata": {"name": f"broken-{namespace}"}, "webhooks": [broken]}
    refused = api.post(VALIDATING, json=body)
    assert refused.status_code == 422
    assert (
        'webhooks[0].matchConditions[0].expression: Invalid value: "object.(": compilation failed'
        in refused.json()["message"]
    )


def test_warnings_reach_kubectl(kubectl: Kubectl, namespace: str, server: WebhookServer, certificates: tuple[Path, bytes], configure: Any) -> None:  # fmt: skip
    configure(VALIDATING, f"warn-{namespace}", [hook("warn.example.com", namespace, certificates[1], url=f"https://127.0.0.1:{server.port}/warn")])  # fmt: skip
    done = kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(configmap("warned")))
    assert 'Warning: mind the "gap"' in done.stderr


def test_reinvocation_if_needed(api: httpx.Client, namespace: str, server: WebhookServer, certificates: tuple[Path, bytes], configure: Any) -> None:  # fmt: skip
    base = f"https://127.0.0.1:{server.port}"
    # Configurations run in name order: "a-" (IfNeeded, changes nothing) before "b-" (adds a label).
    configure(MUTATING, f"a-{namespace}", [hook("first.example.com", namespace, certificates[1], url=f"{base}/allow", reinvocationPolicy="IfNeeded")])  # fmt: skip
    configure(MUTATING, f"b-{namespace}", [hook("second.example.com", namespace, certificates[1], url=f"{base}/label")])  # fmt: skip
    assert api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap("r")).status_code == 201
    calls = [review["request"]["object"]["metadata"].get("labels") for review in server.received["/allow"]]
    assert calls == [None, {"mutated": "yes"}]
    assert len(server.received["/label"]) == 1
