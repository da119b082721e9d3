"""Deployments, ReplicaSets, StatefulSets and DaemonSets driven by the real kubectl, as a user drives them.

Orderings and rollout bounds are asserted on the watch stream of pods (replayed from a resourceVersion
taken before the action), never with timers.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

from conformance.support import Kubectl, run_kubectl
from support.localkube_process import LocalKubeProcess

PodStates = dict[str, dict[str, Any]]


def _manifest(*objects: dict[str, Any]) -> str:
    return yaml.safe_dump_all(objects)


def _deployment(name: str, replicas: int, image: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
            **spec,
        },
    }


Snapshot = tuple[PodStates, str]


def _snapshot(api: httpx.Client, namespace: str) -> Snapshot:
    """The pods of `namespace` now, and the resourceVersion to watch on from."""
    listed = api.get(f"/api/v1/namespaces/{namespace}/pods").raise_for_status().json()
    return {p["metadata"]["name"]: p for p in listed["items"]}, str(listed["metadata"]["resourceVersion"])


def _live(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and pod.get("status", {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def _ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return _live(pod) and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _image(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["image"])


def _all_ready(count: int, image: str) -> Callable[[PodStates], bool]:
    """Whether exactly `count` pods remain, all of `image` and ready: a rollout's end on the pods."""
    return lambda pods: len(pods) == count and all(_image(p) == image and _ready(p) for p in pods.values())


def _pod_events(
    localkube: LocalKubeProcess,
    namespace: str,
    since: Snapshot,
    until: Callable[[PodStates], bool],
) -> list[tuple[str, dict[str, Any], PodStates]]:
    """The pod events of `namespace` after the snapshot `since`, each with the pods as they stood right
    after it, read until `until(pods)` holds."""
    states, revision = dict(since[0]), since[1]
    seen: list[tuple[str, dict[str, Any], PodStates]] = []
    with (
        localkube.client(timeout=httpx.Timeout(10, read=60)) as client,
        client.stream(
            "GET",
            f"/api/v1/namespaces/{namespace}/pods",
            params={"watch": "1", "resourceVersion": revision, "timeoutSeconds": "60"},
        ) as stream,
    ):
        for line in stream.iter_lines():
            if not line:
                continue
            event = json.loads(line)
            pod = event["object"]
            name = pod["metadata"]["name"]
            if event["type"] == "DELETED":
                states.pop(name, None)
            else:
                states[name] = pod
            seen.append((event["type"], pod, dict(states)))
            if until(states):
                return seen
    raise AssertionError(f"the watch ended before the expected state; last pods: {sorted(states)}")


# -- Deployments --------------------------------------------------------------------------------------


def test_a_deployment_rolls_out_and_rollout_status_succeeds(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:  # fmt: skip
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 3, "nginx:1.25")))
    done = kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in done.stdout

    deployment = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
    status = deployment["status"]
    assert status["observedGeneration"] == deployment["metadata"]["generation"]
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"], status["availableReplicas"]) == (3, 3, 3, 3)  # fmt: skip
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["Available"]["status"], conditions["Available"]["reason"]) == (
        "True",
        "MinimumReplicasAvailable",
    )
    assert (conditions["Progressing"]["status"], conditions["Progressing"]["reason"]) == ("True", "NewReplicaSetAvailable")  # fmt: skip
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"

    (replicaset,) = api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"]
    template_hash = replicaset["metadata"]["labels"]["pod-template-hash"]
    assert replicaset["metadata"]["name"] == f"web-{template_hash}"
    assert replicaset["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    owner = replicaset["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "Deployment",
        deployment["metadata"]["uid"],
        True,
    )
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"web-{template_hash}-")
        assert pod["metadata"]["labels"]["pod-template-hash"] == template_hash
        assert pod["metadata"]["ownerReferences"][0]["uid"] == replicaset["metadata"]["uid"]

    header, row = kubectl("get", "-n", namespace, "deployment", "web").stdout.splitlines()
    assert header.split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert row.split()[:4] == ["web", "3/3", "3", "3"]
    described = kubectl("describe", "-n", namespace, "deployment", "web").stdout
    assert f"Scaled up replica set web-{template_hash} from 0 to 3" in described
    described = kubectl("describe", "-n", namespace, "replicaset", f"web-{template_hash}").stdout
    assert sum(f"Created pod: {p['metadata']['name']}" in described for p in pods) == 3


