"""Oversized objects are refused as a real API server refuses them, and refusing one loses nothing.

A body over 3 MiB is a 413 `Request entity too large: limit is 3145728`; an object that would be stored
larger than etcd's 1.5 MiB is a 500 `etcdserver: request is too large` (the API server passes etcd's error
on). Seen through plain HTTP and the real kubectl, for a ConfigMap and a RayCluster."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.support import run_kubectl
from support.localkube_process import LocalKubeProcess

REPO = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024


def _config_map(name: str, size: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"blob": "x" * size}}


def test_bodies_over_3_mib_are_413_and_objects_over_1_5_mib_are_etcds_500(
    localkube: LocalKubeProcess, namespace: str
) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    with localkube.client(timeout=60) as api:
        huge = api.post(url, json=_config_map("huge", 3 * MIB + 10))
        assert huge.status_code == 413
        assert huge.json() == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Request entity too large: limit is 3145728", "reason": "RequestEntityTooLarge", "code": 413,
        }  # fmt: skip
        big = api.post(url, json=_config_map("big", 2 * MIB))
        assert big.status_code == 500
        assert big.json() == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "etcdserver: request is too large", "code": 500,
        }  # fmt: skip
        assert api.get(f"{url}/big").status_code == 404
        # An update that would grow an object past the limit leaves the stored one as it was.
        kept = api.post(url, json=_config_map("kept", 10)).json()
        grown = api.put(f"{url}/kept", json={**kept, "data": {"blob": "y" * (2 * MIB)}})
        assert grown.status_code == 500
        patched = api.patch(
            f"{url}/kept",
            content=json.dumps({"data": {"more": "z" * (2 * MIB)}}),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status_code == 500
        assert api.get(f"{url}/kept").json() == kept
        # Just under the limit is stored.
        assert api.post(url, json=_config_map("fits", MIB)).status_code == 201


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on the PATH")
def test_kubectl_sees_the_api_servers_words_for_an_oversized_raycluster(
    localkube: LocalKubeProcess, namespace: str, tmp_path: Path
) -> None:
    cluster = yaml.safe_load((REPO / "examples" / "ray-cluster.minimal.yaml").read_text())
    container = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    manifest = tmp_path / "raycluster.yaml"
    for size, expected in (
        (2 * MIB, "Error from server: error when creating"),
        (4 * MIB, "Error from server (RequestEntityTooLarge): error when creating"),
    ):
        container["env"] = [{"name": "PAYLOAD", "value": "x" * size}]
        manifest.write_text(yaml.safe_dump(cluster))
        refused = run_kubectl(localkube, "create", "-n", namespace, "-f", str(manifest), check=False)
        assert refused.returncode != 0
        assert expected in refused.stderr
        words = (
            "etcdserver: request is too large"
            if size < 3 * MIB
            else "Request entity too large: limit is 3145728"
        )
        assert words in refused.stderr
    listed = run_kubectl(localkube, "get", "rayclusters", "-n", namespace, "-o", "name").stdout
    assert listed.strip() == ""
