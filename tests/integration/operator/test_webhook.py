"""The operator's validating webhook (ENABLE_WEBHOOKS=true) called by localkube: registered from deploy/webhook
(upstream's `vraycluster.kb.io` through the Service `kuberay-webhook-service`), an invalid RayCluster applied
with kubectl is refused with upstream's message and not stored; with the operator down, failurePolicy Fail
refuses every RayCluster naming the webhook. The RayJob and RayService webhooks, as the Helm chart installs
them with cert-manager: test_webhook_chart.py.

The operator runs on the host, as `kuberay local up` runs it: the Service `kuberay-webhook-service` has no
selector and its Endpoints point at the operator's webhook port on 127.0.0.1.
"""

from __future__ import annotations

import base64
import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from conformance.support import run_kubectl
from conformance.webhookserver import make_certificates
from kuberay.local.ports import free_port
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

REPO = Path(__file__).resolve().parents[3]
MINIMAL = REPO / "examples" / "ray-cluster.minimal.yaml"
WEBHOOK = REPO / "deploy" / "webhook"
CONFIGURATION = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


@pytest.fixture
def setup(localkube: LocalKubeProcess, tmp_path: Path) -> Iterator[tuple[httpx.Client, str, int, OperatorProcess]]:  # fmt: skip
    namespace = f"webhook-{int(time.time() * 1000) % 10**8}"
    port = free_port()
    ca = make_certificates(tmp_path / "certs", [f"kuberay-webhook-service.{namespace}.svc"])
    with localkube.client(timeout=30) as api:
        api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
        # deploy/webhook as shipped, moved into the test's namespace. The Service loses its selector (the
        # operator is no pod here) and gets Endpoints at the operator's port; the configuration selects only
        # this namespace, as the session's localkube is shared.
        service = yaml.safe_load((WEBHOOK / "service.yaml").read_text())
        del service["spec"]["selector"]
        service["metadata"]["namespace"] = namespace
        service["spec"]["ports"][0]["targetPort"] = port
        endpoints = {"metadata": {"name": "kuberay-webhook-service"}, "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": port}]}]}  # fmt: skip
        api.post(f"/api/v1/namespaces/{namespace}/services", json=service).raise_for_status()
        api.post(f"/api/v1/namespaces/{namespace}/endpoints", json=endpoints).raise_for_status()
        configuration = yaml.safe_load((WEBHOOK / "manifests.yaml").read_text())
        configuration["metadata"]["name"] = f"validating-{namespace}"
        for webhook in configuration["webhooks"]:
            webhook["clientConfig"]["service"]["namespace"] = namespace
            webhook["clientConfig"]["caBundle"] = base64.b64encode(ca).decode()
            webhook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
        api.post(CONFIGURATION, json=configuration).raise_for_status()
        operator = OperatorProcess(
            localkube.kubeconfig, tmp_path / "operator.log",
            f"--webhook-port={port}", f"--webhook-cert-dir={tmp_path / 'certs'}", f"--watch-namespace={namespace}",
            env={"ENABLE_WEBHOOKS": "true"},
        ).start()  # fmt: skip
        try:
            operator.wait_listening(port)
            yield api, namespace, port, operator
        finally:
            operator.stop()
            api.delete(f"{CONFIGURATION}/validating-{namespace}")
            api.delete(f"/api/v1/namespaces/{namespace}")


def _cluster(name: str) -> dict[str, Any]:
    cluster: dict[str, Any] = yaml.safe_load(MINIMAL.read_text())
    cluster["metadata"]["name"] = name
    return cluster


def test_invalid_raycluster_is_refused_with_upstreams_message_and_not_stored(localkube: LocalKubeProcess, setup: tuple[httpx.Client, str, int, OperatorProcess]) -> None:  # fmt: skip
    api, namespace, port, operator = setup
    twice = _cluster("twice")
    twice["spec"]["workerGroupSpecs"].append(copy.deepcopy(twice["spec"]["workerGroupSpecs"][0]))
    # kubectl shows an Invalid status by its causes, as it does for any 422 with details.
    done = run_kubectl(localkube, "apply", "-n", namespace, "-f", "-", input=json.dumps(twice), check=False)
    assert done.returncode != 0
    assert (
        'The RayCluster "twice" is invalid: spec.workerGroupSpecs[1]: Invalid value: {"groupName":"workers"'
        in done.stderr
    )
    assert done.stderr.rstrip().endswith(": worker group names must be unique")
    # The API server's message names the webhook, then upstream's NewInvalid.
    dotted = api.post(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", json=_cluster("a.b"))
    assert dotted.status_code == 422
    status = dotted.json()
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(
        'admission webhook "vraycluster.kb.io" denied the request: RayCluster.ray.io "a.b" is invalid: '
        'metadata.name: Invalid value: "a.b": RayCluster name should be a valid DNS1035 label'
    )
    assert status["details"]["causes"][0]["field"] == "metadata.name"
    for name in ("twice", "a.b"):
        assert api.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}").status_code == 404
    run_kubectl(localkube, "apply", "-n", namespace, "-f", "-", input=json.dumps(_cluster("fine")))
    assert api.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/fine").status_code == 200

    operator.stop()
    down = run_kubectl(localkube, "apply", "-n", namespace, "-f", "-", input=json.dumps(_cluster("later")), check=False)  # fmt: skip
    assert down.returncode != 0
    assert (
        'Internal error occurred: failed calling webhook "vraycluster.kb.io": failed to call webhook: Post '
        f'"https://kuberay-webhook-service.{namespace}.svc:443/validate-ray-io-v1-raycluster?timeout=10s": '
        f"dial tcp 127.0.0.1:{port}: connect: connection refused"
    ) in down.stderr
    assert api.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/later").status_code == 404