def _assert_rolling_update_bounds(
    localkube: LocalKubeProcess,
    kubectl: Kubectl,
    api: httpx.Client,
    namespace: str,
    strategy: dict[str, Any],
    most: int,
    least: int,
) -> None:
    replicas = 4
    manifest = _manifest(_deployment("web", replicas, "nginx:1.25", strategy=strategy))
    kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    since = _snapshot(api, namespace)

    kubectl("set", "image", "-n", namespace, "deployment/web", "main=nginx:1.26")
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")

    events = _pod_events(localkube, namespace, since, _all_ready(replicas, "nginx:1.26"))
    mixed = False
    for kind, pod, pods in events:
        live = [p for p in pods.values() if _live(p)]
        ready = [p for p in pods.values() if _ready(p)]
        where = f"after {kind} {pod['metadata']['name']}"
        assert len(live) <= most, f"{len(live)} pods {where}"
        assert len(ready) >= least, f"{len(ready)} ready pods {where}"
        mixed |= {_image(p) for p in live} == {"nginx:1.25", "nginx:1.26"}
    assert mixed, "old and new pods never ran side by side: this was no rolling update"


def test_set_image_rolls_within_max_surge_and_max_unavailable(
    localkube: LocalKubeProcess, kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    _assert_rolling_update_bounds(localkube, kubectl, api, namespace, strategy, most=5, least=4)


def test_percentages_round_surge_up_and_unavailability_down(
    localkube: LocalKubeProcess, kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    # Of 4 replicas: 30% surge is 1.2, rounded up to 2; 30% unavailable is 1.2, rounded down to 1.
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "30%", "maxUnavailable": "30%"}}
    _assert_rolling_update_bounds(localkube, kubectl, api, namespace, strategy, most=6, least=3)


def test_recreate_stops_every_old_pod_before_the_first_new_one(
    localkube: LocalKubeProcess, kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    manifest = _manifest(_deployment("web", 3, "nginx:1.25", strategy={"type": "Recreate"}))
    kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    since = _snapshot(api, namespace)
    kubectl("set", "image", "-n", namespace, "deployment/web", "main=nginx:1.26")
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    events = _pod_events(localkube, namespace, since, _all_ready(3, "nginx:1.26"))
    for _, _, pods in events:
        assert {_image(p) for p in pods.values()} != {"nginx:1.25", "nginx:1.26"}, sorted(pods)


def test_scale_up_and_down(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 2, "nginx:1.25")))
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    for replicas in (5, 1, 0, 2):
        kubectl("scale", "-n", namespace, "deployment/web", f"--replicas={replicas}")
        kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
        status = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()["status"]
        assert status.get("availableReplicas", 0) == status.get("replicas", 0) == replicas
        scale = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web/scale").json()
        assert (scale["spec"]["replicas"], scale["status"]["replicas"]) == (replicas, replicas)
        pods = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
        assert sum(1 for p in pods if _live(p)) == replicas
    # Scaling is no rollout: one ReplicaSet throughout.
    assert len(api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"]) == 1


def test_rollout_undo_brings_back_the_previous_template_as_a_new_revision(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 2, "nginx:1.25")))
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    kubectl("set", "image", "-n", namespace, "deployment/web", "main=nginx:1.26")
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    history = kubectl("rollout", "history", "-n", namespace, "deployment/web").stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]

    kubectl("rollout", "undo", "-n", namespace, "deployment/web")
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    deployment = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    sets = api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"]
    # The first ReplicaSet is reused (now revision 3); no third one is made.
    revisions = {s["spec"]["template"]["spec"]["containers"][0]["image"]: s for s in sets}
    assert len(sets) == 2
    assert revisions["nginx:1.25"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert revisions["nginx:1.25"]["spec"]["replicas"] == 2
    assert revisions["nginx:1.26"]["spec"]["replicas"] == 0


def test_a_rollout_that_never_becomes_ready_exceeds_its_progress_deadline(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    deployment = _deployment("stuck", 1, "nginx:1.25", progressDeadlineSeconds=1)
    deployment["spec"]["template"]["metadata"]["annotations"] = {"localkube.io/simulate": "NeverReady"}
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(deployment))
    done = kubectl("rollout", "status", "-n", namespace, "deployment/stuck", "--timeout=60s", check=False)
    assert done.returncode != 0
    assert 'deployment "stuck" exceeded its progress deadline' in done.stderr
    status = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/stuck").json()["status"]
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert status["unavailableReplicas"] == 1


def test_deleting_a_deployment_removes_its_replicasets_and_pods(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 3, "nginx:1.25")))
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    # Foreground: kubectl returns once the Deployment is gone, which is after its dependents are.
    kubectl("delete", "-n", namespace, "deployment/web", "--cascade=foreground", "--timeout=60s")
    assert api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"] == []
    assert api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"] == []


