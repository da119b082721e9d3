"""Workload controllers driven by hand against a real store and REST layer, to choose the order in which
they see events: a reconcile that runs before the events of its own writes arrive must not act twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localkube.controllers.api import ControllerApi
from localkube.controllers.daemonset import DaemonSetController
from localkube.controllers.replicaset import ReplicaSetController
from localkube.controllers.workload import OwningController
from localkube.server.registry import Registry
from localkube.server.rest import SYSTEM_NAMESPACES, Resources
from localkube.storage import Event, Store

PODS = "/registry/core/pods/default/"


@pytest.fixture
def resources(tmp_path: Path) -> Iterator[Resources]:
    store = Store(tmp_path / "db")
    resources = Resources(store, Registry())
    resources.seed(SYSTEM_NAMESPACES)
    yield resources
    store.close()


def _template(app: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def _create(resources: Resources, plural: str, obj: dict[str, Any]) -> str:
    resource_type = resources.registry.by_resource("apps", plural)
    assert resource_type is not None
    created = resources.create(resource_type, "default", obj, {})
    return resource_type.key("default", created["metadata"]["name"])


def _show(controller: OwningController | DaemonSetController, resources: Resources, key: str) -> None:
    """Delivers only the owner's own event, as if every other event were still in flight."""
    obj = resources.store.get(key)
    assert obj is not None
    controller.observe(Event("ADDED", key, resources.store.revision, b"", obj))


def _pods(resources: Resources) -> list[dict[str, Any]]:
    return resources.store.list(PODS)[0]


def test_a_replicaset_reconciled_again_before_its_pod_events_makes_no_extra_pods(
    resources: Resources,
) -> None:
    controller = ReplicaSetController(resources.store, ControllerApi(resources))
    key = _create(resources, "replicasets", {"metadata": {"name": "web"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": _template("web")}})  # fmt: skip
    _show(controller, resources, key)
    controller.reconcile(key)
    controller.reconcile(key)
    assert len(_pods(resources)) == 3


def test_an_adopted_pod_is_adopted_once(resources: Resources) -> None:
    controller = ReplicaSetController(resources.store, ControllerApi(resources))
    pod_type = resources.registry.by_resource("", "pods")
    assert pod_type is not None
    orphan = {"metadata": {"name": "orphan", "labels": {"app": "web"}}, "spec": _template("web")["spec"]}
    resources.create(pod_type, "default", orphan, {})
    controller.observe(Event("ADDED", PODS + "orphan", resources.store.revision, b"", resources.store.get(PODS + "orphan") or {}))  # fmt: skip
    key = _create(resources, "replicasets", {"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": _template("web")}})  # fmt: skip
    _show(controller, resources, key)
    controller.reconcile(key)
    controller.reconcile(key)
    (pod,) = _pods(resources)
    assert pod["metadata"]["name"] == "orphan"
    assert len(pod["metadata"]["ownerReferences"]) == 1


def test_a_daemonset_reconciled_again_before_its_pod_events_makes_one_pod_per_node(
    resources: Resources,
) -> None:
    controller = DaemonSetController(resources.store, ControllerApi(resources))
    node_type = resources.registry.by_resource("", "nodes")
    assert node_type is not None
    resources.create(node_type, None, {"metadata": {"name": "n1"}}, {})
    node = resources.store.get("/registry/core/nodes/n1")
    assert node is not None
    controller.observe(Event("ADDED", "/registry/core/nodes/n1", resources.store.revision, b"", node))
    key = _create(resources, "daemonsets", {"metadata": {"name": "agent"}, "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": _template("agent")}})  # fmt: skip
    _show(controller, resources, key)
    controller.reconcile(key)
    controller.reconcile(key)
    (pod,) = _pods(resources)
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]  # fmt: skip
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
