"""The APIServer's pure parts: Go-style flags, upstream's error chains and HTTP mapping, the ConfigMap form of
a compute template, and the RayCluster a Cluster becomes and the Cluster it reads back as."""

from __future__ import annotations

import grpc
import pytest

from kuberay.apiserver import clusters, errors, main, templates


def test_flags_have_upstreams_names_and_defaults() -> None:
    args = main.parser().parse_args([])
    assert (args.rpcPortFlag, args.httpPortFlag, args.grpc_timeout) == (":8887", ":8888", 60.0)
    assert (
        args.collectMetricsFlag is True and args.enable_api_server_v2 is True and args.cors_allow_origin == ""
    )
    go_style = main.parser().parse_args(["-collectMetricsFlag=false", "-grpc_timeout", "1m30s", "--enable-api-server-v2=f",
                                         "-cors-allow-origin=*", "-auth-token-review"])  # fmt: skip
    assert go_style.collectMetricsFlag is False and go_style.grpc_timeout == 90.0
    assert (
        go_style.enable_api_server_v2 is False
        and go_style.cors_allow_origin == "*"
        and go_style.auth_token_review
    )
    with pytest.raises(SystemExit):
        main.parser().parse_args(["-collectMetricsFlag=maybe"])


def test_error_chain_and_http_body() -> None:
    error = errors.invalid_input("Namespace is empty. Please specify a valid value.").wrap("Validate failed.")
    assert error.message == ("Namespace is empty. Please specify a valid value.: Validate failed.: "
                             "Invalid input error: Namespace is empty. Please specify a valid value.")  # fmt: skip
    assert (error.http_status, error.http_body()["code"]) == (400, 3)
    status_of = {code: errors.UserError(code, "x").http_status for code in grpc.StatusCode}
    assert status_of[grpc.StatusCode.NOT_FOUND] == 404 and status_of[grpc.StatusCode.ALREADY_EXISTS] == 409
    assert status_of[grpc.StatusCode.ABORTED] == 409 and status_of[grpc.StatusCode.UNAUTHENTICATED] == 401
    assert status_of[grpc.StatusCode.DEADLINE_EXCEEDED] == 504 and status_of[grpc.StatusCode.UNKNOWN] == 500


def test_compute_template_round_trip() -> None:
    template = {"name": "t", "namespace": "n", "cpu": 4, "memory": 8, "gpu": 1, "gpu_accelerator": "amd.com/gpu",
                "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]}  # fmt: skip
    config_map = templates.to_config_map(template)
    assert config_map["data"]["extended_resources"] == "null" and config_map["data"]["memory_unit"] == "Gi"
    assert templates.from_config_map(config_map) == {**template, "memory_unit": "Gi"}
    with pytest.raises(errors.UserError, match="computeTemplate.memoryUnit: 'GB' is not a quantity suffix"):
        templates.validate_create({"namespace": "n", "compute_template": {**template, "memory_unit": "GB"}})


def test_cluster_to_raycluster_and_back() -> None:
    spec = {"head_group_spec": {"compute_template": "t", "ray_start_params": {"num-cpus": "0"}, "labels": {"a": "b"},
                                "environment": {"values": {"X": "1"}}},
            "worker_group_spec": [{"group_name": "w", "compute_template": "t", "replicas": 2, "max_replicas": 5}]}  # fmt: skip
    cluster = {"name": "c", "namespace": "n", "user": "u", "version": "2.46.0", "cluster_spec": spec}
    template = {"name": "t", "cpu": 1, "memory": 2, "memory_unit": "Gi", "extended_resources": {"x.io/r": 3}}
    obj = clusters.to_raycluster(cluster, {"t": template}, "now")
    assert obj["metadata"]["labels"]["ray.io/environment"] == "DEV"
    worker = obj["spec"]["workerGroupSpecs"][0]
    assert (worker["minReplicas"], worker["maxReplicas"], worker["replicas"]) == (2, 5, 2)
    head = obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["resources"]["limits"] == {"cpu": "1", "memory": "2Gi", "x.io/r": "3"}
    assert {"name": "X", "value": "1"} in head["env"]
    back = clusters.from_raycluster({**obj, "status": {"state": "ready"}}, [])
    assert back["cluster_state"] == "ready" and back["environment"] == "DEV"
    assert back["cluster_spec"]["head_group_spec"]["environment"] == {"values": {"X": "1"}, "valuesFrom": {}}
    assert back["cluster_spec"]["head_group_spec"]["labels"] == {"a": "b"}
    assert back["cluster_spec"]["worker_group_spec"][0]["max_replicas"] == 5


def test_volumes_to_pod_and_back() -> None:
    from kuberay.apiserver import volumes

    api = [
        {"name": "cfg", "mount_path": "/etc/cfg", "volume_type": "CONFIGMAP", "source": "cm", "items": {"a": "b"}},
        {"name": "scratch", "mount_path": "/scratch", "volume_type": "EPHEMERAL", "storage": "5Gi",
         "storageClassName": "fast", "accessMode": "RWX"},
        {"name": "host", "mount_path": "/host", "volume_type": "HOST_PATH", "source": "/data", "host_path_type": "FILE",
         "mount_propagation_mode": "HOSTTOCONTAINER", "read_only": True},
    ]  # fmt: skip
    pod_volumes, mounts = volumes.to_pod(api)
    assert pod_volumes[0] == {
        "name": "cfg",
        "configMap": {"name": "cm", "items": [{"key": "a", "path": "b"}]},
    }
    claim = pod_volumes[1]["ephemeral"]["volumeClaimTemplate"]
    assert claim["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kuberay-apiserver"}
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"] and claim["spec"]["storageClassName"] == "fast"
    assert mounts[2] == {
        "name": "host",
        "mountPath": "/host",
        "readOnly": True,
        "mountPropagation": "HostToContainer",
    }
    back = volumes.from_pod({"volumes": pod_volumes, "containers": [{"volumeMounts": mounts}]})
    assert back == [{**api[0]}, {**api[1]}, {**api[2]}]
    with pytest.raises(volumes.VolumeSpecError, match="storage for ephemeral volume is empty"):
        volumes.to_pod([{"name": "e", "volume_type": "EPHEMERAL"}])


async def test_a_call_past_grpc_timeout_is_deadline_exceeded() -> None:
    import asyncio

    from prometheus_client import CollectorRegistry, generate_latest

    from kuberay.apiserver import protos
    from kuberay.apiserver.dispatch import Dispatcher, ServerMetrics

    method = next(m for m in protos.methods() if m.name == "ListAllClusters")

    async def slow(backend: object, request: dict[str, object]) -> dict[str, object]:
        await asyncio.sleep(5)
        return {}

    registry = CollectorRegistry()
    dispatcher = Dispatcher({method.full_name: slow}, ServerMetrics(registry), timeout=0.05)
    with pytest.raises(errors.UserError) as raised:
        await dispatcher.call(method, method.request(), backend=None)  # type: ignore[arg-type]
    assert raised.value.code == grpc.StatusCode.DEADLINE_EXCEEDED and raised.value.http_status == 504
    assert 'grpc_code="DeadlineExceeded",grpc_method="ListAllClusters"' in generate_latest(registry).decode()