def test_deleting_a_deployment_in_the_background_lets_the_collector_finish(
    localkube: LocalKubeProcess, kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 2, "nginx:1.25")))
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    since = _snapshot(api, namespace)
    kubectl("delete", "-n", namespace, "deployment/web")
    _pod_events(localkube, namespace, since, lambda pods: not pods)
    assert api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"] == []


def test_a_replicaset_adopts_a_matching_pod_without_a_controller(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orphan", "labels": {"app": "adopt"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
    }
    replicaset = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "adopter"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "adopt"}},
            "template": {
                "metadata": {"labels": {"app": "adopt"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
            },
        },
    }
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(orphan))
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(replicaset))
    kubectl(
        "wait",
        "-n",
        namespace,
        "replicaset/adopter",
        "--for=jsonpath={.status.readyReplicas}=2",
        "--timeout=60s",
    )
    owner = api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets/adopter").json()["metadata"]["uid"]
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    assert len(pods) == 2
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == owner for p in pods)
    assert "orphan" in {p["metadata"]["name"] for p in pods}


# -- StatefulSets ---------------------------------------------------------------------------------------


def _statefulset(replicas: int, image: str, **spec: Any) -> str:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "nginx"},
        "spec": {"clusterIP": "None", "selector": {"app": "nginx"}, "ports": [{"port": 80}]},
    }
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "serviceName": "nginx",
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": image}]},
            },
            **spec,
        },
    }
    return _manifest(service, statefulset)


def _deletions(events: list[tuple[str, dict[str, Any], PodStates]]) -> list[str]:
    """The pods in the order they started terminating (each incarnation, by uid, once)."""
    order: list[str] = []
    gone: set[str] = set()
    for kind, pod, _ in events:
        uid = pod["metadata"]["uid"]
        if (kind == "DELETED" or pod["metadata"].get("deletionTimestamp")) and uid not in gone:
            gone.add(uid)
            order.append(pod["metadata"]["name"])
    return order


