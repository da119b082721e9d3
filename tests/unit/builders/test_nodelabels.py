"""Node Label Delivery's mutations (kuberay.builders.nodelabels): on a worker pod the pod builder makes, the
pods CREATE patch adds the downward API env var and the labels file step before KubeRay's `ray start`; that
line, run by bash with a stand-in `ray`, starts Ray with `--labels-file` holding the delivered JSON, and
exits before `ray start` when nothing was delivered. The binding patch and the delivery of allowed labels.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from kuberay.api.raycluster import RayCluster
from kuberay.builders import nodelabels, pod
from localkube.patch import json_patch

MAPPINGS = [{"nodeLabel": "example.com/rack", "mapTo": "rack"}, {"nodeLabel": "topology.kubernetes.io/zone"}]


def cluster() -> RayCluster:
    container = {"name": "ray-worker", "image": "rayproject/ray:2.49.0"}
    return RayCluster.parse({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "topo", "namespace": "ns"},
        "spec": {
            "rayVersion": "2.49.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{**container, "name": "ray-head"}]}}},
            "workerGroupSpecs": [{"groupName": "train", "replicas": 1, "minReplicas": 1, "maxReplicas": 1, "labelMappings": MAPPINGS, "rayStartParams": {}, "template": {"spec": {"containers": [container]}}}],
        },
    })  # fmt: skip


def worker() -> dict[str, Any]:
    built = cluster()
    worker_pod: dict[str, Any] = pod.build_worker_pod(
        built, built.spec.worker_group_specs[0], pod.PodOptions()
    )  # type: ignore[index]
    return worker_pod


def test_the_pod_patch_adds_the_env_var_and_the_labels_file_before_kuberays_ray_start() -> None:
    original = worker()
    assert nodelabels.worker_group(original) == ("topo", "train")
    patched = json_patch(original, nodelabels.pod_patch(original))
    ray = patched["spec"]["containers"][0]
    assert ray["env"][-1] == {
        "name": "RAY_NODE_LABELS_JSON",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['ray.io/topology-labels']"}},
    }
    line = ray["args"][0]
    assert "ray start --labels-file=/tmp/ray-labels.yaml " in line
    # Everything else of the generated line is kept, in its place.
    before = original["spec"]["containers"][0]["args"][0]
    assert line.replace("--labels-file=/tmp/ray-labels.yaml ", "").endswith(before.split("; ", 1)[1])
    assert line.startswith(before.split("; ", 1)[0])
    # Once is enough (a reinvoked webhook changes nothing).
    assert nodelabels.pod_patch(patched) == []


def run(line: str, tmp_path: Path, delivered: str | None) -> subprocess.CompletedProcess[str]:
    # A stand-in `ray` that prints its arguments and the labels file; /tmp/ray-labels.yaml redirected.
    (tmp_path / "ray").write_text('#!/bin/sh\necho "ray $*"\ncat "$TMPFILE"\n')
    (tmp_path / "ray").chmod(0o755)
    labels_file = tmp_path / "ray-labels.yaml"
    script = line.replace("/tmp/ray-labels.yaml", str(labels_file))
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}", "TMPFILE": str(labels_file)}
    if delivered is not None:
        env["RAY_NODE_LABELS_JSON"] = delivered
    return subprocess.run(["/bin/bash", "-c", "--", script], env=env, capture_output=True, text=True, timeout=30)  # fmt: skip


def test_the_rewritten_line_starts_ray_with_the_delivered_labels_and_refuses_without(tmp_path: Path) -> None:
    original = worker()
    line = json_patch(original, nodelabels.pod_patch(original))["spec"]["containers"][0]["args"][0]
    delivered = json.dumps({"rack": "r7", "topology.kubernetes.io/zone": "z1"})
    done = run(line, tmp_path, delivered)
    assert done.returncode == 0, done.stderr
    first, labels = done.stdout.splitlines()[0], done.stdout.splitlines()[1]
    assert first.startswith("ray start --labels-file=")
    assert json.loads(labels) == {"rack": "r7", "topology.kubernetes.io/zone": "z1"}
    for missing in (None, ""):
        refused = run(line, tmp_path, missing)
        assert refused.returncode == 1
        assert "ray start" not in refused.stdout
        assert (
            "no node labels were delivered to this pod (annotation ray.io/topology-labels)" in refused.stderr
        )
        assert "RequiredNodeLabelMissing" in refused.stderr


def test_other_pods_are_not_patched() -> None:
    head = pod.build_head_pod(cluster(), pod.PodOptions())
    assert nodelabels.worker_group(head) is None
    overwritten = worker()
    overwritten["spec"]["containers"][0]["args"] = ["python serve.py"]
    assert nodelabels.pod_patch(overwritten) == []


def test_delivery_of_allowed_labels_under_their_ray_keys() -> None:
    node = {"example.com/rack": "r7", "topology.kubernetes.io/zone": "z1", "other": "x"}
    allowed = ["example.com/rack", "topology.kubernetes.io/zone"]
    assert nodelabels.delivery(MAPPINGS, node, allowed) == nodelabels.Delivery(
        {"rack": "r7", "topology.kubernetes.io/zone": "z1"}, ()
    )
    assert nodelabels.delivery(MAPPINGS, {"example.com/rack": "r7"}, allowed).missing == (
        "topology.kubernetes.io/zone",
    )
    # A label the allowlist does not (or no longer) allow is not delivered.
    assert nodelabels.delivery(MAPPINGS, node, ["example.com/rack"]).missing == (
        "topology.kubernetes.io/zone",
    )


def test_the_binding_patch_writes_the_annotation() -> None:
    labels = {"rack": "r7", "a": "b"}
    bare = {"kind": "Binding", "metadata": {"name": "p"}, "target": {"name": "n"}}
    annotated = json_patch(bare, nodelabels.binding_patch(bare, labels))
    assert annotated["metadata"]["annotations"] == {"ray.io/topology-labels": '{"a":"b","rack":"r7"}'}
    kept = {**bare, "metadata": {"name": "p", "annotations": {"own": "x"}}}
    both = json_patch(kept, nodelabels.binding_patch(kept, labels))
    assert both["metadata"]["annotations"] == {"own": "x", "ray.io/topology-labels": '{"a":"b","rack":"r7"}'}
