"""The validating webhooks as helm-chart/kuberay-operator installs them with `webhooks.enabled`, on localkube
with the real cert-manager: its Issuer and Certificate applied as rendered, cert-manager issues the Secret
`webhook-server-cert`, the operator serves it and localkube calls the three webhooks through the Service
`kuberay-webhook-service` over TLS checked against that certificate. Invalid RayJobs and RayServices are
refused at admission with the field path and upstream's reason, and not stored; valid ones are stored.

Three stand-ins, because the operator runs on the host (as `kuberay local up` runs it), not as the chart's
pod: the Service loses its selector and gets Endpoints at the operator's port on 127.0.0.1; the Secret's
`tls.crt` and `tls.key` are written to the directory the operator reads, as the kubelet would mount them;
and the Secret's `ca.crt` goes into each webhook's caBundle, which is what cert-manager's CA injector (not
part of the test's cert-manager, tests/support/certmanager_process.py) does for the configuration's
`cert-manager.io/inject-ca-from` annotation. The configuration selects only the test's namespace, as the
session's localkube is shared. Like test_webhook.py (the RayCluster webhook), localkube only.

The chart's MutatingWebhookConfiguration (Node Label Delivery, with the gate and an allowlist given to the
operator) is installed the same way: localkube's scheduler binds a worker of a group with labelMappings
through the chart's `mbinding.kb.io`, which delivers the Node's label onto the pod.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from conformance.support import run_kubectl
from kuberay.local.ports import free_port
from support.certmanager_process import CertManager
from support.eventually import eventually
from support.helm import Helm
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CONFIGURATION = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
RACK = f"example.com/chart-rack-{int(time.time()) % 10**6}"
LONG = "this-name-is-tooooooooooooooooooooooooooooooooooooooooooo-long-and-should-be-invalid"
DNS1035 = (
    "[a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]"
)


@dataclass
class Installed:
    api: httpx.Client
    namespace: str


@pytest.fixture(scope="module")
def cert_manager_installed(cert_manager: Path, localkube: LocalKubeProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CertManager]:  # fmt: skip
    """For this module only, as test_mtls.py does: the other modules' operators find no cert-manager."""
    manager = CertManager.install(cert_manager, localkube.kubeconfig, tmp_path_factory.mktemp("cert-manager") / "controller.log")  # fmt: skip
    try:
        yield manager
    finally:
        manager.uninstall()


