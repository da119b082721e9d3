"""The operator's Node Label Delivery webhooks (kuberay.operator.nodelabels) over a stand-in client: pods
CREATE patches a worker of a group with labelMappings and nothing else; pods/binding annotates the Binding with
the Node's allowed, mapped labels, and when one is missing records `RequiredNodeLabelMissing` on the pod and
delivers nothing; a read that fails answers 500 (the failure policy decides)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Mapping
from typing import Any, cast

from kuberay.operator import nodelabels
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.errors import NotFoundError, Unavailable
from kuberay.runtime.resources import Resource
from kuberay.runtime.serving import HttpRequest

WORKER_LABELS = {"ray.io/node-type": "worker", "ray.io/cluster": "topo", "ray.io/group": "train"}
CLUSTER = {
    "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "topo", "namespace": "ns"},
    "spec": {"workerGroupSpecs": [
        {"groupName": "train", "labelMappings": [{"nodeLabel": "example.com/rack", "mapTo": "rack"}]},
        {"groupName": "plain"},
    ]},
}  # fmt: skip
ARGS = ["ulimit -n 65536; ray start  --address=topo-head-svc:6379  --block "]


class Reads:
    """The objects a webhook may read, by (plural, namespace, name)."""

    def __init__(self, *objects: dict[str, Any], failing: bool = False) -> None:
        self.objects = {
            (o["kind"].lower() + "s", o["metadata"].get("namespace"), o["metadata"]["name"]): o
            for o in objects
        }
        self.failing = failing

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        if self.failing:
            raise Unavailable("connection refused")
        found = self.objects.get((resource.plural, namespace, name))
        if found is None:
            raise NotFoundError(f"{resource.plural} {name} not found", status=404)
        return found


class Events:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str, str]] = []

    def record(self, obj: Mapping[str, Any], type: str, reason: str, message: str, action: str = "") -> None:
        self.recorded.append((obj["metadata"]["name"], type, reason, message))


def worker_pod(name: str = "w", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": labels or WORKER_LABELS},
        "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray", "command": ["/bin/bash", "-c", "--"], "args": ARGS}]},
    }  # fmt: skip


def node(labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": labels}}


def delivery(reads: Reads, events: Events | None = None, cached: bool = True) -> nodelabels.NodeLabelDelivery:
    clusters = Store()
    if cached:
        clusters.upsert(CLUSTER)
    return nodelabels.NodeLabelDelivery(cast(Client, reads), clusters, events, ["example.com/rack"])


def call(handler: Any, path: str, obj: dict[str, Any], name: str = "w", dry_run: bool = False) -> tuple[int, list[dict[str, Any]] | None]:  # fmt: skip
    request = {
        "uid": "u",
        "operation": "CREATE",
        "namespace": "ns",
        "name": name,
        "object": obj,
        "dryRun": dry_run,
    }
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
    status, _, reply = asyncio.run(handler(HttpRequest("POST", path, {}, body.encode())))
    if status != 200:
        return status, None
    response = json.loads(reply)["response"]
    assert response["allowed"] is True and response["uid"] == "u"
    return status, json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


def binding(target: str = "n1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "w", "namespace": "ns"}, "target": {"name": target}}  # fmt: skip


def test_paths() -> None:
    assert set(delivery(Reads()).routes()) == {"/mutate--v1-pod", "/mutate--v1-binding"}


def test_pod_create_patches_only_workers_of_a_group_with_label_mappings() -> None:
    hooks = delivery(Reads(CLUSTER), cached=False)  # read live when not cached yet
    _, patch = call(hooks.mutate_pod, nodelabels.POD_PATH, worker_pod())
    assert patch is not None and [op["path"] for op in patch] == ["/spec/containers/0/env", "/spec/containers/0/args/0"]  # fmt: skip
    plain = {**WORKER_LABELS, "ray.io/group": "plain"}
    head = {**WORKER_LABELS, "ray.io/node-type": "head"}
    other_cluster = {**WORKER_LABELS, "ray.io/cluster": "gone"}
    for labels in (plain, head, other_cluster):
        assert call(hooks.mutate_pod, nodelabels.POD_PATH, worker_pod(labels=labels)) == (200, [])


def test_binding_delivers_the_allowed_mapped_labels() -> None:
    events = Events()
    hooks = delivery(Reads(worker_pod(), node({"example.com/rack": "r7", "secret": "s"})), events)
    _, patch = call(hooks.mutate_binding, nodelabels.BINDING_PATH, binding())
    assert patch == [{"op": "add", "path": "/metadata/annotations", "value": {"ray.io/topology-labels": '{"rack":"r7"}'}}]  # fmt: skip
    assert events.recorded == []


def test_binding_to_a_node_without_the_label_delivers_nothing_and_records_the_event() -> None:
    events = Events()
    hooks = delivery(Reads(worker_pod(), node({"secret": "s"})), events)
    assert call(hooks.mutate_binding, nodelabels.BINDING_PATH, binding(), dry_run=True) == (200, [])
    assert events.recorded == []  # no side effect on a dry run
    assert call(hooks.mutate_binding, nodelabels.BINDING_PATH, binding()) == (200, [])
    [(pod, type, reason, message)] = events.recorded
    assert (pod, type, reason) == ("w", "Warning", "RequiredNodeLabelMissing")
    assert message.startswith(
        'Node "n1" lacks the required label(s) "example.com/rack" of worker group train'
    )


def test_bindings_of_other_pods_and_failed_reads() -> None:
    hooks = delivery(Reads(worker_pod(labels={"app": "x"}), node({})))
    assert call(hooks.mutate_binding, nodelabels.BINDING_PATH, binding()) == (200, [])
    assert call(delivery(Reads()).mutate_binding, nodelabels.BINDING_PATH, binding()) == (200, [])  # pod gone
    assert call(delivery(Reads(failing=True)).mutate_binding, nodelabels.BINDING_PATH, binding())[0] == 500
