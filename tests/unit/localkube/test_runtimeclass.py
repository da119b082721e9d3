"""node.k8s.io/v1 RuntimeClass is served (cluster-scoped, as kube-apiserver serves it): Kueue's workload
controller watches it (for the pods' overhead) and its manager exits when that watch's cache never syncs."""

from __future__ import annotations

from localkube.server.rest import Resources


async def test_runtimeclasses_are_served_cluster_scoped(cluster: Resources) -> None:
    runtimeclasses = cluster.registry.by_resource("node.k8s.io", "runtimeclasses")
    assert runtimeclasses is not None
    assert (runtimeclasses.version, runtimeclasses.kind, runtimeclasses.namespaced) == (
        "v1",
        "RuntimeClass",
        False,
    )
    body = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "gvisor"},
        "handler": "runsc",
        "overhead": {"podFixed": {"cpu": "250m"}},
    }
    cluster.create(runtimeclasses, None, body, {})
    stored = cluster.get(runtimeclasses, None, "gvisor")
    assert (stored["handler"], stored["overhead"]) == ("runsc", {"podFixed": {"cpu": "250m"}})
