"""Direct checks of the key facts of each golden case (the golden files pin everything else)."""

from typing import Any

import pytest

from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.builders import pod
from unit.builders import podcases


def build(case: str) -> dict[str, Any]:
    return podcases.build_all(podcases.DIRECTORY / f"{case}.input.yaml")


def ray(p: dict[str, Any]) -> dict[str, Any]:
    return p["spec"]["containers"][0]  # type: ignore[no-any-return]


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def env_names(container: dict[str, Any]) -> list[str]:
    return [e["name"] for e in container.get("env", [])]


def start(p: dict[str, Any]) -> str:
    return env(ray(p))["KUBERAY_GEN_RAY_START_CMD"]  # type: ignore[no-any-return]


def test_plain() -> None:
    pods = build("plain")
    head, worker = pods["head"], pods["workers"]["workergroup"]
    assert head["metadata"]["generateName"] == "raycluster-kuberay-head-"
    assert (
        head["metadata"]["labels"]["ray.io/cluster"] == "raycluster-kuberay"
    )  # the template's spoof is ignored
    assert head["metadata"]["ownerReferences"][0]["controller"] is True
    assert start(head) == (
        "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0 "
        " --memory=2000000000  --metrics-export-port=8080  --num-cpus=1 "
    )
    assert ray(head)["args"] == ["ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; " + start(head)]
    assert env_names(ray(head)) == [
        "RAY_CLUSTER_NAME",
        "RAY_CLUSTER_NAMESPACE",
        "RAY_CLOUD_INSTANCE_ID",
        "RAY_NODE_TYPE_NAME",
        "KUBERAY_GEN_RAY_START_CMD",
        "RAY_PORT",
        "RAY_ADDRESS",
        "RAY_USAGE_STATS_KUBERAY_IN_USE",
        "RAY_USAGE_STATS_EXTRA_TAGS",
        "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE",
    ]
    assert env(ray(head))["RAY_ADDRESS"] == "127.0.0.1:6379"
    assert {"name": "metrics", "containerPort": 8080} in ray(head)["ports"]
    assert head["spec"]["volumes"] == [
        {"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "2G"}}
    ]
    assert (
        "name" not in worker["metadata"]
        and worker["metadata"]["generateName"] == "raycluster-kuberay-workergroup-worker-"
    )
    fqdn = "raycluster-kuberay-head-svc.default.svc.cluster.local"
    assert env_names(ray(worker))[:3] == ["MY_ENV", "FQ_RAY_IP", "RAY_IP"]
    assert env(ray(worker))["RAY_ADDRESS"] == f"{fqdn}:6379"
    assert "RAY_USAGE_STATS_EXTRA_TAGS" not in env(ray(worker))
    assert start(worker).startswith(f"ray start  --address={fqdn}:6379  --block ")
    assert "--num-cpus=1 " in start(worker)  # from the limit, not the 500m request
    (init,) = worker["spec"]["initContainers"]
    assert init["name"] == "wait-gcs-ready" and f"ray health-check --address {fqdn}:6379" in init["args"][0]
    assert env_names(init) == ["MY_ENV", "FQ_RAY_IP", "RAY_IP"]
    assert init["resources"]["limits"] == {"cpu": "200m", "memory": "256Mi"}
    assert (
        ray(worker)["readinessProbe"]["timeoutSeconds"] == 2
        and ray(head)["readinessProbe"]["timeoutSeconds"] == 5
    )
    assert "gcs_healthz" in ray(head)["livenessProbe"]["exec"]["command"][2]
    assert "gcs_healthz" not in ray(worker)["livenessProbe"]["exec"]["command"][2]


def test_gpu_and_accelerators() -> None:
    gpu = build("gpu")
    assert " --num-cpus=2  --num-gpus=4 " in start(gpu["head"])  # group resources beat params and limits
    assert " --memory=8589934592 " in start(gpu["head"])
    assert " --num-cpus=4  --num-gpus=2 " in start(gpu["workers"]["gpu-group"])  # 3500m rounds up
    accel = build("accelerators")
    assert start(accel["head"]).endswith(" --num-cpus=2  --resources='{\"neuron_cores\":2}' ")
    assert start(accel["workers"]["mixed-gpus"]).endswith(
        " --num-gpus=2  --resources='{\"neuron_cores\":8}' "
    )
    assert " --num-gpus=1 " in start(accel["workers"]["mig"])
    assert start(accel["workers"]["neuron-declared"]).endswith(
        ' --resources=\'{"neuron_cores":1,"custom":0.5}\' '
    )


def test_tpu_and_multihost() -> None:
    tpu = build("tpu")
    assert start(tpu["workers"]["tpu-group"]).endswith(" --num-cpus=24  --resources='{\"TPU\":4}' ")
    assert "volumes" not in tpu["head"]["spec"]  # plasma-directory: no /dev/shm
    labels = build("multihost")["workers"]["tpu-group"]["metadata"]["labels"]
    assert labels["ray.io/worker-group-replica-index"] == "3"
    assert labels["ray.io/worker-group-replica-name"] == "tpu-group-x7k2p"
    assert labels["ray.io/replica-host-index"] == "1"
    single_host = build("tpu")["workers"]["tpu-group"]["metadata"]["labels"]
    assert (
        single_host["ray.io/worker-group-replica-index"] == "0"
        and "ray.io/replica-host-index" not in single_host
    )


def test_multihost_labels_need_the_gate() -> None:
    cluster, _, _ = podcases.load(podcases.DIRECTORY / "multihost.input.yaml")
    options = pod.PodOptions(feature_gates=FeatureGates({Feature.RAY_MULTI_HOST_INDEXING: False}))
    group = (cluster.spec.worker_group_specs or [])[0]
    labels = pod.build_worker_pod(cluster, group, options, replica_index=3, host_index=1)["metadata"][
        "labels"
    ]
    assert not any(key.startswith(("ray.io/worker-group-replica", "ray.io/replica-host")) for key in labels)


def test_custom_resources_and_labels() -> None:
    pods = build("custom-resources")
    head, worker = pods["head"], pods["workers"]["custom"]
    assert (
        " --memory=1572864000 " in start(head)
        and " --num-cpus=4 " in start(head)
        and " --num-gpus=0 " in start(head)
    )
    assert " --resources='{\"Custom-Resource\":5}' " in start(head)
    assert (
        head["metadata"]["labels"]["ray.io/node-type"] == "head"
        and head["metadata"]["labels"]["zone"] == "us-east1"
    )
    assert " --labels=accelerator=a100,ray.io/is-ray-node=custom " in start(worker)
    assert " --resources='{\"special\":0.25}' " in start(worker) and " --num-gpus=1 " in start(worker)
    assert " --include-dashboard=false " in start(worker) and " --disable-usage-stats " in start(worker)
    assert (
        worker["metadata"]["labels"]["accelerator"] == "a100"
        and worker["metadata"]["labels"]["app"] == "demo"
    )


def test_autoscaler_v1() -> None:
    head = build("autoscaler-v1")["head"]
    sidecar = head["spec"]["containers"][1]
    assert sidecar["name"] == "autoscaler" and sidecar["image"] == "rayproject/ray:2.52.0-autoscaler"
    assert env_names(sidecar) == [
        "RAY_CLUSTER_NAME",
        "RAY_CLUSTER_NAMESPACE",
        "RAY_HEAD_POD_NAME",
        "KUBERAY_CRD_VER",
        "KUBERAY_GEN_AUTOSCALER_START_CMD",
        "AUTOSCALER_LOG_LEVEL",
    ]
    assert sidecar["args"] == ["ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD"]
    assert sidecar["command"] == ["/bin/bash", "-c", "--"]
    assert sidecar["resources"]["requests"] == {"cpu": "250m", "memory": "256Mi"}
    assert sidecar["volumeMounts"] == [
        {"name": "extra", "mountPath": "/extra"},
        {"name": "ray-logs", "mountPath": "/tmp/ray"},
    ]
    assert head["spec"]["serviceAccountName"] == "my-autoscaler-sa" and "restartPolicy" not in head["spec"]
    assert (
        env(ray(head))["RAY_enable_autoscaler_v2"] == "false"
        and env_names(ray(head))[0] == "RAY_enable_autoscaler_v2"
    )
    assert " --no-monitor " in start(head)
    assert {"name": "ray-logs", "emptyDir": {}} in head["spec"]["volumes"]


def test_autoscaler_v2() -> None:
    pods = build("autoscaler-v2")
    head = pods["head"]
    assert env(ray(head))["RAY_enable_autoscaler_v2"] == "true"
    assert (
        head["spec"]["restartPolicy"] == "Never"
        and pods["workers"]["small-group"]["spec"]["restartPolicy"] == "Never"
    )
    assert head["spec"]["serviceAccountName"] == "raycluster-autoscaler-v2"
    assert head["spec"]["containers"][1]["resources"]["limits"] == {"cpu": "500m", "memory": "512Mi"}
    assert {"name": "ray-logs", "mountPath": "/tmp/ray"} in ray(head)["volumeMounts"]


def test_gcs_ft_redis() -> None:
    pods = build("gcs-ft-redis")
    head = pods["head"]
    assert head["metadata"]["annotations"] == {
        "ray.io/external-storage-namespace": "my-raycluster-storage",
        "ray.io/ft-enabled": "true",
    }
    assert env_names(ray(head))[:4] == [
        "RAY_external_storage_namespace",
        "RAY_REDIS_ADDRESS",
        "REDIS_USERNAME",
        "REDIS_PASSWORD",
    ]
    assert env(ray(head))["REDIS_PASSWORD"] == {
        "secretKeyRef": {"name": "redis-password-secret", "key": "password"}
    }
    assert " --redis-password=$REDIS_PASSWORD  --redis-username=$REDIS_USERNAME " in start(head)
    worker = pods["workers"]["small-group"]
    assert env(ray(worker))["RAY_gcs_rpc_server_reconnect_timeout_s"] == "600"
    assert "annotations" not in worker["metadata"]


def test_gcs_ft_legacy_and_rocksdb() -> None:
    legacy = build("gcs-ft-legacy")
    assert env(ray(legacy["head"]))["REDIS_PASSWORD"] == "5241590000000000"
    assert legacy["head"]["metadata"]["annotations"]["ray.io/external-storage-namespace"] == "legacy-ns"
    assert env(ray(legacy["workers"]["small-group"]))["RAY_gcs_rpc_server_reconnect_timeout_s"] == "120"
    head = build("gcs-ft-rocksdb")["head"]
    assert env_names(ray(head))[:2] == ["RAY_gcs_storage", "RAY_gcs_storage_path"]
    assert {"name": "gcs-storage", "mountPath": "/data/gcs", "subPath": "gcs"} in ray(head)["volumeMounts"]
    assert {
        "name": "gcs-storage",
        "persistentVolumeClaim": {"claimName": "raycluster-embedded-ft-gcs-pvc"},
    } in head["spec"]["volumes"]
    assert "ray.io/external-storage-namespace" not in head["metadata"]["annotations"]


def test_token_auth() -> None:
    pods = build("token-auth")
    secret = {"secretKeyRef": {"name": "my-token", "key": "auth_token"}}
    head, worker = pods["head"], pods["workers"]["workers"]
    for container in (
        ray(head),
        head["spec"]["containers"][1],
        ray(worker),
        worker["spec"]["initContainers"][0],
    ):
        assert env(container)["RAY_AUTH_MODE"] == "token" and env(container)["RAY_AUTH_TOKEN"] == secret
    k8s = build("k8s-token-auth")["workers"]["workers"]
    mount = {"name": "ray-token", "readOnly": True, "mountPath": "/var/run/secrets/ray.io/serviceaccount"}
    assert mount in ray(k8s)["volumeMounts"] and mount in k8s["spec"]["initContainers"][0]["volumeMounts"]
    assert env(ray(k8s))["RAY_ENABLE_K8S_TOKEN_AUTH"] == "true" and "RAY_AUTH_TOKEN" not in env(ray(k8s))
    assert {
        "name": "ray-token",
        "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
    } in k8s["spec"]["volumes"]


def test_mtls() -> None:
    pods = build("mtls")
    head, worker = pods["head"], pods["workers"]["workers"]
    assert [c["name"] for c in worker["spec"]["initContainers"]] == [
        "wait-for-tls-ip-san",
        "user-init",
        "wait-gcs-ready",
    ]
    assert {"name": "ray-tls", "secret": {"secretName": "ray-worker-secret-raycluster-mtls"}} in worker[
        "spec"
    ]["volumes"]
    assert {"name": "ray-tls", "secret": {"secretName": "ray-head-secret-raycluster-mtls"}} in head["spec"][
        "volumes"
    ]
    assert env(ray(worker))["RAY_USE_TLS"] == "0"  # the user's value is kept
    assert env(head["spec"]["containers"][1])["RAY_TLS_CA_CERT"] == "/etc/ray/tls/ca.crt"
    wait = head["spec"]["initContainers"][0]
    assert wait["securityContext"] == {"runAsUser": 1000} and wait["command"] == ["sh", "-c"]
    assert env_names(wait) == ["POD_IP", "FQ_RAY_IP", "RAY_IP"]
    plain = build("plain")["head"]
    assert "initContainers" not in plain["spec"]  # the gate is off by default


def test_history_collector() -> None:
    pods = build("history-collector")
    collector = pods["head"]["spec"]["containers"][1]
    assert collector["name"] == "ray-history-collector" and collector["imagePullPolicy"] == "IfNotPresent"
    assert env_names(collector) == [
        "POD_IP",
        "RAY_CLUSTER_NAME",
        "RAY_CLUSTER_NAMESPACE",
        "RAY_ROLE",
        "EVENTS_PORT",
        "FQ_RAY_IP",
        "OWNER_KIND",
        "OWNER_NAME",
        "RAY_DASHBOARD_ADDRESS",
        "STORAGE_BUCKET",
        "RAY_AUTH_MODE",
        "RAY_AUTH_TOKEN",
    ]
    assert env(collector)["OWNER_KIND"] == "RayJob" and env(collector)["RAY_ROLE"] == "Head"
    assert "RAY_DASHBOARD_ADDRESS" not in env(pods["workers"]["workers"]["spec"]["containers"][1])
    assert env(ray(pods["head"]))["RAY_enable_ray_event"] == "true"
    assert (
        env(ray(pods["head"]))["RAY_USAGE_STATS_EXTRA_TAGS"] == "kuberay_version=nightly;kuberay_crd=RayJob"
    )
    assert ray(pods["head"])["livenessProbe"]["httpGet"] == {
        "path": "/api/healthz",
        "port": 52365,
    }  # Ray 2.53


def test_rayservice() -> None:
    pods = build("rayservice")
    head, worker = pods["head"], pods["workers"]["workers"]
    assert (
        head["metadata"]["labels"]["ray.io/serve"] == "false"
        and worker["metadata"]["labels"]["ray.io/serve"] == "true"
    )
    assert (
        env(ray(worker))["RAY_SERVE_KV_TIMEOUT_S"] == "30" and env(ray(head))["RAY_SERVE_KV_TIMEOUT_S"] == "5"
    )
    assert env(ray(head))["RAY_gcs_server_request_timeout_seconds"] == "5"
    assert ray(head)["readinessProbe"]["httpGet"] == {"path": "/api/healthz", "port": 52366}
    readiness = ray(worker)["readinessProbe"]
    assert readiness["failureThreshold"] == 1 and "httpGet" not in readiness
    assert readiness["exec"]["command"][2].endswith("http://localhost:8001/-/healthz | grep success")
    assert [p["name"] for p in ray(head)["ports"]] == ["serve", "metrics"]  # the user's metrics port is kept


def test_operator_options() -> None:
    pods = build("operator-options")
    head, worker = pods["head"], pods["workers"]["workers"]
    assert head["metadata"]["name"] == "raycluster-options-head" and "generateName" not in head["metadata"]
    assert ray(head)["command"] == ["/bin/bash", "-cl", "--"]
    assert env(ray(head))["TZ"] == "Europe/Paris" and env(ray(worker))["TZ"] == "UTC"
    assert env(ray(head))["RAY_PORT"] == "1" and env(ray(head))["RAY_ADDRESS"] == "127.0.0.1:6380"
    assert env(ray(worker))["FQ_RAY_IP"] == "custom-head.default.svc.corp.example"
    assert [c["name"] for c in head["spec"]["containers"]] == ["ray-head", "fluentbit"]
    assert (
        head["metadata"]["labels"]["team"] == "from-template"
        and worker["metadata"]["labels"]["team"] == "from-operator"
    )
    assert head["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert "initContainers" not in worker["spec"] and "readinessProbe" not in ray(worker)
    assert ray(worker)["livenessProbe"] == {"tcpSocket": {"port": 52365}}


def test_overwrite_and_custom_commands() -> None:
    pods = build("overwrite-container-cmd")
    for p in pods["head"], pods["workers"]["workers"]:
        assert p["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
        assert (
            ray(p)["command"] == ["/bin/bash", "-lc", "--"]
            and "$KUBERAY_GEN_RAY_START_CMD" in ray(p)["args"][0]
        )
    pods = build("head-command")
    assert ray(pods["head"])["args"] == [
        " echo 123  456  && ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; " + start(pods["head"])
    ]
    assert ray(pods["workers"]["workers"])["args"] == ["ray start --address=$FQ_RAY_IP:6379 --block"]


def test_recreate_hash_annotations_and_builder_purity() -> None:
    cluster, options, _ = podcases.load(podcases.DIRECTORY / "gcs-ft-redis.input.yaml")
    before = cluster.dump()
    head = pod.build_head_pod(cluster, options, recreate_hash="abc")
    assert head["metadata"]["annotations"]["ray.io/upgrade-strategy-recreate-hash"] == "abc"
    assert head["metadata"]["annotations"]["ray.io/kuberay-version"] == "nightly"
    assert cluster.dump() == before  # the cluster's rayStartParams and template are not touched
    assert pod.build_head_pod(cluster, options) == pod.build_head_pod(cluster, options)


def test_bad_input_names_the_field() -> None:
    cluster = RayCluster.parse(
        {"metadata": {"name": "c"}, "spec": {"headGroupSpec": {"template": {"spec": {"containers": []}}}}}
    )
    with pytest.raises(pod.PodBuildError, match="spec.headGroupSpec.template.spec.containers"):
        pod.build_head_pod(cluster, pod.PodOptions())


def test_null_fields_count_as_absent_and_odd_ports_fall_back() -> None:
    cluster = RayCluster.parse(
        {
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {
                "headGroupSpec": {
                    "rayStartParams": {
                        "dashboard-agent-listen-port": "not-a-port",
                        "dashboard-port": "+8266",
                    },
                    "template": {
                        "metadata": None,
                        "spec": {"containers": [{"name": "h", "env": None, "ports": None}]},
                    },
                }
            },
        }
    )
    head = pod.build_head_pod(cluster, pod.PodOptions())
    assert env_names(ray(head))[0] == "RAY_CLUSTER_NAME"
    probe = ray(head)["livenessProbe"]["exec"]["command"][2]
    assert (
        "http://localhost:52365/api/local_raylet_healthz" in probe
        and "http://localhost:8266/api/gcs_healthz" in probe
    )


def test_user_command_runs_before_ray_start() -> None:
    container = {"name": "w", "image": "ray", "command": ["python"], "args": ["/opt/code.py"]}
    group = {
        "groupName": "g",
        "maxReplicas": 1,
        "minReplicas": 0,
        "template": {"spec": {"containers": [container]}},
    }
    cluster = RayCluster.parse(
        {
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}},
                "workerGroupSpecs": [group],
            },
        }
    )
    worker = pod.build_worker_pod(
        cluster, (cluster.spec.worker_group_specs or [])[0], pod.PodOptions(login_shell=True)
    )
    assert ray(worker)["command"] == ["/bin/bash", "-cl", "--"]
    assert ray(worker)["args"] == [
        " python  /opt/code.py  && ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start "
        " --address=c-head-svc.ns.svc.cluster.local:6379  --block  --dashboard-agent-listen-port=52365 "
        " --metrics-export-port=8080 "
    ]
    assert worker["spec"]["initContainers"][0]["command"] == ["/bin/bash", "-cl", "--"]
