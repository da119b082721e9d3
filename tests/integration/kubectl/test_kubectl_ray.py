"""`kubectl ray` through the real kubectl against localkube (simulate mode) and the operator: what the plugin
prints and writes, upstream's columns and messages, and its error paths with a non-zero exit."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import httpx
import yaml

from integration.kubectl import tables
from integration.kubectl.conftest import RayCli, run_plugin
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

RAYCLUSTERS = "/apis/ray.io/v1/namespaces/{ns}/rayclusters"
AGE = re.compile(r"^\d+s$")


def ok(done: Any) -> str:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return str(done.stdout)


def fails(done: Any, message: str) -> None:
    assert done.returncode != 0, (done.stdout, done.stderr)
    assert f"Error: {message}" in done.stderr, done.stderr


def get_cluster(api: httpx.Client, namespace: str, name: str) -> dict[str, Any]:
    response = api.get(f"{RAYCLUSTERS.format(ns=namespace)}/{name}")
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def test_version_without_and_with_an_operator_deployment(
    ray_cli: RayCli, api: httpx.Client, namespace: str
) -> None:
    lines = ok(ray_cli("version")).splitlines()
    assert lines[0].startswith("kubectl ray plugin version: ")
    if not api.get(
        "/apis/apps/v1/deployments?labelSelector=app.kubernetes.io/name%3Dkuberay-operator"
    ).json()["items"]:
        assert lines[1] == (
            "warning: KubeRay operator installation cannot be found: no KubeRay operator deployments found in "
            'any namespace. Did you install it with the name "kuberay-operator"?'
        )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "kuberay-operator", "labels": {"app.kubernetes.io/name": "kuberay-operator"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "op"}},
            "template": {
                "metadata": {"labels": {"app": "op"}},
                "spec": {"containers": [{"name": "op", "image": "quay.io/kuberay/operator:v1.5.0"}]},
            },
        },
    }
    api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", json=deployment).raise_for_status()
    try:
        assert ok(ray_cli("version")).splitlines()[1] == "KubeRay operator version: v1.5.0"
    finally:
        api.delete(f"/apis/apps/v1/namespaces/{namespace}/deployments/kuberay-operator")


def test_create_cluster_dry_run_prints_upstreams_object(ray_cli: RayCli, namespace: str) -> None:
    printed = ok(ray_cli("create", "cluster", "demo", "--worker-replicas", "2", "--dry-run"))
    assert printed.endswith("\n\n")
    image = "rayproject/ray:2.52.0"
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}
    assert yaml.safe_load(printed) == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo", "namespace": namespace},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": image,
                                "resources": resources,
                                "ports": [
                                    {"containerPort": 6379, "name": "gcs-server"},
                                    {"containerPort": 8265, "name": "dashboard"},
                                    {"containerPort": 10001, "name": "client"},
                                ],
                            }
                        ]
                    }
                }
            },
            "workerGroupSpecs": [
                {
                    "groupName": "default-group",
                    "replicas": 2,
                    "numOfHosts": 1,
                    "template": {
                        "spec": {
                            "containers": [{"name": "ray-worker", "image": image, "resources": resources}]
                        }
                    },
                }
            ],
        },
    }
    # A changed --ray-version moves the default image with it; --autoscaler is case-insensitive.
    other = yaml.safe_load(
        ok(ray_cli("create", "cluster", "demo", "--ray-version", "2.46.0", "--autoscaler", "V2", "--dry-run"))
    )
    assert (
        other["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]
        == "rayproject/ray:2.46.0"
    )
    assert other["spec"]["enableInTreeAutoscaling"] is True
    assert other["spec"]["autoscalerOptions"] == {"version": "v2"}


def test_create_cluster_from_a_config_file(ray_cli: RayCli, namespace: str, tmp_path: Any) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "name: from-file\nhead:\n  gpu: 1\nworker-groups:\n- cpu: 3\n  replicas: 2\n- name: big\n  memory: 8Gi\n"
    )
    cluster = yaml.safe_load(ok(ray_cli("create", "cluster", "--file", str(config), "--dry-run")))
    assert cluster["metadata"]["name"] == "from-file"
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]
    assert head == {"requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
                    "limits": {"memory": "4Gi", "nvidia.com/gpu": "1"}}  # fmt: skip
    groups = cluster["spec"]["workerGroupSpecs"]
    assert [(g["groupName"], g["replicas"]) for g in groups] == [("default-group", 2), ("big", 0)]
    assert groups[0]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "3"},
        "limits": {},
    }
    fails(ray_cli("create", "cluster", "--file", str(config), "--head-cpu", "3"),
          "the following flags are incompatible with --file: [head-cpu]")  # fmt: skip
    # As Go's %v prints the slice cobra's flag visit builds: sorted, space-separated.
    fails(ray_cli("create", "cluster", "--file", str(config), "--worker-cpu", "1", "--labels", "a=b", "--wait"),
          "the following flags are incompatible with --file: [labels worker-cpu]")  # fmt: skip
    config.write_text("worker-groups:\n- cpu: 1\n  colour: red\n")
    done = ray_cli("create", "cluster", "x", "--file", str(config))
    fails(done, "failed to parse config file")
    assert "worker-groups.0.colour" in done.stderr


def test_create_errors(ray_cli: RayCli) -> None:
    assert "workergroup" in ok(ray_cli("get"))  # a group without a subcommand shows its help
    fails(
        ray_cli("create", "cluster", "bad", "--worker-cpu", "two"),
        "worker-cpu is not a valid resource quantity",
    )
    fails(ray_cli("create", "cluster", "bad", "--head-memory", "-1Gi"), "head-memory cannot be negative")
    fails(
        ray_cli("create", "cluster", "tpu", "--worker-tpu", "4"),
        "cloud.google.com/gke-tpu-accelerator is not set in --worker-node-selectors",
    )
    fails(ray_cli("scale", "cluster", "demo", "-w", "g"), "must specify at least one of --replicas, --min-replicas, or --max-replicas")  # fmt: skip
    fails(ray_cli("scale", "cluster", "demo", "-w", "g", "--min-replicas", "3", "--max-replicas", "2"),
          "--min-replicas (3) cannot be greater than --max-replicas (2)")  # fmt: skip
    assert ray_cli("delete", "rayfoo/x", "-y").returncode != 0


def test_cluster_lifecycle(
    ray_cli: RayCli, operator: OperatorProcess, api: httpx.Client, namespace: str, localkube: LocalKubeProcess
) -> None:
    assert ok(ray_cli("get", "cluster")) == ""  # no rows: not even a header
    created = ok(ray_cli("create", "cluster", "demo", "--worker-replicas", "2", "--wait", "--timeout", "2m"))
    assert created == "Created Ray cluster: demo\nRay cluster demo is provisioned\n"
    managers = {m["manager"] for m in get_cluster(api, namespace, "demo")["metadata"]["managedFields"]}
    assert "ray-kubectl-plugin" in managers
    fails(
        ray_cli("create", "cluster", "demo"), f"the Ray cluster demo in namespace {namespace} already exists"
    )

    # Tab completion: kubectl runs kubectl_complete-ray, which offers the namespace's clusters.
    completion = run_plugin(localkube.kubeconfig, "ray", "scale", "cluster", "-n", namespace, "de",
                            kubectl=("kubectl", "__complete"))  # fmt: skip
    assert completion.stdout.splitlines() == ["demo", ":4"], (completion.stdout, completion.stderr)

    text = ok(ray_cli("get", "cluster"))
    tables.assert_layout(text)
    assert [name for name, _ in tables.columns(text.splitlines()[0])] == [
        "NAME", "NAMESPACE", "DESIRED WORKERS", "AVAILABLE WORKERS", "CPUS", "GPUS", "TPUS", "MEMORY",
        "CONDITION", "STATUS", "AGE"]  # fmt: skip
    [row] = tables.parse(text)
    assert row["NAME"] == "demo" and row["NAMESPACE"] == namespace
    assert (row["DESIRED WORKERS"], row["AVAILABLE WORKERS"]) == ("2", "2")
    # The head's 2 CPUs and 4Gi and two workers' as much each.
    assert (row["CPUS"], row["GPUS"], row["TPUS"], row["MEMORY"]) == ("6", "0", "0", "12Gi")
    assert (row["CONDITION"], row["STATUS"]) == ("RayClusterProvisioned", "ready")
    assert AGE.match(row["AGE"])

    text = ok(ray_cli("get", "nodes", "-c", "demo"))
    tables.assert_layout(text)
    nodes = tables.parse(text)
    assert sorted((n["TYPE"], n["WORKER GROUP"]) for n in nodes) == [
        ("head", "headgroup"), ("worker", "default-group"), ("worker", "default-group")]  # fmt: skip
    assert {(n["CPUS"], n["GPUS"], n["TPUS"], n["MEMORY"], n["CLUSTER"]) for n in nodes} == {
        ("2", "0", "0", "4Gi", "demo")
    }
    everywhere = ok(ray_cli("get", "nodes", "-A", "-c", "demo"))
    assert tables.columns(everywhere.splitlines()[0])[0][0] == "NAMESPACE"
    assert namespace in {n["NAMESPACE"] for n in tables.parse(everywhere)}
    head = next(n for n in nodes if n["TYPE"] == "head")["NAME"]
    [one] = tables.parse(ok(ray_cli("get", "node", head, "-c", "demo")))
    assert one["NAME"] == head
    fails(ray_cli("get", "node", "nope", "-c", "demo"), f"Ray node nope not found in namespace {namespace} in Ray cluster demo")  # fmt: skip

    text = ok(ray_cli("get", "workergroups", "-c", "demo"))
    tables.assert_layout(text)
    assert tables.parse(text) == [{"NAME": "default-group", "MIN": "0", "MAX": "2147483647", "REPLICAS": "2/2",
                                   "CPUS": "4", "GPUS": "0", "TPUS": "0", "MEMORY": "8Gi", "CLUSTER": "demo"}]  # fmt: skip

    wide = tables.parse(ok(ray_cli("get", "cluster", "demo", "-o", "wide")))[0]
    status = get_cluster(api, namespace, "demo")["status"]
    assert (wide["HEAD POD IP"], wide["HEAD SERVICE IP"]) == (
        status["head"]["podIP"],
        status["head"].get("serviceIP", ""),
    )
    assert json.loads(ok(ray_cli("get", "cluster", "demo", "-o", "json")))["metadata"]["name"] == "demo"
    listed = yaml.safe_load(ok(ray_cli("get", "cluster", "-o", "yaml")))
    assert [c["metadata"]["name"] for c in listed["items"]] == ["demo"]

    assert ok(ray_cli("scale", "cluster", "demo", "-w", "default-group", "-r", "3")) == (
        f"Updated worker group default-group in Ray cluster demo in namespace {namespace} (Scaled Replicas: 2 to 3)\n"
    )
    assert get_cluster(api, namespace, "demo")["spec"]["workerGroupSpecs"][0]["replicas"] == 3
    assert ok(ray_cli("scale", "cluster", "demo", "-w", "default-group", "-r", "3")) == (
        f"Worker group default-group in Ray cluster demo in namespace {namespace} already matches the requested "
        "configuration. Skipping.\n"
    )
    fails(ray_cli("scale", "cluster", "demo", "-w", "gpu", "-r", "1"),
          f"worker group gpu not found in Ray cluster demo in namespace {namespace}. Available worker groups: default-group")  # fmt: skip
    fails(ray_cli("scale", "cluster", "demo", "-w", "default-group", "--max-replicas", "1"),
          "cannot set --replicas (3) greater than --max-replicas (1)")  # fmt: skip

    assert ok(
        ray_cli("create", "workergroup", "extra", "-c", "demo", "--worker-cpu", "1", "--worker-memory", "1Gi")
    ) == (f"Updated Ray cluster {namespace}/demo with new worker group\n")
    extra = get_cluster(api, namespace, "demo")["spec"]["workerGroupSpecs"][1]
    assert (extra["groupName"], extra["replicas"], extra["minReplicas"], extra["maxReplicas"]) == (
        "extra",
        1,
        1,
        10,
    )
    assert extra["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}  # fmt: skip
    [group] = tables.parse(ok(ray_cli("get", "workergroup", "extra", "-c", "demo")))
    assert (group["MIN"], group["MAX"], group["CPUS"], group["MEMORY"]) == ("1", "10", "1", "1Gi")
    fails(ray_cli("get", "workergroup", "none"), f"Ray worker group none not found in namespace {namespace} in any Ray cluster")  # fmt: skip

    assert ok(ray_cli("delete", "demo", input="n\n")).endswith("Canceled deletion.\n")
    assert ok(ray_cli("delete", "demo", "-y")) == "Deleted raycluster demo\n"
    assert api.get(f"{RAYCLUSTERS.format(ns=namespace)}/demo").status_code == 404
    fails(ray_cli("get", "cluster", "demo"), f"Ray cluster demo not found in namespace {namespace}")
    fails(ray_cli("delete", "demo", "-y"), "failed to delete raycluster/demo")


def test_get_token(ray_cli: RayCli, operator: OperatorProcess, api: httpx.Client, namespace: str) -> None:
    manifest = yaml.safe_load(ok(ray_cli("create", "cluster", "auth", "--worker-replicas", "0", "--dry-run")))
    api.post(RAYCLUSTERS.format(ns=namespace), json=manifest).raise_for_status()
    fails(ray_cli("get", "token", "auth"), f"RayCluster {namespace}/auth was not configured to use authentication tokens")  # fmt: skip
    api.delete(f"{RAYCLUSTERS.format(ns=namespace)}/auth")

    manifest["metadata"]["name"] = "tok"
    manifest["spec"]["authOptions"] = {"mode": "token"}
    manifest["spec"]["rayVersion"] = "2.52.0"
    api.post(RAYCLUSTERS.format(ns=namespace), json=manifest).raise_for_status()
    secret = eventually(
        lambda: (
            (reply := api.get(f"/api/v1/namespaces/{namespace}/secrets/tok")).status_code != 404 and reply
        ),
        60,
        "the operator's token Secret",
        every=0.2,
    )
    expected = base64.b64decode(secret.json()["data"]["auth_token"]).decode()
    assert ok(ray_cli("get", "token", "tok")) == expected  # printed without a newline


def test_missing_crds_and_rbac_refusals(localkube_factory: Any, localkube: LocalKubeProcess, api: httpx.Client, namespace: str, tmp_path: Any) -> None:  # fmt: skip
    bare = localkube_factory()  # no ray.io CRDs installed
    done = run_plugin(bare.kubeconfig, "get", "cluster")
    fails(
        done,
        "unable to retrieve Ray clusters for namespace default: the server does not serve rayclusters.ray.io",
    )
    assert "KubeRay CRDs are not installed" in done.stderr

    # A ServiceAccount with no role at all.
    api.post(
        f"/api/v1/namespaces/{namespace}/serviceaccounts", json={"metadata": {"name": "nobody"}}
    ).raise_for_status()
    token = api.post(
        f"/api/v1/namespaces/{namespace}/serviceaccounts/nobody/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    ).json()["status"]["token"]
    config = yaml.safe_load(localkube.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token}
    kubeconfig = tmp_path / "nobody"
    kubeconfig.write_text(yaml.safe_dump(config))
    done = run_plugin(kubeconfig, "get", "cluster", "-n", namespace)
    fails(done, f"unable to retrieve Ray clusters for namespace {namespace}")
    assert "forbidden" in done.stderr and f"system:serviceaccount:{namespace}:nobody" in done.stderr


def test_job_submit_checks_and_dry_run(ray_cli: RayCli, namespace: str, tmp_path: Any) -> None:
    done = ray_cli("job", "submit", "--name", "j", "--working-dir", str(tmp_path), "--worker-replicas", "0",
                   "--dry-run", "--", "python", "-c", "print(1)")  # fmt: skip
    text = ok(done)
    first, rest = text.split("\n", 1)
    assert first.startswith("Generated submission ID for Ray job: raysubmit_")
    job_id = first.rsplit(" ", 1)[1]
    assert len(job_id) == len("raysubmit_") + 16
    rayjob = yaml.safe_load(rest)
    assert rayjob["kind"] == "RayJob" and rayjob["metadata"] == {"name": "j", "namespace": namespace}
    spec = rayjob["spec"]
    assert (spec["submissionMode"], spec["entrypoint"], spec["jobId"]) == (
        "InteractiveMode",
        "python -c print(1)",
        job_id,
    )
    assert spec["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"] == "default-group"

    fails(ray_cli("job", "submit", "--working-dir", str(tmp_path), "--", "python", "a.py"),
          "Must set either yaml file (--filename) or set Ray job name (--name)")  # fmt: skip
    fails(ray_cli("job", "submit", "--name", "j", "--", "python", "a.py"),
          "working directory is required, use --working-dir or set with runtime env")  # fmt: skip
    manifest = tmp_path / "rayjob.yaml"
    manifest.write_text(
        "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: k}\nspec: {submissionMode: K8sJobMode}\n"
    )
    fails(ray_cli("job", "submit", "-f", str(manifest), "--working-dir", str(tmp_path), "--", "python", "a.py"),
          "Submission mode of the Ray Job must be set to 'InteractiveMode'")  # fmt: skip
    fails(ray_cli("job", "submit", "--name", "j", "--working-dir", str(tmp_path), "--head-cpu", "x", "--", "python"),
          "head-cpu is not a valid resource quantity")  # fmt: skip
    fails(ray_cli("log", "nothing"), "No Ray nodes found for resource nothing")


def test_a_name_that_is_no_path_segment_is_an_error_line(ray_cli: RayCli) -> None:
    # As kubectl-ray's client-go refuses it (IsValidPathSegmentName), never a request for another URL.
    fails(ray_cli("delete", "raycluster/a%b", "-y"), "invalid RayCluster name 'a%b': may not contain '%'")
    fails(ray_cli("delete", "..", "-y"), "invalid RayCluster name '..': may not be '..'")
    fails(ray_cli("get", "cluster", "a/b"), "Ray cluster a/b not found")  # a list, filtered: no URL of it
