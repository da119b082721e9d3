"""Ray's own autoscaler closing the loop on localkube (issue 14), through the user's path: `kuberay local up
--node-mode process` (the shared `local_process`), `kubectl apply` of upstream's autoscaler samples, a
driver run with `kubectl exec` in the head, `kubectl logs -c autoscaler`.

The sidecar is Ray's unchanged `ray kuberay-autoscaler` from the installed wheel: it reaches localkube with
the per-cluster ServiceAccount's mounted token and CA, reads the RayCluster and its pods, and PATCHes
`replicas` and `workersToDelete`; the operator makes and deletes the pods. A `kubectl get -w` on the
RayCluster records every version of its spec, so the test sees each list the autoscaler wrote even when
it is cleared again within a second.

What the test changes in its copies of the samples, and why:
- `idleTimeoutSeconds` 60 -> 20: the scale-down is the point, and a minute of idling per version is most
  of the test's time (the autoscaler checks idleness every 5 s, so 20 s still leaves several checks);
- the v1 sample gets `autoscalerOptions.version: v1`: it leaves the version unset, and Ray 2.60 then picks
  v2, so without it both tests would run the v2 autoscaler.
Nothing else: each worker asks for 1 CPU, and the driver asks for 2 CPUs of tasks on a head with
`num-cpus: 0`, so two workers come (of `maxReplicas` 10) on this two-core machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from typing import Any

import pytest
import yaml

from support.eventually import eventually
from support.local_instance import KUBECTL_POLL, LocalInstance
from support.shared import UPSTREAM_SAMPLES

# Each test starts a Ray cluster and waits out the idle timeout: over the suite's default 300 s under load.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# Ray on a loaded two-core machine: bounds, not measurements.
TIMEOUT = 400.0
IDLE_TIMEOUT_SECONDS = 20
TASKS = 2
DRIVER = f"""
import socket, time
import ray

ray.init()

@ray.remote(num_cpus=1)
def where() -> str:
    time.sleep(5)
    return socket.gethostname()

print("RAN ON", sorted(ray.get([where.remote() for _ in range({TASKS})])))
"""
# Run with the token the autoscaler uses (Ray's own client): what its Role grants works, the rest is
# refused by RBAC (deleting pods is the operator's job, never the autoscaler's); and the config Ray's
# autoscaler derives from the RayCluster (idleTimeoutSeconds / 60, upscalingMode Default -> speed 1000).
RBAC_PROBE = """
import sys
import requests
from ray.autoscaler._private.kuberay.autoscaling_config import AutoscalingConfigProducer
from ray.autoscaler._private.kuberay.node_provider import KubernetesHttpApiClient

client = KubernetesHttpApiClient(sys.argv[1])
print("GET", client.get("rayclusters/" + sys.argv[2])["metadata"]["name"])
config = AutoscalingConfigProducer(sys.argv[2], sys.argv[1])()
print("CONFIG", config["idle_timeout_minutes"], config["upscaling_speed"])
try:
    client.delete("pods/" + sys.argv[3])
except requests.HTTPError as e:
    print("DELETE", e.response.status_code)
