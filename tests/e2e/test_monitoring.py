"""`kuberay local up --monitoring`: a real Prometheus (Debian's, installed by scripts/tools/prometheus)
scrapes the operator and finds the Ray pods through localkube; PromQL queries for the operator's series of
the sample cluster return them. Simulate mode: the pods run no Ray, so only their discovery is checked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.eventually import eventually
from support.local_instance import EXAMPLES, KUBECTL_POLL, REPO, LocalInstance


@pytest.fixture(scope="module")
def prometheus_dir() -> str:
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "tools" / "prometheus")], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        pytest.fail(f"cannot install Prometheus:\n{done.stderr}")
    return str(Path(done.stdout.strip()).parent)


def _query(url: str, promql: str) -> list[dict[str, Any]]:
    reply = httpx.get(f"{url}/api/v1/query", params={"query": promql}, timeout=10).json()
    assert reply["status"] == "success", reply
    result: list[dict[str, Any]] = reply["data"]["result"]
    return result


def test_prometheus_scrapes_the_operator_and_finds_the_ray_pods(tmp_path: Path, prometheus_dir: str) -> None:
    path = f"{prometheus_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    with LocalInstance(tmp_path / "monitored", "--port", "0", "--monitoring", env={"PATH": path}) as local:
        status = local.status()
        assert status is not None
        url = status["prometheus"]
        assert url in local.log()
        local.kubectl("apply", "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
        info = eventually(
            lambda: _query(url, 'kuberay_cluster_info{name="minimal"}'),
            120,
            "kuberay_cluster_info",
            every=KUBECTL_POLL,
        )
        assert info[0]["metric"]["job"] == "kuberay-operator"
        assert info[0]["metric"]["namespace"] == "default"
        reconciles = eventually(
            lambda: _query(url, 'controller_runtime_reconcile_total{controller="raycluster"}'),
            120,
            "reconciles",
            every=KUBECTL_POLL,
        )
        assert {series["metric"]["result"] for series in reconciles} <= {
            "success",
            "error",
            "requeue",
            "requeue_after",
        }

        def ray_targets() -> list[dict[str, Any]]:
            targets = httpx.get(f"{url}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
            return [t for t in targets if t["labels"]["job"] == "ray-pods"]

        found = eventually(
            lambda: len(ray_targets()) >= 2 and ray_targets(),
            120,
            "the head and worker as targets",
            every=KUBECTL_POLL,
        )
        assert {t["labels"]["ray_io_cluster"] for t in found} == {"minimal"}
        assert any(t["labels"]["pod"].startswith("minimal-head") for t in found)
