"""examples/: every file passes `kuberay validate` (run as a user runs it) and applies with `kubectl`; together
they cover what the README promises (a minimal cluster, the autoscaler, GCS fault tolerance, a RayJob in
each submission mode, a RayService, a RayCronJob, the batch schedulers). Running them on real Ray is
tests/e2e/test_examples_run.py's job."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from typing import Any

import yaml

from support.local_instance import EXAMPLES, kuberay

FILES = sorted(EXAMPLES.glob("*.yaml"))


def _documents() -> list[dict[str, Any]]:
    return [doc for path in FILES for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_every_example_is_valid() -> None:
    files = [arg for path in FILES for arg in ("-f", str(path))]
    result = kuberay("validate", *files, "--feature-gates", "RayCronJob=true,RayClusterMTLS=true")
    assert result.returncode == 0, result.stdout + result.stderr
    ray_objects = [doc for doc in _documents() if doc["apiVersion"].startswith("ray.io/")]
    assert sorted(result.stdout.splitlines()) == sorted(
        f"{doc['kind']}/{doc['metadata']['name']}: ok" for doc in ray_objects
    )


def test_the_examples_cover_the_walk_through() -> None:
    documents = _documents()
    kinds = {doc["kind"] for doc in documents}
    assert {"RayCluster", "RayJob", "RayService", "RayCronJob"} <= kinds
    modes = {doc["spec"].get("submissionMode", "K8sJobMode") for doc in documents if doc["kind"] == "RayJob"}
    assert modes == {"K8sJobMode", "HTTPMode", "SidecarMode", "InteractiveMode"}
    clusters = [doc["spec"] for doc in documents if doc["kind"] == "RayCluster"]
    assert any(spec.get("enableInTreeAutoscaling") for spec in clusters)
    assert any(spec.get("gcsFaultToleranceOptions") for spec in clusters)
    labels = [doc["metadata"].get("labels") or {} for doc in documents if doc["kind"] == "RayCluster"]
    assert any("volcano.sh/queue-name" in label for label in labels)
    assert any("yunikorn.apache.org/queue" in label for label in labels)


def test_every_example_applies(localkube: Any) -> None:
    namespace = f"examples-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "KUBECONFIG": str(localkube.kubeconfig)}

    def kubectl(*args: str) -> str:
        result = subprocess.run(["kubectl", *args], capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout

    kubectl("create", "namespace", namespace)
    kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))
    stored = json.loads(kubectl("get", "rayclusters,rayjobs,rayservices,raycronjobs,secrets", "-n", namespace,
                                "-o", "json"))["items"]  # fmt: skip
    expected = {(doc["kind"], doc["metadata"]["name"]) for doc in _documents()}
    assert expected <= {(obj["kind"], obj["metadata"]["name"]) for obj in stored}


def test_no_example_needs_files_outside_the_repository() -> None:
    """A user's clone has nothing beside it: the examples name no file outside the repository and mount
    nothing of the machine (an emptyDir shared by a pod's containers is the pod's own)."""
    for path in FILES:
        text = path.read_text()
        assert "../" not in text and "hostPath" not in text, path.name