"""


class SpecWatch:
    """`kubectl get raycluster NAME -w -o json` in the background: every version of the object, in order."""

    def __init__(self, local: LocalInstance, name: str, namespace: str) -> None:
        self.versions: list[dict[str, Any]] = []
        self._process = subprocess.Popen(
            ["kubectl", "--kubeconfig", local.kubeconfig, "get", "raycluster", name, "-n", namespace,
             "-w", "-o", "json"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        decoder, buffer = json.JSONDecoder(), ""
        for line in self._process.stdout:
            buffer += line
            try:
                obj, end = decoder.raw_decode(buffer.strip())
            except json.JSONDecodeError:
                continue
            self.versions.append(obj)
            buffer = buffer.strip()[end:]

    def groups(self) -> list[dict[str, Any]]:
        return [v["spec"]["workerGroupSpecs"][0] for v in list(self.versions)]

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=30)
        self._thread.join(timeout=30)
        assert self._process.stdout is not None
        self._process.stdout.close()


def _sample(name: str, version: str) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((UPSTREAM_SAMPLES / name).read_text()) if d]
    (cluster,) = [d for d in docs if d["kind"] == "RayCluster"]
    options = cluster["spec"]["autoscalerOptions"]
    options["idleTimeoutSeconds"] = IDLE_TIMEOUT_SECONDS
    options["version"] = version
    return docs


def _kubectl(local: LocalInstance, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": local.kubeconfig}
    return subprocess.run(
        ["kubectl", *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


def _worker_pods(local: LocalInstance, namespace: str, cluster: str) -> list[dict[str, Any]]:
    listed = json.loads(
        local.kubectl("get", "pods", "-n", namespace, "-l", f"ray.io/cluster={cluster},ray.io/node-type=worker",
                      "-o", "json")
    )  # fmt: skip
    pods: list[dict[str, Any]] = listed["items"]
    return pods


def _workers(local: LocalInstance, namespace: str, cluster: str) -> set[str]:
    return {p["metadata"]["name"] for p in _worker_pods(local, namespace, cluster)}


def _scale_story(
    local: LocalInstance, namespace: str, workers: list[dict[str, Any]], watch: SpecWatch
) -> str:
    """What a wrong worker count needs to be traced (seen once, v2 on a loaded machine: three workers for
    two tasks): each of the counted workers' phase, the replicas and workersToDelete the RayCluster went
    through, and the operator's scale Events."""
    pods = {
        p["metadata"]["name"]: ((p.get("status") or {}).get("phase"), p["metadata"].get("deletionTimestamp"))
        for p in workers
    }
    replicas = [
        (g.get("replicas"), (g.get("scaleStrategy") or {}).get("workersToDelete")) for g in watch.groups()
    ]
    scaled = _events(local, namespace, "ScaledWorkerGroup") + _events(local, namespace, "DeletedWorkerPod")
    return f"pods (phase, deletion): {pods}; replicas history: {replicas}; events: {scaled}"


def _events(local: LocalInstance, namespace: str, reason: str) -> list[str]:
    listed = json.loads(local.kubectl("get", "events", "-n", namespace, "-o", "json"))
    return [e["message"] for e in listed["items"] if e["reason"] == reason]


def _named_in(events: list[str], done: str, why: str) -> set[str]:
    """The pods that `ScaledWorkerGroup` Events (`Worker group G: <done> N Pod(s) [a b]: <why>`) name."""
    named: set[str] = set()
    for message in events:
        head, _, rest = message.partition(" Pod(s) [")
        pods, _, reason = rest.partition("]: ")
        if f": {done} " in head and why in reason:
            named.update(pods.split())
    return named