def test_a_statefulset_creates_pods_in_order_and_deletes_them_in_reverse(
    localkube: LocalKubeProcess, kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    since = _snapshot(api, namespace)
    claims = [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]  # fmt: skip
    kubectl(
        "apply", "-n", namespace, "-f", "-", input=_statefulset(3, "nginx:1.25", volumeClaimTemplates=claims)
    )
    kubectl("rollout", "status", "-n", namespace, "statefulset/web", "--timeout=60s")
    pod = api.get(f"/api/v1/namespaces/{namespace}/pods/web-1").json()
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-1", "nginx")
    assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "web-1"
    claim = next(v for v in pod["spec"]["volumes"] if v["name"] == "www")["persistentVolumeClaim"][
        "claimName"
    ]
    assert claim == "www-web-1"
    assert api.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/www-web-1").status_code == 200
    status = api.get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/web").json()["status"]
    assert (status["replicas"], status["readyReplicas"], status["updatedReplicas"]) == (3, 3, 3)
    assert (
        status["currentRevision"]
        == status["updateRevision"]
        == pod["metadata"]["labels"]["controller-revision-hash"]
    )

    described = kubectl("describe", "-n", namespace, "statefulset", "web").stdout
    assert "create Pod web-2 in StatefulSet web successful" in described
    assert "create Claim www-web-2 Pod web-2 in StatefulSet web success" in described
    kubectl("scale", "-n", namespace, "statefulset/web", "--replicas=0")
    events = _pod_events(localkube, namespace, since, lambda pods: not pods)
    assert [pod["metadata"]["name"] for kind, pod, _ in events if kind == "ADDED"] == [
        "web-0",
        "web-1",
        "web-2",
    ]
    assert _deletions(events) == ["web-2", "web-1", "web-0"]
    for kind, pod, pods in events:
        ordinal = int(pod["metadata"]["name"].rpartition("-")[2])
        if kind == "ADDED":
            # OrderedReady: a pod is made only once every lower ordinal is ready.
            assert all(_ready(pods[f"web-{n}"]) for n in range(ordinal)), sorted(pods)
        if pod["metadata"].get("deletionTimestamp"):
            # ... and deleted only once every higher ordinal is gone.
            assert not any(f"web-{n}" in pods for n in range(ordinal + 1, 3)), sorted(pods)


def test_a_statefulset_rolls_from_the_highest_ordinal_down(
    localkube: LocalKubeProcess, kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=_statefulset(3, "nginx:1.25"))
    kubectl("rollout", "status", "-n", namespace, "statefulset/web", "--timeout=60s")
    before = api.get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/web").json()["status"][
        "currentRevision"
    ]
    since = _snapshot(api, namespace)
    kubectl("set", "image", "-n", namespace, "statefulset/web", "nginx=nginx:1.26")
    kubectl("rollout", "status", "-n", namespace, "statefulset/web", "--timeout=60s")

    events = _pod_events(localkube, namespace, since, _all_ready(3, "nginx:1.26"))
    assert _deletions(events) == ["web-2", "web-1", "web-0"]
    for _, _, pods in events:
        # One pod at a time is down.
        assert sum(1 for p in pods.values() if _ready(p)) >= 2
    status = api.get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/web").json()["status"]
    assert status["currentRevision"] == status["updateRevision"] != before
    assert status["updatedReplicas"] == status["currentReplicas"] == 3

    history = kubectl("rollout", "history", "-n", namespace, "statefulset/web").stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    kubectl("rollout", "undo", "-n", namespace, "statefulset/web")
    kubectl("rollout", "status", "-n", namespace, "statefulset/web", "--timeout=60s")
    status = api.get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/web").json()["status"]
    # The first template is back, under its own revision name, now as revision 3.
    assert status["currentRevision"] == status["updateRevision"] == before
    revisions = api.get(f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions").json()["items"]
    assert {r["metadata"]["name"]: r["revision"] for r in revisions}[before] == 3
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    assert sorted(_image(p) for p in pods if _live(p)) == ["nginx:1.25"] * 3


def _daemonset(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": "busybox:1.36"}]},
            },
            **spec,
        },
    }