def _rendered(helm: Helm, namespace: str) -> dict[str, dict[str, Any]]:
    """The chart's webhook objects and its Deployment, by kind (the webhook's Service as `WebhookService`)."""
    chart: dict[str, dict[str, Any]] = {}
    for obj in helm.template("kuberay-operator", {"webhooks": {"enabled": True}}, namespace=namespace):
        if obj["kind"] == "Service" and obj["metadata"]["name"] == "kuberay-webhook-service":
            chart["WebhookService"] = obj
        elif obj["kind"] in ("Issuer", "Certificate", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Deployment"):  # fmt: skip
            chart[obj["kind"]] = obj
    return chart


def _issued(api: httpx.Client, namespace: str, name: str) -> dict[str, str] | None:
    found = api.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
    if found.status_code != 200:
        return None
    data: dict[str, str] = found.json().get("data") or {}
    return data if {"tls.crt", "tls.key", "ca.crt"} <= data.keys() else None


@pytest.fixture(scope="module")
def installed(localkube: LocalKubeProcess, helm: Helm, cert_manager_installed: CertManager, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:  # fmt: skip
    namespace = f"webhooks-{int(time.time() * 1000) % 10**8}"
    tmp = tmp_path_factory.mktemp("webhook-chart")
    port = free_port()
    chart = _rendered(helm, namespace)
    configuration = chart["ValidatingWebhookConfiguration"]
    with localkube.client(timeout=30) as api:
        api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
        operator: OperatorProcess | None = None
        try:
            for kind, plural in (("Issuer", "issuers"), ("Certificate", "certificates")):
                api.post(f"/apis/cert-manager.io/v1/namespaces/{namespace}/{plural}", json=chart[kind]).raise_for_status()  # fmt: skip
            secret_name = chart["Certificate"]["spec"]["secretName"]
            secret = eventually(lambda: _issued(api, namespace, secret_name), 60, f"cert-manager's Secret {secret_name}:\n{cert_manager_installed.log.read_text()}", every=0.5)  # fmt: skip
            service = chart["WebhookService"]
            del service["spec"]["selector"]
            service["spec"]["ports"][0]["targetPort"] = port
            endpoints = {"metadata": {"name": service["metadata"]["name"]}, "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": port}]}]}  # fmt: skip
            api.post(f"/api/v1/namespaces/{namespace}/services", json=service).raise_for_status()
            api.post(f"/api/v1/namespaces/{namespace}/endpoints", json=endpoints).raise_for_status()
            # What the CA injector does for the annotation, which names the Certificate applied above.
            assert configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{namespace}/serving-cert"  # fmt: skip
            mutating = chart["MutatingWebhookConfiguration"]
            for webhook in [*configuration["webhooks"], *mutating["webhooks"]]:
                webhook["clientConfig"]["caBundle"] = secret["ca.crt"]
                webhook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            api.post(CONFIGURATION, json=configuration).raise_for_status()
            api.post(MUTATING, json=mutating).raise_for_status()
            # The Secret's files, as the chart's Deployment mounts them; its environment (ENABLE_WEBHOOKS).
            certs = tmp / "serving-certs"
            certs.mkdir()
            for key in ("tls.crt", "tls.key"):
                (certs / key).write_bytes(base64.b64decode(secret[key]))
            (container,) = chart["Deployment"]["spec"]["template"]["spec"]["containers"]
            operator = OperatorProcess(
                localkube.kubeconfig, tmp / "operator.log",
                f"--webhook-port={port}", f"--webhook-cert-dir={certs}", f"--watch-namespace={namespace}",
                "--feature-gates=TopologyLabelDelivery=true", f"--allowed-node-labels={RACK}",
                env={e["name"]: e["value"] for e in container["env"]},
            ).start()  # fmt: skip
            operator.wait_listening(port)
            yield Installed(api, namespace)
        finally:
            if operator is not None:
                operator.stop()
            api.delete(f"{CONFIGURATION}/{configuration['metadata']['name']}")
            api.delete(f"{MUTATING}/{chart['MutatingWebhookConfiguration']['metadata']['name']}")
            api.delete(f"/api/v1/namespaces/{namespace}")