@pytest.mark.parametrize(
    ("sample", "version"),
    [("ray-cluster.autoscaler.yaml", "v1"), ("ray-cluster.autoscaler-v2.yaml", "v2")],
)
def test_rays_autoscaler_scales_workers_up_for_demand_and_removes_the_idle_ones(
    local_process: LocalInstance, sample: str, version: str
) -> None:
    local = local_process
    namespace = local.namespace(f"autoscaler-{version}")
    docs = _sample(sample, version)
    (cluster,) = [d for d in docs if d["kind"] == "RayCluster"]
    name = cluster["metadata"]["name"]
    group = cluster["spec"]["workerGroupSpecs"][0]
    local.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump_all(docs))
    try:
        ready = eventually(
            lambda: (c := local.get("raycluster", name, namespace)).get("status", {}).get("state") == "ready" and c,
            TIMEOUT, f"RayCluster {namespace}/{name} ready", every=KUBECTL_POLL,
        )  # fmt: skip
        head = ready["status"]["head"]["podName"]
        head_pod = local.get("pod", head, namespace)

        # The per-cluster ServiceAccount, Role and RoleBinding, as upstream makes them; the sidecar runs as it.
        assert head_pod["spec"]["serviceAccountName"] == name
        role = local.get("role", name, namespace)
        assert role["rules"] == [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
            {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
        ]
        binding = local.get("rolebinding", name, namespace)
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
        probe = local.kubectl("exec", "-n", namespace, head, "-c", "autoscaler", "--",
                              "python", "-c", RBAC_PROBE, namespace, name, "no-such-pod")  # fmt: skip
        assert probe.split() == [
            "GET",
            name,
            "CONFIG",
            str(IDLE_TIMEOUT_SECONDS / 60),
            "1000",
            "DELETE",
            "403",
        ], probe
        # v2's wiring: the Ray container carries the flag that makes Ray start the version asked for.
        ray_env = {e["name"]: e.get("value") for e in head_pod["spec"]["containers"][0]["env"]}
        assert ray_env["RAY_enable_autoscaler_v2"] == ("true" if version == "v2" else "false")

        watch = SpecWatch(local, name, namespace)
        try:
            driver = _kubectl(
                local, "exec", "-n", namespace, head, "-c", "ray-head", "--", "python", "-c", DRIVER
            )
            assert driver.returncode == 0, driver.stderr[-3000:]
            # The list is the line's rest; Ray may forward its processes' log lines to the driver after it.
            ran_on = yaml.safe_load(driver.stdout.split("RAN ON", 1)[1].strip().splitlines()[0])
            worker_pods = _worker_pods(local, namespace, name)
            made = {p["metadata"]["name"] for p in worker_pods}
            # The head has no CPUs for tasks: they ran on the workers the autoscaler asked for.
            assert len(made) == TASKS, _scale_story(local, namespace, worker_pods, watch)
            assert set(ran_on) <= made, (ran_on, made)

            # (workersToDelete may stay: v1 clears it on its next update, v2 only with its next scale
            # request, and the operator never does.)
            def back_to_min() -> bool:
                spec = local.get("raycluster", name, namespace)["spec"]["workerGroupSpecs"][0]
                return spec.get("replicas") == group["minReplicas"] and not _workers(local, namespace, name)

            eventually(
                back_to_min,
                TIMEOUT,
                f"{name}'s workers gone after {IDLE_TIMEOUT_SECONDS} s idle",
                every=KUBECTL_POLL,
            )
        finally:
            watch.stop()

        history = watch.groups()
        assert max(g.get("replicas", 0) for g in history) == TASKS
        named = {n for g in history for n in (g.get("scaleStrategy") or {}).get("workersToDelete") or ()}
        assert named == made
        # The operator deleted exactly the pods the autoscaler named, and none at random.
        deleted = _events(local, namespace, "DeletedWorkerPod")
        assert sorted(deleted) == sorted(f"Deleted pod {namespace}/{pod}" for pod in made)
        assert sorted(_events(local, namespace, "CreatedWorkerPod")) == sorted(
            f"Created worker Pod {namespace}/{pod}" for pod in made
        )

        # Beyond upstream: the scale decisions as Events, naming the pods and why.
        scaled = _events(local, namespace, "ScaledWorkerGroup")
        assert _named_in(scaled, "created", "wanted (replicas ") == made, scaled
        assert _named_in(scaled, "deleted", "named in scaleStrategy.workersToDelete") == made, scaled

        log = local.kubectl("logs", "-n", namespace, head, "-c", "autoscaler")
        # requests' words for a refusal (a bare "403" also matches the milliseconds of a timestamp).
        assert "403 Client Error" not in log and "Forbidden" not in log
        # v2 runs the instance manager; v1 does not.
        assert ("instance_manager.py" in log) == (version == "v2"), log[-3000:]
        conditions = {c["type"] for c in local.get("raycluster", name, namespace)["status"]["conditions"]}
        assert "AutoscalerFailure" not in conditions
    finally:
        local.kubectl("delete", "raycluster", name, "-n", namespace, "--wait=false")


def test_an_autoscaler_that_cannot_start_shows_in_the_rayclusters_conditions(
    local_process: LocalInstance,
) -> None:
    """v2 (the head's restart policy is Never): the sidecar exits once, the pod stays Running, and only the
    AutoscalerFailure condition says the cluster cannot scale."""
    local = local_process
    namespace = local.namespace("autoscaler-broken")
    docs = _sample("ray-cluster.autoscaler-v2.yaml", "v2")
    (cluster,) = [d for d in docs if d["kind"] == "RayCluster"]
    cluster["spec"]["autoscalerOptions"]["args"] = ["ray kuberay-autoscaler --no-such-flag"]
    name = cluster["metadata"]["name"]
    local.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump_all(docs))
    try:
        failure = eventually(
            lambda: next(
                (c for c in local.get("raycluster", name, namespace).get("status", {}).get("conditions", ())
                 if c["type"] == "AutoscalerFailure"), None,
            ),
            TIMEOUT, "the AutoscalerFailure condition", every=KUBECTL_POLL,
        )  # fmt: skip
        assert failure["status"] == "True"
        assert failure["reason"] == "Error"
        assert "exit code 2" in failure["message"], failure
        head = local.get("raycluster", name, namespace)["status"]["head"]["podName"]
        assert "No such option" in local.kubectl("logs", "-n", namespace, head, "-c", "autoscaler")
    finally:
        local.kubectl("delete", "raycluster", name, "-n", namespace, "--wait=false")