def test_a_daemonset_runs_one_pod_on_the_node(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_daemonset()))
    done = kubectl("rollout", "status", "-n", namespace, "daemonset/agent", "--timeout=60s")
    assert 'daemon set "agent" successfully rolled out' in done.stdout
    (node,) = api.get("/api/v1/nodes").json()["items"]
    (pod,) = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    assert pod["spec"]["nodeName"] == node["metadata"]["name"]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    status = api.get(f"/apis/apps/v1/namespaces/{namespace}/daemonsets/agent").json()["status"]
    assert [status[f] for f in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady", "updatedNumberScheduled", "numberAvailable")] == [1] * 5  # fmt: skip
    header, row = kubectl("get", "-n", namespace, "daemonset", "agent").stdout.splitlines()
    assert header.split()[:7] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE"]
    assert row.split()[:7] == ["agent", "1", "1", "1", "1", "1", "<none>"]

    kubectl("set", "image", "-n", namespace, "daemonset/agent", "agent=busybox:1.37")
    kubectl("rollout", "status", "-n", namespace, "daemonset/agent", "--timeout=60s")
    (pod,) = [p for p in api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"] if _live(p)]
    assert _image(pod) == "busybox:1.37"
    history = kubectl("rollout", "history", "-n", namespace, "daemonset/agent").stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]


def test_invalid_workloads_are_refused_with_the_field_and_the_reason(
    kubectl: Kubectl, namespace: str
) -> None:
    mismatched = _deployment("web", 1, "nginx:1.25")
    mismatched["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    done = kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(mismatched), check=False)
    assert done.returncode != 0
    assert "spec.template.metadata.labels: Invalid value" in done.stderr
    assert "`selector` does not match template `labels`" in done.stderr

    frozen = _deployment("frozen", 1, "nginx:1.25", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}})  # fmt: skip
    done = kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(frozen), check=False)
    assert "spec.strategy.rollingUpdate.maxUnavailable: Invalid value" in done.stderr
    assert "may not be 0 when `maxSurge` is 0" in done.stderr

    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 1, "nginx:1.25")))
    moved = _deployment("web", 1, "nginx:1.25")
    moved["spec"]["selector"]["matchLabels"]["tier"] = "front"
    moved["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
    done = kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(moved), check=False)
    assert "spec.selector: Invalid value" in done.stderr and "field is immutable" in done.stderr


def test_a_paused_deployment_rolls_out_only_once_resumed(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 2, "nginx:1.25")))
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    kubectl("rollout", "pause", "-n", namespace, "deployment/web")
    kubectl("set", "image", "-n", namespace, "deployment/web", "main=nginx:1.26")
    generation = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()["metadata"][
        "generation"
    ]
    kubectl("wait", "-n", namespace, "deployment/web", f"--for=jsonpath={{.status.observedGeneration}}={generation}", "--timeout=60s")  # fmt: skip
    # Observed, yet nothing rolled: one ReplicaSet, the old pods, Progressing Unknown.
    assert len(api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"]) == 1
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    assert {_image(p) for p in pods} == {"nginx:1.25"}
    status = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()["status"]
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("Unknown", "DeploymentPaused")

    kubectl("rollout", "resume", "-n", namespace, "deployment/web")
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    assert {_image(p) for p in pods if _live(p)} == {"nginx:1.26"}


def test_old_replicasets_beyond_the_history_limit_are_deleted(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 1, "nginx:1.25", revisionHistoryLimit=1)))  # fmt: skip
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    for image in ("nginx:1.26", "nginx:1.27", "nginx:1.28"):
        kubectl("set", "image", "-n", namespace, "deployment/web", f"main={image}")
        kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    # The pass that finds the last old pod gone both prunes and reports the rollout complete.
    sets = api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"]
    images = sorted(s["spec"]["template"]["spec"]["containers"][0]["image"] for s in sets)
    assert images == ["nginx:1.27", "nginx:1.28"]


