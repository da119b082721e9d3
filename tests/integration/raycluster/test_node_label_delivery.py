"""Node Label Delivery (upstream v1.8, gate TopologyLabelDelivery, kuberay#5300) under the real operator with
ENABLE_WEBHOOKS=true, `--allowed-node-labels` and deploy/rbac's ServiceAccount, its mutating webhooks
(deploy/webhook/mutating.yaml) called by the backend's API server over HTTPS: the scheduler's binding of a
worker of a group with labelMappings goes through the `pods/binding` webhook, so the worker carries the
Node's label under its Ray key in `ray.io/topology-labels` and its `ray start` reads it through
RAY_NODE_LABELS_JSON and `--labels-file`; a group mapping a label the Node lacks gets nothing delivered and a
Warning Event `RequiredNodeLabelMissing` on its pod. Pods of other groups and the head are left alone.

The webhooks are reached by `url` at the operator's port on 127.0.0.1 (its certificate names 127.0.0.1), the
configuration selecting only the test's namespace, since the backend is shared.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.webhookserver import make_certificates
from kuberay.local.ports import free_port
from kuberay.runtime import errors
from kuberay.runtime.resources import NODE, Resource
from support.eventually import eventually
from support.operator_process import OperatorProcess

from .conftest import Kube, service_account_kubeconfig
from .test_lifecycle import small_cluster

REPO = Path(__file__).resolve().parents[3]
MUTATING = Resource("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", namespaced=False)  # fmt: skip
VALIDATING = Resource("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", namespaced=False)  # fmt: skip
SUFFIX = uuid.uuid4().hex[:8]
RACK = f"example.com/rack-{SUFFIX}"  # on the Node
CLIQUE = f"example.com/clique-{SUFFIX}"  # allowed, but on no Node


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, bytes]:
    """The operator's webhook port, its serving certificate's directory, and the CA that signed it."""
    directory = tmp_path_factory.mktemp("webhook-certs")
    return free_port(), directory, make_certificates(directory, ["kuberay-webhook-service.ray-system.svc"])


@pytest.fixture(scope="module")
def operator(kube_backend: Any, tmp_path_factory: pytest.TempPathFactory, webhook: tuple[int, Path, bytes]) -> Iterator[OperatorProcess]:  # fmt: skip
    log_dir = os.environ.get("RAYCLUSTER_TEST_LOG_DIR")
    directory = Path(log_dir) if log_dir else tmp_path_factory.mktemp("operator")
    webhook_port, cert_dir, _ = webhook
    kubeconfig = service_account_kubeconfig(kube_backend, "kuberay-system", directory / "kubeconfig")
    process = OperatorProcess(
        kubeconfig, directory / "operator.log",
        "--feature-gates=TopologyLabelDelivery=true", f"--allowed-node-labels={RACK},{CLIQUE}",
        f"--webhook-port={webhook_port}", f"--webhook-cert-dir={cert_dir}",
        env={"ENABLE_WEBHOOKS": "true"},
    ).start()  # fmt: skip
    try:
        process.wait_listening(webhook_port)
        yield process
    finally:
        process.stop()
    assert "forbidden" not in (directory / "operator.log").read_text().lower()


@pytest.fixture
async def delivering(kube: Kube, operator: OperatorProcess, webhook: tuple[int, Path, bytes]) -> AsyncIterator[None]:  # fmt: skip
    """deploy/webhook's configurations (mutating.yaml, manifests.yaml) for the test's namespace, and the label
    RACK on every Node."""
    webhook_port, _, ca = webhook
    name = f"node-labels-{kube.namespace}"
    for resource, file in ((MUTATING, "mutating.yaml"), (VALIDATING, "manifests.yaml")):
        configuration = yaml.safe_load((REPO / "deploy" / "webhook" / file).read_text())
        configuration["metadata"] = {"name": name}
        for hook in configuration["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{webhook_port}{path}", "caBundle": base64.b64encode(ca).decode()}  # fmt: skip
            hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": kube.namespace}}
        await kube.client.create(resource, configuration)
    nodes = (await kube.client.list(NODE)).items
    for node in nodes:
        await kube.client.patch(NODE, node["metadata"]["name"], {"metadata": {"labels": {RACK: "r7"}}})
    try:
        yield
    finally:
        await kube.delete_clusters()
        for resource in (MUTATING, VALIDATING):
            await kube.client.delete(resource, name)
        for node in nodes:
            await kube.client.patch(NODE, node["metadata"]["name"], {"metadata": {"labels": {RACK: None}}})


def labelled_cluster() -> dict[str, Any]:
    manifest = small_cluster("topo", replicas=1)
    train = manifest["spec"]["workerGroupSpecs"][0]
    train["groupName"] = "train"
    train["labelMappings"] = [{"nodeLabel": RACK, "mapTo": "rack"}]
    clique = json.loads(json.dumps(train))
    clique["groupName"] = "clique"
    clique["labelMappings"] = [{"nodeLabel": CLIQUE}]
    plain = json.loads(json.dumps(train))
    plain["groupName"] = "plain"
    del plain["labelMappings"]
    manifest["spec"]["workerGroupSpecs"] = [train, clique, plain]
    return manifest


async def bound_pod(kube: Kube, **labels: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        pods = await kube.live_pods("topo", **labels)
        return pods[0] if len(pods) == 1 and pods[0]["spec"].get("nodeName") else None

    pod: dict[str, Any] = await eventually(found, 90, f"the pod {labels} bound")
    return pod


async def test_the_nodes_labels_reach_ray_start_through_the_binding_webhook(kube: Kube, delivering: None) -> None:  # fmt: skip
    await kube.create_cluster(labelled_cluster())
    train = await bound_pod(kube, **{"ray.io/group": "train"})
    assert json.loads(train["metadata"]["annotations"]["ray.io/topology-labels"]) == {"rack": "r7"}
    ray = train["spec"]["containers"][0]
    (env,) = [e for e in ray["env"] if e["name"] == "RAY_NODE_LABELS_JSON"]
    assert env["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.annotations['ray.io/topology-labels']"
    assert "; ray start --labels-file=/tmp/ray-labels.yaml " in ray["args"][0]
    # A group without labelMappings, and the head, are not touched.
    for labels in ({"ray.io/group": "plain"}, {"ray.io/node-type": "head"}):
        other = await bound_pod(kube, **labels)
        assert "ray.io/topology-labels" not in (other["metadata"].get("annotations") or {})
        assert "--labels-file" not in (other["spec"]["containers"][0].get("args") or [""])[0]


async def test_a_node_without_a_mapped_label_gets_nothing_delivered_and_the_pod_a_warning(kube: Kube, delivering: None) -> None:  # fmt: skip
    await kube.create_cluster(labelled_cluster())
    clique = await bound_pod(kube, **{"ray.io/group": "clique"})
    name = clique["metadata"]["name"]
    assert "ray.io/topology-labels" not in (clique["metadata"].get("annotations") or {})

    async def warned() -> list[dict[str, Any]]:
        return [e for e in await kube.events(name) if e.get("reason") == "RequiredNodeLabelMissing"]

    (event,) = await eventually(warned, 60, f"RequiredNodeLabelMissing on {name}")
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "Pod"
    assert event["message"].startswith(
        f'Node "{clique["spec"]["nodeName"]}" lacks the required label(s) "{CLIQUE}" of worker group clique'
    )


async def test_a_node_label_the_allowlist_does_not_list_is_refused_at_admission(kube: Kube, delivering: None) -> None:  # fmt: skip
    manifest = labelled_cluster()
    manifest["spec"]["workerGroupSpecs"][0]["labelMappings"] = [{"nodeLabel": "secret.example.com/x"}]
    with pytest.raises(errors.Invalid) as refused:
        await kube.create_cluster(manifest)
    message = str(refused.value)
    assert message.startswith('admission webhook "vraycluster.kb.io" denied the request: RayCluster.ray.io "topo" is invalid: ')  # fmt: skip
    assert (
        'spec.workerGroupSpecs[0].labelMappings[0].nodeLabel: Invalid value: "secret.example.com/x": node label '
        "secret.example.com/x is not in the operator's allowedNodeLabels"
    ) in message
