"""`kuberay local up --monitoring`: a real Prometheus (Debian's `prometheus` package, found on the PATH)
scraping the operator and every Ray pod of the local cluster.

Its configuration is written to `DIR/prometheus/prometheus.yml` and its data kept in `DIR/prometheus/data`;
it listens on a free port of 127.0.0.1. Two jobs: `kuberay-operator` (the operator's metrics address) and
`ray-pods`. Debian builds Prometheus without its Kubernetes discovery, so the Ray pods reach it through file
discovery instead: `RayPodTargets` lists the pods labelled `ray.io/node-type` head or worker from the API
server every few seconds and rewrites `DIR/prometheus/ray-pods.json` with their container ports named
`metrics`, `as-metrics` and `dash-metrics` (as the PodMonitors of deploy/prometheus select them), labelled
`namespace`, `pod`, `ray_io_cluster` and `ray_io_node_type`. Simulated pods run nothing, so their targets
are down; in process mode they are Ray.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from kuberay.local.errors import LocalModeError
from kuberay.runtime.client import Client, load_config
from kuberay.runtime.errors import KubeError
from kuberay.runtime.resources import POD

log = logging.getLogger("local")

SCRAPE_INTERVAL = "5s"
REFRESH_SECONDS = 5.0
RAY_PORTS = ("metrics", "as-metrics", "dash-metrics")
RAY_POD_SELECTOR = "ray.io/node-type in (head,worker)"
TARGETS_FILE = "ray-pods.json"


class MonitoringError(LocalModeError):
    """Prometheus cannot be started; the message says why and what to do."""


def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        raise MonitoringError(
            "--monitoring needs Prometheus: install Debian's package (`apt-get install prometheus`) or put a "
            "`prometheus` binary on the PATH"
        )
    return found


def configuration(operator_metrics: str, targets_file: Path) -> dict[str, Any]:
    """Prometheus's configuration: the operator at `operator_metrics` (host:port), the Ray pods from the file."""
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": [
            {"job_name": "kuberay-operator", "static_configs": [{"targets": [operator_metrics]}]},
            {
                "job_name": "ray-pods",
                "file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": SCRAPE_INTERVAL}],
            },  # fmt: skip
        ],
    }


def target_groups(pods: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """File-discovery target groups: one per metrics port of a Ray pod that has an address."""
    groups = []
    for pod in pods:
        metadata, address = pod.get("metadata") or {}, (pod.get("status") or {}).get("podIP")
        labels = metadata.get("labels") or {}
        if not address or labels.get("ray.io/node-type") not in ("head", "worker"):
            continue
        for container in (pod.get("spec") or {}).get("containers") or []:
            for port in container.get("ports") or []:
                if port.get("name") in RAY_PORTS:
                    groups.append(
                        {
                            "targets": [f"{address}:{port['containerPort']}"],
                            "labels": {
                                "namespace": metadata.get("namespace", ""),
                                "pod": metadata.get("name", ""),
                                "ray_io_cluster": labels.get("ray.io/cluster", ""),
                                "ray_io_node_type": labels["ray.io/node-type"],
                            },
                        }
                    )
    return groups


def command(binary: str, directory: Path, port: int) -> list[str]:
    """The command line of a Prometheus whose configuration is `directory/prometheus.yml`."""
    return [
        binary,
        f"--config.file={directory / 'prometheus.yml'}",
        f"--storage.tsdb.path={directory / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]


def write_configuration(directory: Path, operator_metrics: str) -> Path:
    """Writes the configuration and an empty targets file; returns the targets file."""
    directory.mkdir(parents=True, exist_ok=True)
    targets = directory / TARGETS_FILE
    _write_atomically(targets, "[]")
    (directory / "prometheus.yml").write_text(yaml.safe_dump(configuration(operator_metrics, targets)))
    return targets


def _write_atomically(path: Path, text: str) -> None:
    # Prometheus watches the file: it must never read a half-written one.
    staging = path.with_suffix(".tmp")
    staging.write_text(text)
    staging.replace(path)


class RayPodTargets:
    """Keeps the targets file current from a daemon thread (it ends with the launcher)."""

    def __init__(self, kubeconfig: Path, targets_file: Path) -> None:
        self._kubeconfig = kubeconfig
        self._targets_file = targets_file

    def start(self) -> None:
        threading.Thread(target=asyncio.run, args=(self._run(),), name="ray-pod-targets", daemon=True).start()

    async def _run(self) -> None:
        client = Client.from_config(load_config(str(self._kubeconfig)), timeout=5.0)
        while True:
            try:
                pods = await client.list_all(POD, label_selector=RAY_POD_SELECTOR)
                _write_atomically(self._targets_file, json.dumps(target_groups(pods.items)))
            except (KubeError, OSError) as e:
                log.debug("cannot refresh the Ray pods' metrics targets: %s", e)
            await asyncio.sleep(REFRESH_SECONDS)
