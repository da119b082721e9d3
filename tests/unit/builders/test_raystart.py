from typing import Any

import pytest

from kuberay.builders import raystart


def derive(node_type: raystart.NodeType, params: dict[str, str], resources: dict[str, Any]) -> str:
    return raystart.ray_start_command(node_type, raystart.with_container_resources(params, resources))


@pytest.mark.parametrize(
    ("node_type", "params", "limits", "expected"),
    [
        ("worker", {}, {"nvidia.com/gpu": "1"}, "ray start  --num-gpus=1 "),
        ("worker", {}, {"nvidia.com/mig-2g.32gb": "1"}, "ray start  --num-gpus=1 "),
        ("worker", {}, {"google.com/tpu": "4"}, "ray start  --resources='{\"TPU\":4}' "),
        (
            "head",
            {},
            {"aws.amazon.com/neuroncore": "4"},
            "ray start --head  --resources='{\"neuron_cores\":4}' ",
        ),
        (
            "head",
            {},
            {"aws.amazon.com/neuroncore": "4", "nvidia.com/gpu": "1"},
            "ray start --head  --num-gpus=1  --resources='{\"neuron_cores\":4}' ",
        ),
        (
            "head",
            {},
            {"google.com/tpu": "8", "aws.amazon.com/neuroncore": "4", "nvidia.com/gpu": "1"},
            "ray start --head  --num-gpus=1  --resources='{\"neuron_cores\":4}' ",
        ),
        (
            "head",
            {"resources": '"{"custom_resource":2}"'},
            {"aws.amazon.com/neuroncore": "4"},
            'ray start --head  --resources=\'{"custom_resource":2,"neuron_cores":4}\' ',
        ),
        (
            "head",
            {"resources": '\'{"custom_resource":2,"neuron_cores":3}\''},
            {"aws.amazon.com/neuroncore": "4"},
            'ray start --head  --resources=\'{"custom_resource":2,"neuron_cores":3}\' ',
        ),
        (
            "head",
            {"resources": '\'{"custom_resource":2,"TPU":4}\''},
            {"google.com/tpu": "8"},
            'ray start --head  --resources=\'{"custom_resource":2,"TPU":4}\' ',
        ),
        ("head", {"resources": "{"}, {"aws.amazon.com/neuroncore": "4"}, "ray start --head  --resources={ "),
        ("head", {"include-log-monitor": "false"}, {}, "ray start --head  --include-log-monitor=false "),
        ("head", {"include-log-monitor": "true"}, {}, "ray start --head  --include-log-monitor=true "),
        ("worker", {}, {"nvidia.com/gpu": "2", "amd.com/gpu": "1"}, "ray start  --num-gpus=1 "),
        ("worker", {"num-gpus": "0"}, {"nvidia.com/gpu": "2"}, "ray start  --num-gpus=0 "),
        ("worker", {}, {"google.com/tpu": "0", "nvidia.com/gpu": "0"}, "ray start "),
    ],
)
def test_accelerators_from_limits(
    node_type: raystart.NodeType, params: dict[str, str], limits: dict[str, str], expected: str
) -> None:
    assert derive(node_type, params, {"limits": limits}) == expected


def test_head_command_with_defaults_and_container_limits() -> None:
    params = raystart.with_missing_params({}, "head")
    command = derive("head", params, {"limits": {"cpu": "1", "memory": "1Gi"}})
    assert command == (
        "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0 "
        " --memory=1073741824  --metrics-export-port=8080  --num-cpus=1 "
    )


def test_worker_command_with_address_and_fractional_cpu() -> None:
    params = raystart.with_missing_params(
        {"block": "false", "port": "6379"}, "worker", "c-head-svc.ns.svc.cluster.local:6379"
    )
    command = derive("worker", params, {"requests": {"cpu": "500m", "memory": "1Gi"}})
    assert command == (
        "ray start  --address=c-head-svc.ns.svc.cluster.local:6379  --block  --dashboard-agent-listen-port=52365 "
        " --metrics-export-port=8080  --num-cpus=1  --port=6379 "
    )


def test_cpu_from_limit_before_request_and_memory_from_limit_only() -> None:
    params = raystart.with_container_resources(
        {}, {"limits": {"cpu": "2"}, "requests": {"cpu": "1", "memory": "2Gi"}}
    )
    assert params == {"num-cpus": "2"}
    assert raystart.with_container_resources({"num-cpus": "7"}, {"limits": {"cpu": "2"}}) == {"num-cpus": "7"}


def test_missing_params_keep_user_values_but_always_block() -> None:
    user = {
        "dashboard-host": "localhost",
        "metrics-export-port": "9000",
        "block": "false",
        "dashboard-agent-listen-port": "1",
    }
    assert raystart.with_missing_params(user, "head") == {**user, "block": "true"}
    worker = raystart.with_missing_params({"address": "x:1"}, "worker", "ignored:2")
    assert worker["address"] == "x:1" and "dashboard-host" not in worker


@pytest.mark.parametrize(
    ("resources", "before", "after"),
    [
        ({"CPU": "2", "GPU": "4"}, {}, {"num-cpus": "2", "num-gpus": "4"}),
        ({"nvidia.com/gpu": "1", "TPU": "4"}, {}, {"num-gpus": "1", "resources": "'{\"TPU\":4}'"}),
        (
            {"cpu": "4", "Custom-Resource": "5"},
            {"num-cpus": "1", "memory": "1000", "resources": "'{\"x\":1}'"},
            {"num-cpus": "4", "memory": "1000", "resources": "'{\"Custom-Resource\":5}'"},
        ),
        (
            {"memory": "1Gi", "custom": "500m", "bad": "x1"},
            {},
            {"memory": "1073741824", "resources": "'{\"custom\":0.5}'"},
        ),
        ({}, {"a": "b"}, {"a": "b"}),
    ],
)
def test_group_resources(resources: dict[str, str], before: dict[str, str], after: dict[str, str]) -> None:
    assert raystart.with_group_resources(before, resources) == after


def test_group_labels_sorted_by_key() -> None:
    assert raystart.with_group_labels({"labels": "old=1"}, {"zone": "a", "accel": "tpu"}) == {
        "labels": "accel=tpu,zone=a"
    }
    assert raystart.with_group_labels({"labels": "old=1"}, {}) == {"labels": "old=1"}


@pytest.mark.parametrize(
    ("key", "gpu"),
    [
        ("nvidia.com/gpu", True),
        ("amd.com/gpu", True),
        ("foo.bar/gpu", True),
        ("nvidia.com/mig-2g.32gb", True),
        ("nvidia.com/mig-12g.128gb", True),
        ("nvidia.com/gpu-mig-12g.128gb", False),
        ("cpu", False),
        ("memory", False),
        ("google.com/tpu", False),
    ],
)
def test_gpu_resource_keys(key: str, gpu: bool) -> None:
    assert raystart.is_gpu_resource_key(key) is gpu


def test_flags_render_booleans_as_switches() -> None:
    flags = raystart.render_flags(
        {"no-monitor": "True", "disable-usage-stats": "false", "log-color": "false", "num-cpus": "0"}
    )
    assert flags == " --log-color=false  --no-monitor  --num-cpus=0 "


def test_head_port() -> None:
    assert raystart.head_port({}) == "6379" and raystart.head_port({"port": "6380"}) == "6380"


@pytest.mark.parametrize("node_type", ["redis-cleanup", "Head", ""])
def test_an_unknown_node_type_renders_no_command(node_type: str) -> None:
    assert raystart.ray_start_command(node_type, {"block": "true", "num-cpus": "1"}) == ""
