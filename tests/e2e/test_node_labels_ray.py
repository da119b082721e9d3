"""Node Label Delivery on real Ray (process mode): `kuberay local up --node-mode process` with the gate, the
allowlist and ENABLE_WEBHOOKS=true, the operator's mutating webhooks registered (deploy/webhook/mutating.yaml,
by url), a label on the node, and a RayCluster whose worker group maps it. localkube's scheduler binds the
worker through `pods/binding` and the webhook, the kubelet starts it with RAY_NODE_LABELS_JSON, and Ray's
own view of its nodes shows the worker with the node's label under its Ray key.

One instance and one Ray cluster for the file (a private one: the run's shared process-mode instance has
neither the gate nor the webhooks).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.webhookserver import make_certificates
from kuberay.local.ports import free_port
from support.eventually import eventually
from support.local_instance import KUBECTL_POLL, LocalInstance

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

READY_TIMEOUT = 300.0  # Ray on a loaded two-core machine: a bound, not a measurement
REPO = Path(__file__).resolve().parents[2]
RACK = "example.com/rack"
NODES_LABELS = "import json, ray; ray.init(address='auto'); print(json.dumps([n.get('Labels') or {} for n in ray.nodes() if n['Alive']]))"  # fmt: skip


def cluster(namespace: str) -> dict[str, Any]:
    container = {"name": "ray", "image": "rayproject/ray:2.52.0", "resources": {"requests": {"cpu": "100m"}}}
    worker = {
        "groupName": "train", "replicas": 1, "minReplicas": 1, "maxReplicas": 1, "rayStartParams": {"num-cpus": "1"},
        "labelMappings": [{"nodeLabel": RACK, "mapTo": "rack"}], "template": {"spec": {"containers": [dict(container)]}},
    }  # fmt: skip
    head = {"rayStartParams": {"num-cpus": "0"}, "template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "labels", "namespace": namespace},
        "spec": {"rayVersion": "2.52.0", "headGroupSpec": head, "workerGroupSpecs": [worker]},
    }  # fmt: skip


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalInstance, str]]:
    """The instance and the namespace of the RayCluster, ready."""
    directory = tmp_path_factory.mktemp("nodelabels")
    port = free_port()
    ca = make_certificates(directory / "certs", ["kuberay-webhook-service.ray-system.svc"])
    args = (
        "--node-mode", "process", "--port", "0", "--feature-gates", "TopologyLabelDelivery=true", "--",
        f"--allowed-node-labels={RACK}", f"--webhook-port={port}", f"--webhook-cert-dir={directory / 'certs'}",
    )  # fmt: skip
    with LocalInstance(directory / "local", *args, env={"ENABLE_WEBHOOKS": "true"}) as local:
        configuration = yaml.safe_load((REPO / "deploy" / "webhook" / "mutating.yaml").read_text())
        for hook in configuration["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": base64.b64encode(ca).decode()}  # fmt: skip
        local.kubectl("apply", "-f", "-", input=json.dumps(configuration))
        for node in json.loads(local.kubectl("get", "nodes", "-o", "json"))["items"]:
            local.kubectl("label", "node", node["metadata"]["name"], f"{RACK}=r7", "--overwrite")
        namespace = local.namespace("nodelabels")
        local.kubectl("apply", "-f", "-", input=json.dumps(cluster(namespace)))
        eventually(
            lambda: local.get("raycluster", "labels", namespace).get("status", {}).get("state") == "ready",
            READY_TIMEOUT, f"RayCluster {namespace}/labels ready", every=KUBECTL_POLL,
        )  # fmt: skip
        yield local, namespace
        local.kubectl("delete", "raycluster", "labels", "-n", namespace, "--wait=false")


def test_ray_sees_the_nodes_label_on_the_worker(labelled: tuple[LocalInstance, str]) -> None:
    local, namespace = labelled
    pods = json.loads(
        local.kubectl("get", "pods", "-n", namespace, "-l", "ray.io/node-type=worker", "-o", "json")
    )
    (worker,) = pods["items"]
    assert json.loads(worker["metadata"]["annotations"]["ray.io/topology-labels"]) == {"rack": "r7"}
    head = json.loads(
        local.kubectl("get", "pods", "-n", namespace, "-l", "ray.io/node-type=head", "-o", "json")
    )
    head_name = head["items"][0]["metadata"]["name"]

    def labels() -> list[dict[str, str]] | None:
        out = local.kubectl(
            "exec", "-n", namespace, head_name, "--", "python", "-c", NODES_LABELS, check=False
        )
        lines = [line for line in out.splitlines() if line.startswith("[")]
        found: list[dict[str, str]] = json.loads(lines[-1]) if lines else []
        return found if len(found) == 2 else None

    nodes = eventually(labels, 120, "both Ray nodes alive, as Ray lists them", every=KUBECTL_POLL)
    racks = [n.get("rack") for n in nodes]
    # The worker has the node's label under its Ray key; the head, whose group maps nothing, has none.
    assert sorted(racks, key=str) == sorted(["r7", None], key=str), nodes
