"""Reading the pod golden cases: `options` (PodOptions in camelCase), `worker` (multi-host indices) and
`cluster` (a RayCluster)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kuberay.api.features import FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.builders import pod
from support import golden

DIRECTORY = Path(__file__).parent / "testdata" / "pod"
_TUPLES = ("default_container_envs", "head_sidecar_containers", "worker_sidecar_containers")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def load(path: Path) -> tuple[RayCluster, pod.PodOptions, dict[str, Any]]:
    case = golden.load(path)
    raw = dict(case.get("options") or {})
    gates = FeatureGates.from_mapping(raw.pop("featureGates", {}))
    fields = {snake(key): tuple(value) if snake(key) in _TUPLES else value for key, value in raw.items()}
    worker = {snake(key): value for key, value in (case.get("worker") or {}).items()}
    return RayCluster.parse(case["cluster"]), pod.PodOptions(feature_gates=gates, **fields), worker


def build_all(path: Path) -> dict[str, Any]:
    cluster, options, worker = load(path)
    workers = {
        group.group_name: pod.build_worker_pod(cluster, group, options, **worker)
        for group in cluster.spec.worker_group_specs or ()
    }
    return {"head": pod.build_head_pod(cluster, options), "workers": workers}
