"""The real kubectl against localkube: apply, get (Tables, watch), patch, delete, explain, wait, auth."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest
import yaml

from conformance.support import Kubectl
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

SAMPLES = Path("/work/shared/upstream-samples")
REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "deploy" / "crds"


def _raycluster(name: str, **spec: object) -> dict[str, object]:
    container = {"name": "ray-head", "image": "rayproject/ray:2.52.0"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
            **spec,
        },
    }


def _sample_files() -> tuple[list[Path], list[Path]]:
    """(files kubectl can apply, files that need create because they use generateName)."""
    applied, created = [], []
    for path in sorted(SAMPLES.rglob("*.yaml")):
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
        uses_generate_name = any("generateName" in d.get("metadata", {}) for d in documents)
        (created if uses_generate_name else applied).append(path)
    return applied, created


@pytest.mark.skipif(not SAMPLES.exists(), reason="upstream samples are not on this machine")
@pytest.mark.usefixtures("third_party_crds")
def test_every_upstream_sample_applies_client_side_then_server_side(kubectl: Kubectl, namespace: str) -> None:
    applied, created = _sample_files()
    files = [arg for path in applied for arg in ("-f", str(path))]
    # ~100 samples through admission (CEL included), an object at a time: minutes on a loaded machine.
    kubectl("apply", "-n", namespace, *files, timeout=300)
    for path in created:
        kubectl("create", "-n", namespace, "-f", str(path))
    kubectl("apply", "--server-side", "--force-conflicts", "-n", namespace, *files, timeout=300)
    names = {
        (d["kind"], d["metadata"]["name"])
        for path in applied
        for d in yaml.safe_load_all(path.read_text())
        if d and d["apiVersion"] == "ray.io/v1"
    }
    listed = json.loads(
        kubectl("get", "rayclusters,rayjobs,rayservices,raycronjobs", "-n", namespace, "-o", "json").stdout
    )
    stored = {(item["kind"], item["metadata"]["name"]) for item in listed["items"]}
    assert names <= stored
    generated = [item for item in listed["items"] if item["metadata"].get("generateName")]
    assert len(generated) == len(created)


def test_crds_from_deploy_apply_server_side_and_are_established(kubectl: Kubectl) -> None:
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    names = {
        yaml.load(path.read_text(), Loader=yaml.CSafeLoader)["metadata"]["name"]
        for path in CRDS.glob("*.yaml")
    }
    template = (
        '{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Established")].status}{"\\n"}{end}'
    )
    established = kubectl("get", "crds", "-o", f"jsonpath={template}").stdout.split("\n")
    assert names <= {line.split()[0] for line in established if line.endswith(" True")}


def test_get_prints_the_crd_printer_columns(kubectl: Kubectl, namespace: str) -> None:
    crd = yaml.safe_load((CRDS / "ray.io_rayclusters.yaml").read_text())
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(_raycluster("columns")))
    status = {"state": "ready", "desiredWorkerReplicas": 3, "desiredCPU": "2"}
    kubectl(
        "patch",
        "-n",
        namespace,
        "raycluster",
        "columns",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )
    header, row = kubectl("get", "rayclusters", "-n", namespace).stdout.splitlines()
    assert (
        header.split()
        == " ".join(["NAME"] + [c["name"].upper() for c in columns if not c.get("priority")]).split()
    )
    assert row.split()[:2] == ["columns", "3"] and "ready" in row.split() and "2" in row.split()
    wide_header = kubectl("get", "rayclusters", "-n", namespace, "-o", "wide").stdout.splitlines()[0]
    assert "HEAD POD IP" in wide_header and "TPUS" in wide_header


def test_get_watch_streams_changes(localkube: LocalKubeProcess, kubectl: Kubectl, namespace: str) -> None:
    kubectl("create", "-n", namespace, "configmap", "watched", "--from-literal=a=1")
    command = [
        "kubectl",
        "--kubeconfig",
        str(localkube.kubeconfig),
        "get",
        "configmaps",
        "-n",
        namespace,
        "--field-selector=metadata.name=watched",
        "-w",
        "--output-watch-events",
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as watcher:
        assert watcher.stdout is not None
        try:
            assert watcher.stdout.readline().split()[:2] == ["EVENT", "NAME"]
            assert watcher.stdout.readline().split()[:2] == ["ADDED", "watched"]
            kubectl("patch", "-n", namespace, "configmap", "watched", "-p", '{"data":{"a":"2"}}')
            assert watcher.stdout.readline().split()[:2] == ["MODIFIED", "watched"]
            kubectl("delete", "-n", namespace, "configmap", "watched")
            assert watcher.stdout.readline().split()[:2] == ["DELETED", "watched"]
        finally:
            watcher.kill()


def test_a_job_selects_only_its_own_pods(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    # kubectl resolves `logs job/NAME` and `describe job` through the Job's selector: without one it took
    # any pod of the namespace.
    kubectl("run", "-n", namespace, "bystander", "--image=busybox", "--restart=Never", "--", "true")
    kubectl("create", "-n", namespace, "job", "once", "--image=busybox", "--", "true")
    job = api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/once").json()
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == labels["job-name"] == "once"
    selector = ",".join(f"{k}={v}" for k, v in job["spec"]["selector"]["matchLabels"].items())

    def selected() -> list[str]:
        found = kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "name").stdout.split()
        return sorted(found)

    pods = eventually(selected, 30, "the Job's pod", every=0.2)
    assert len(pods) == 1 and pods[0].startswith("pod/once-"), pods


def test_patch_of_every_type(kubectl: Kubectl, namespace: str, api: httpx.Client) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(_raycluster("patched")))
    kubectl(
        "patch", "-n", namespace, "raycluster", "patched", "--type=merge", "-p", '{"spec":{"suspend":true}}'
    )
    kubectl(
        "patch",
        "-n",
        namespace,
        "raycluster",
        "patched",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/spec/rayVersion","value":"2.52.0"}]',
    )
    refused = kubectl(
        "patch",
        "-n",
        namespace,
        "raycluster",
        "patched",
        "--type=strategic",
        "-p",
        '{"spec":{"suspend":false}}',
        check=False,
    )
    assert refused.returncode != 0 and "strategic-merge-patch+json is not supported" in refused.stderr
    applied = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "patched"},
        "spec": {"suspend": False},
    }
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=tester",
        "-n",
        namespace,
        "-f",
        "-",
        input=json.dumps(applied),
    )
    cluster = api.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/patched").json()
    assert cluster["spec"]["suspend"] is False and cluster["spec"]["rayVersion"] == "2.52.0"
    assert cluster["metadata"]["generation"] == 4
    assert "tester" in {entry["manager"] for entry in cluster["metadata"]["managedFields"]}

    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}},
    }  # fmt: skip
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(deployment))
    kubectl(
        "patch",
        "-n",
        namespace,
        "deployment",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"b:2"}]}}}}',
    )
    containers = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()["spec"]["template"][
        "spec"
    ]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("a", "a:1"), ("b", "b:2")]
    kubectl("scale", "-n", namespace, "deployment", "web", "--replicas=3")
    assert (
        api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web/scale").json()["spec"]["replicas"] == 3
    )


def test_delete_waits_for_finalizers_and_returns(
    localkube: LocalKubeProcess, kubectl: Kubectl, namespace: str
) -> None:
    held = _raycluster("held")
    held["metadata"] = {"name": "held", "finalizers": ["example.com/hold"]}
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(held))
    command = [
        "kubectl",
        "--kubeconfig",
        str(localkube.kubeconfig),
        "delete",
        "-n",
        namespace,
        "raycluster",
        "held",
        "--timeout=30s",
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as deleting:
        try:
            kubectl(
                "wait",
                "-n",
                namespace,
                "--for=jsonpath={.metadata.deletionTimestamp}",
                "raycluster/held",
                "--timeout=10s",
            )
            assert deleting.poll() is None, "kubectl delete returned while a finalizer still held the object"
            kubectl(
                "patch",
                "-n",
                namespace,
                "raycluster",
                "held",
                "--type=json",
                "-p",
                '[{"op":"remove","path":"/metadata/finalizers"}]',
            )
            assert deleting.wait(timeout=30) == 0
        finally:
            deleting.kill()
    assert kubectl("get", "-n", namespace, "raycluster", "held", check=False).returncode != 0


def test_wait_for_condition_and_for_delete(
    localkube: LocalKubeProcess, kubectl: Kubectl, namespace: str
) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(_raycluster("waited")))
    command = [
        "kubectl",
        "--kubeconfig",
        str(localkube.kubeconfig),
        "wait",
        "-n",
        namespace,
        "--for=condition=Ready",
        "raycluster/waited",
        "--timeout=30s",
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as waiting:
        time.sleep(0.5)
        condition = {
            "type": "Ready",
            "status": "True",
            "reason": "Up",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        kubectl(
            "patch",
            "-n",
            namespace,
            "raycluster",
            "waited",
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"conditions": [condition]}}),
        )
        assert waiting.wait(timeout=30) == 0
    kubectl("delete", "-n", namespace, "raycluster", "waited", "--wait=false")
    kubectl("wait", "-n", namespace, "--for=delete", "raycluster/waited", "--timeout=10s")


def test_explain_reads_the_crd_schema(kubectl: Kubectl) -> None:
    explained = kubectl("explain", "raycluster.spec.headGroupSpec").stdout
    assert "KIND:       RayCluster" in explained and "FIELD: headGroupSpec <Object>" in explained
    for field in ("rayStartParams", "template", "serviceType"):
        assert f"  {field}\t<" in explained
    assert "restartPolicy\t<string>" in kubectl("explain", "pods.spec").stdout


def test_auth_can_i_for_the_admin_and_a_restricted_service_account(kubectl: Kubectl, namespace: str) -> None:
    assert kubectl("auth", "can-i", "delete", "nodes").stdout.strip() == "yes"
    kubectl("create", "serviceaccount", "-n", namespace, "restricted")
    token = kubectl("create", "token", "-n", namespace, "restricted").stdout.strip()
    as_account = ("--token", token)
    assert (
        kubectl(*as_account, "auth", "can-i", "list", "pods", "-n", namespace, check=False).stdout.strip()
        == "no"
    )
    denied = kubectl(*as_account, "get", "pods", "-n", namespace, check=False)
    assert denied.returncode != 0
    assert f'User "system:serviceaccount:{namespace}:restricted" cannot list resource "pods"' in denied.stderr
    kubectl("create", "role", "-n", namespace, "pod-reader", "--verb=get,list", "--resource=pods")
    kubectl(
        "create",
        "rolebinding",
        "-n",
        namespace,
        "read-pods",
        "--role=pod-reader",
        f"--serviceaccount={namespace}:restricted",
    )
    assert kubectl(*as_account, "auth", "can-i", "list", "pods", "-n", namespace).stdout.strip() == "yes"
    assert (
        kubectl(*as_account, "auth", "can-i", "delete", "pods", "-n", namespace, check=False).stdout.strip()
        == "no"
    )
    assert (
        kubectl(*as_account, "auth", "can-i", "list", "pods", "-n", "default", check=False).stdout.strip()
        == "no"
    )
    kubectl(*as_account, "get", "pods", "-n", namespace)


def test_typed_create_commands_send_protobuf_that_is_understood(
    kubectl: Kubectl, namespace: str, api: httpx.Client
) -> None:
    kubectl("create", "configmap", "-n", namespace, "settings", "--from-literal=mode=fast")
    kubectl("create", "secret", "generic", "-n", namespace, "credentials", "--from-literal=password=s3cret")
    kubectl(
        "create", "clusterrole", f"{namespace}-reader", "--verb=get", "--resource=pods", "--resource-name=p1"
    )
    assert api.get(f"/api/v1/namespaces/{namespace}/configmaps/settings").json()["data"] == {"mode": "fast"}
    assert api.get(f"/api/v1/namespaces/{namespace}/secrets/credentials").json()["data"] == {
        "password": "czNjcmV0"
    }
    role = api.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{namespace}-reader").json()
    assert role["rules"] == [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p1"]}
    ]
    api.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{namespace}-reader")
