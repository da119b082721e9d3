"""Upstream's Python APIServer client contract (spec §3.4) against the APIServer: status, message or None,
payload; a cluster made through it becomes ready and has its dashboard endpoint."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from support.apiserver_process import ApiServerProcess
from support.kuberay_apis import KubeRayAPIs

from .test_rest import cluster, template

pytestmark = pytest.mark.usefixtures("operator")


def test_kuberay_apis_contract(apiserver: ApiServerProcess, localkube: Any) -> None:
    ns = f"t-{uuid.uuid4().hex[:8]}"
    localkube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}])
    apis = KubeRayAPIs(server_url=apiserver.url, wait_interval=0.5)

    assert apis.create_compute_template(template(ns)) == (200, None)
    status, message = apis.create_compute_template(template(ns))
    assert status == 409 and message and message.startswith("Compute template with name small already exists")
    status, error, templates = apis.list_compute_templates_namespace(ns)
    assert (status, error, [t["name"] for t in templates]) == (200, None, ["small"])
    assert ns in {t["namespace"] for t in apis.list_compute_templates()[2]}
    assert apis.get_compute_template(ns, "small")[2]["cpu"] == 2
    status, error, payload = apis.get_compute_template(ns, "missing")
    assert (
        status == 404 and error and error.startswith("Compute template missing not found") and payload is None
    )

    assert apis.create_cluster(cluster(ns, "contract")) == (200, None)
    assert [c["name"] for c in apis.list_clusters_namespace(ns)[2]] == ["contract"]
    assert "contract" in {c["name"] for c in apis.list_clusters()[2] if c["namespace"] == ns}
    assert apis.wait_cluster_ready(ns, "contract", wait=120) == (200, None)
    status, error, endpoint = apis.get_cluster_endpoints(ns, "contract", wait=120)
    assert (status, error) == (200, None)
    assert endpoint == f"contract-head-svc.{ns}.svc.cluster.local:8265"
    status, error, state = apis.get_cluster_status(ns, "contract")
    assert (status, error, state) == (200, None, "ready")
    assert apis.delete_cluster(ns, "contract") == (200, None)
    status, error = apis.wait_cluster_ready(ns, "never", wait=0)
    assert status == 404 and error and error.startswith("Cluster never not found")
    assert apis.delete_compute_template(ns, "small") == (200, None)
    assert apis.list_compute_templates_namespace(ns)[2] == []