def test_statefulset_claims_follow_the_retention_policy(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    claims = [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]  # fmt: skip
    policy = {"whenDeleted": "Delete", "whenScaled": "Delete"}
    manifest = _statefulset(
        2, "nginx:1.25", volumeClaimTemplates=claims, persistentVolumeClaimRetentionPolicy=policy
    )
    kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    kubectl("rollout", "status", "-n", namespace, "statefulset/web", "--timeout=60s")
    kubectl("scale", "-n", namespace, "statefulset/web", "--replicas=1")
    # The claim of the removed pod goes with it; the other stays while the set does.
    kubectl("wait", "-n", namespace, "--for=delete", "persistentvolumeclaim/www-web-1", "--timeout=60s")
    assert api.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/www-web-0").status_code == 200
    kubectl("delete", "-n", namespace, "statefulset/web")
    kubectl("wait", "-n", namespace, "--for=delete", "persistentvolumeclaim/www-web-0", "--timeout=60s")


def test_orphaned_replicasets_are_adopted_by_the_next_matching_deployment(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    manifest = _manifest(_deployment("web", 2, "nginx:1.25"))
    kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    pods_before = {
        p["metadata"]["uid"] for p in api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    }
    kubectl("delete", "-n", namespace, "deployment/web", "--cascade=orphan")
    (orphan,) = api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"]
    assert "ownerReferences" not in orphan["metadata"]

    kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    deployment = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
    (adopted,) = api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"]
    assert adopted["metadata"]["uid"] == orphan["metadata"]["uid"]
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == deployment["metadata"]["uid"]
    # Same template, same ReplicaSet: its pods were never replaced.
    assert {
        p["metadata"]["uid"] for p in api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    } == pods_before


def test_rollout_restart_replaces_every_pod(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 2, "nginx:1.25")))
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    before = {p["metadata"]["uid"] for p in api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]}
    kubectl("rollout", "restart", "-n", namespace, "deployment/web")
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    after = {
        p["metadata"]["uid"]
        for p in api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
        if _live(p)
    }
    assert len(after) == 2 and not after & before


def test_in_process_mode_a_rollout_replaces_real_processes_and_deletion_leaves_none(
    localkube_factory: Callable[..., LocalKubeProcess],
) -> None:
    server = localkube_factory(extra_args=["--node-mode", "process"])
    marker = f"workloads-{uuid.uuid4().hex}"
    deployment = _deployment("sleeper", 2, "python:3.11")
    deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 2
    script = f"import time; time.sleep(3600)  # {marker}"
    deployment["spec"]["template"]["spec"]["containers"][0]["command"] = ["python", "-c", script]

    def processes() -> int:
        """The containers' commands themselves (the node's mount-namespace helper carries the same words in
        its arguments, so a plain `pgrep -f` would count it too)."""
        count = 0
        for pid in os.listdir("/proc"):
            try:
                argv = Path("/proc", pid, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            count += argv[1:3] == [b"-c", script.encode()]
        return count

    run_kubectl(server, "apply", "-f", "-", input=_manifest(deployment))
    run_kubectl(server, "rollout", "status", "deployment/sleeper", "--timeout=90s")
    assert processes() == 2
    run_kubectl(server, "set", "env", "deployment/sleeper", "GENERATION=2")
    run_kubectl(server, "rollout", "status", "deployment/sleeper", "--timeout=90s")
    # Foreground deletion returns once every pod is gone, and a pod is gone once its process is.
    run_kubectl(server, "delete", "deployment/sleeper", "--cascade=foreground", "--timeout=90s")
    assert processes() == 0


def test_a_daemonset_with_max_surge_starts_the_new_pod_before_the_old_one_goes(
    localkube: LocalKubeProcess, kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_daemonset(updateStrategy=strategy)))
    kubectl("rollout", "status", "-n", namespace, "daemonset/agent", "--timeout=60s")
    since = _snapshot(api, namespace)
    kubectl("set", "image", "-n", namespace, "daemonset/agent", "agent=busybox:1.37")
    kubectl("rollout", "status", "-n", namespace, "daemonset/agent", "--timeout=60s")

    events = _pod_events(localkube, namespace, since, _all_ready(1, "busybox:1.37"))
    assert all(any(_ready(p) for p in pods.values()) for _, _, pods in events), (
        "the node was left without a ready pod"
    )
    assert any(len([p for p in pods.values() if _live(p)]) == 2 for _, _, pods in events)


