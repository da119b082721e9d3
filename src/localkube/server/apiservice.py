"""The `kubernetes` Service in `default` and its Endpoints, as a real API server keeps them: the Service
(cluster IP 10.96.0.1, port 443 named `https`) and Endpoints naming where the server is reached from the
pods (the node's forwarder on the pod bridge, or the server's own address on the host network). Written on
every start, so Endpoints follow the address and port of this run; Service names in pods' hosts files
come from these Endpoints.
"""

from __future__ import annotations

from typing import Any

from localkube.server.rest import Resources, clone

NAME = "kubernetes"
NAMESPACE = "default"
CLUSTER_IP = "10.96.0.1"


def publish(resources: Resources, address: str, port: int) -> None:
    """Creates the Service unless it exists, and makes its Endpoints name `address:port`."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": CLUSTER_IP,
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    }  # fmt: skip
    endpoints: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": address}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    }  # fmt: skip
    resources.seed([service])
    endpoints_type = resources.registry.by_kind("", "v1", "Endpoints")
    assert endpoints_type is not None
    current = resources.store.get(endpoints_type.key(NAMESPACE, NAME))
    if current is None:
        resources.seed([endpoints])
    elif current.get("subsets") != endpoints["subsets"]:
        updated = {**clone(current), "subsets": endpoints["subsets"]}
        resources.store.update(
            endpoints_type.key(NAMESPACE, NAME), updated, int(current["metadata"]["resourceVersion"])
        )