def _example(file: str, name: str, **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((EXAMPLES / file).read_text())
    obj["metadata"]["name"] = name
    obj["spec"].update(spec)
    return obj


def _job(name: str) -> dict[str, Any]:
    # Suspended: the RayJob reconciler makes no cluster for it (the webhook's verdict is all this tests).
    return _example("ray-job.http-mode.yaml", name, suspend=True)


def _service(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    service = _example("ray-service.yaml", name)
    if annotations:
        service["metadata"]["annotations"] = annotations
    return service


@pytest.mark.parametrize(
    ("plural", "obj", "webhook", "message"),
    [("rayjobs", _job("a.b"), "vrayjob.kb.io", f'RayJob.ray.io "a.b" is invalid: metadata.name: Invalid value: "a.b": The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: {DNS1035}'),  # noqa: E501
     ("rayjobs", _job(LONG), "vrayjob.kb.io", f'RayJob.ray.io "{LONG}" is invalid: metadata.name: Invalid value: "{LONG}": The RayJob metadata is invalid: RayJob name should be no more than 47 characters'),  # noqa: E501
     ("rayservices", _service("a.b"), "vrayservice.kb.io", f'RayService.ray.io "a.b" is invalid: metadata.name: Invalid value: "a.b": The RayService metadata is invalid: RayService name should be a valid DNS1035 label: {DNS1035}'),  # noqa: E501
     ("rayservices", _service("slow", {"ray.io/initializing-timeout": "-5m"}), "vrayservice.kb.io", 'RayService.ray.io "slow" is invalid: metadata.name: Invalid value: "slow": The RayService metadata is invalid: RayService annotations is invalid: annotation ray.io/initializing-timeout must be a positive duration, got: -5m')],  # noqa: E501
    ids=["rayjob-dns1035", "rayjob-too-long", "rayservice-dns1035", "rayservice-initializing-timeout"],
)  # fmt: skip
def test_invalid_objects_are_refused_at_admission(installed: Installed, plural: str, obj: dict[str, Any], webhook: str, message: str) -> None:  # fmt: skip
    api, namespace = installed.api, installed.namespace
    refused = api.post(f"/apis/ray.io/v1/namespaces/{namespace}/{plural}", json=obj)
    assert refused.status_code == 422, refused.text
    status = refused.json()
    assert status["message"] == f'admission webhook "{webhook}" denied the request: {message}'
    assert status["reason"] == "Invalid"
    assert [(c["field"], c["reason"]) for c in status["details"]["causes"]] == [("metadata.name", "FieldValueInvalid")]  # fmt: skip
    name = obj["metadata"]["name"]
    assert api.get(f"/apis/ray.io/v1/namespaces/{namespace}/{plural}/{name}").status_code == 404


def test_kubectl_shows_the_field_path_and_reason(localkube: LocalKubeProcess, installed: Installed) -> None:
    done = run_kubectl(localkube, "apply", "-n", installed.namespace, "-f", "-", input=json.dumps(_job("a.b")), check=False)  # fmt: skip
    assert done.returncode != 0
    assert f'The RayJob "a.b" is invalid: metadata.name: Invalid value: "a.b": The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: {DNS1035}' in done.stderr  # fmt: skip  # noqa: E501


def test_valid_objects_are_admitted(localkube: LocalKubeProcess, installed: Installed) -> None:
    api, namespace = installed.api, installed.namespace
    for plural, obj in (("rayjobs", _job("fine-job")), ("rayservices", _service("fine-service"))):
        run_kubectl(localkube, "apply", "-n", namespace, "-f", "-", input=json.dumps(obj))
        assert api.get(f"/apis/ray.io/v1/namespaces/{namespace}/{plural}/{obj['metadata']['name']}").status_code == 200  # fmt: skip
    # UPDATE goes through the webhook too (a name cannot change; RayService's annotation can).
    broken = _service("fine-service", {"ray.io/initializing-timeout": "soon"})
    done = run_kubectl(localkube, "apply", "-n", namespace, "-f", "-", input=json.dumps(broken), check=False)
    assert done.returncode != 0
    assert (
        'The RayService "fine-service" is invalid: metadata.name: Invalid value: "fine-service": The RayService '
        "metadata is invalid: RayService annotations is invalid: annotation ray.io/initializing-timeout has "
        "invalid format: soon. Expected Go duration format (e.g., '5m', '1h') or positive integer seconds"
    ) in done.stderr
    stored = api.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayservices/fine-service").json()
    assert "ray.io/initializing-timeout" not in (stored["metadata"].get("annotations") or {})


def test_the_charts_binding_webhook_delivers_the_nodes_label(installed: Installed) -> None:
    api, namespace = installed.api, installed.namespace
    nodes = [n["metadata"]["name"] for n in api.get("/api/v1/nodes").json()["items"]]
    label = {"metadata": {"labels": {RACK: "r9"}}}
    merge = {"content-type": "application/merge-patch+json"}
    for node in nodes:
        api.patch(f"/api/v1/nodes/{node}", json=label, headers=merge).raise_for_status()
    try:
        cluster = _example("ray-cluster.minimal.yaml", "labelled")
        cluster["spec"]["workerGroupSpecs"][0]["labelMappings"] = [{"nodeLabel": RACK, "mapTo": "rack"}]
        api.post(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", json=cluster).raise_for_status()

        def delivered() -> str | None:
            selector = "ray.io/cluster=labelled,ray.io/node-type=worker"
            pods = api.get(f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": selector}).json()
            annotations = [(p["metadata"].get("annotations") or {}) for p in pods["items"] if p["spec"].get("nodeName")]  # fmt: skip
            return annotations[0].get("ray.io/topology-labels") if annotations else None

        assert json.loads(eventually(delivered, 90, "the worker bound with its node's label")) == {
            "rack": "r9"
        }
    finally:
        for node in nodes:
            api.patch(f"/api/v1/nodes/{node}", json={"metadata": {"labels": {RACK: None}}}, headers=merge)