def test_a_parallel_statefulset_with_a_start_ordinal(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    manifest = _statefulset(2, "nginx:1.25", podManagementPolicy="Parallel", ordinals={"start": 5})
    kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    kubectl("rollout", "status", "-n", namespace, "statefulset/web", "--timeout=60s")
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    assert sorted(p["metadata"]["name"] for p in pods) == ["web-5", "web-6"]
    assert {p["metadata"]["labels"]["apps.kubernetes.io/pod-index"] for p in pods} == {"5", "6"}


def test_scaling_mid_rollout_grows_every_replicaset_in_proportion(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    kubectl("apply", "-n", namespace, "-f", "-", input=_manifest(_deployment("web", 10, "nginx:1.25", strategy=strategy)))  # fmt: skip
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    # New pods that never become ready stall the rollout half way: the new set grows to 3 within the
    # surge (13 pods), the old one shrinks to 8 within the unavailability (8 available), the new one
    # takes the room left (5), and there it stays.
    patch = {"spec": {"template": {"metadata": {"annotations": {"localkube.io/simulate": "NeverReady"}}}}}
    kubectl("patch", "-n", namespace, "deployment/web", "-p", json.dumps(patch))
    kubectl("wait", "-n", namespace, "deployment/web", "--for=jsonpath={.status.updatedReplicas}=5", "--timeout=60s")  # fmt: skip
    kubectl("scale", "-n", namespace, "deployment/web", "--replicas=20")
    # 10 more replicas are spread 8:5, as upstream spreads them: 14 and 9 (see test_rollout).
    kubectl("wait", "-n", namespace, "deployment/web", "--for=jsonpath={.status.updatedReplicas}=9", "--timeout=60s")  # fmt: skip
    sets = api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"]
    sizes = {bool(s["spec"]["template"]["metadata"].get("annotations")): s["spec"]["replicas"] for s in sets}
    assert sizes == {False: 14, True: 9}


def test_a_partitioned_statefulset_update_leaves_and_remakes_the_lower_ordinals_as_they_were(
    localkube: LocalKubeProcess, kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    kubectl("apply", "-n", namespace, "-f", "-", input=_statefulset(3, "nginx:1.25", updateStrategy=strategy))
    kubectl("rollout", "status", "-n", namespace, "statefulset/web", "--timeout=60s")
    kubectl("set", "image", "-n", namespace, "statefulset/web", "nginx=nginx:1.26")
    done = kubectl("rollout", "status", "-n", namespace, "statefulset/web", "--timeout=60s")
    assert "partitioned roll out complete: 1 new pods have been updated" in done.stdout
    pods = {
        p["metadata"]["name"]: _image(p)
        for p in api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    }
    assert pods == {"web-0": "nginx:1.25", "web-1": "nginx:1.25", "web-2": "nginx:1.26"}

    since = _snapshot(api, namespace)
    # --wait=false: the replacement has the same name and may appear before kubectl starts watching, and
    # kubectl's wait then looks for the deletion of the replacement (a race real kubelets are too slow for).
    kubectl("delete", "-n", namespace, "pod/web-0", "--wait=false")
    events = _pod_events(
        localkube, namespace, since, lambda pods: "web-0" in pods and _ready(pods["web-0"]) and len(pods) == 3
    )
    remade = events[-1][2]["web-0"]
    assert remade["metadata"]["uid"] != since[0]["web-0"]["metadata"]["uid"]
    assert _image(remade) == "nginx:1.25"
