import pytest

from kuberay.controllers.raycluster import replicas, resources

MAX = 2**31 - 1


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5}, 3),
        ({"replicas": 0, "minReplicas": 2, "maxReplicas": 5}, 2),  # raised to min
        ({"minReplicas": 2, "maxReplicas": 5}, 2),  # unset replicas means min
        ({"replicas": 9, "minReplicas": 1, "maxReplicas": 4}, 4),  # capped at max
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5, "numOfHosts": 4}, 12),  # pods, not replicas
        ({"replicas": 3, "numOfHosts": 0}, 0),
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5, "suspend": True}, 0),
    ],
)
def test_group_desired_replicas(group: dict[str, object], expected: int) -> None:
    assert replicas.group_desired_replicas(group) == expected


@pytest.mark.parametrize(
    ("group", "why"),
    [
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5}, "replicas 3"),
        ({"replicas": 0, "minReplicas": 2, "maxReplicas": 5}, "replicas 0 below minReplicas 2"),
        ({"minReplicas": 2}, "replicas unset, minReplicas 2"),
        ({"replicas": 9, "minReplicas": 1, "maxReplicas": 4}, "replicas 9 above maxReplicas 4"),
        (
            {"replicas": 1, "minReplicas": 6, "maxReplicas": 4},
            "replicas 1 below minReplicas 6 above maxReplicas 4",
        ),
        ({"replicas": 3, "numOfHosts": 4}, "replicas 3 x numOfHosts 4"),
        ({"replicas": 3, "suspend": True}, "suspended"),
    ],
)
def test_the_scale_events_explain_the_desired_pods(group: dict[str, object], why: str) -> None:
    assert replicas.explain_desired(group) == why


def test_cluster_min_and_max_skip_suspended_groups_and_clamp_to_int32() -> None:
    spec = {
        "workerGroupSpecs": [
            {"replicas": 1, "minReplicas": 1, "maxReplicas": MAX, "numOfHosts": 2},
            {"replicas": 1, "minReplicas": 5, "maxReplicas": 5, "suspend": True},
            {"replicas": 2, "minReplicas": 0, "maxReplicas": 3},
        ]
    }
    assert replicas.desired_worker_replicas(spec) == 1 * 2 + 0 + 2
    assert replicas.min_worker_replicas(spec) == 2
    assert replicas.max_worker_replicas(spec) == MAX  # 2*MAX + 3 does not fit an int32


def test_desired_resources_count_requests_then_limits_times_hosts_and_raw_replicas() -> None:
    def pod(*containers: dict[str, object]) -> dict[str, object]:
        return {"spec": {"containers": list(containers)}}

    head = {
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "nvidia.com/gpu": 1}}
    }
    worker = {"resources": {"limits": {"cpu": "500m", "memory": "1Gi", "google.com/tpu": 4}}}
    spec = {
        "headGroupSpec": {"template": pod(head)},
        "workerGroupSpecs": [
            {"replicas": 3, "numOfHosts": 2, "template": pod(worker)},
            {"replicas": 7, "suspend": True, "template": pod(worker)},
        ],
    }
    assert resources.desired_resources(spec) == {
        "desiredCPU": "4",  # 1 (request wins over the limit) + 6 x 0.5
        "desiredMemory": "8Gi",
        "desiredGPU": "1",
        "desiredTPU": "24",
    }


def test_desired_gpu_counts_every_gpu_resource_name_nvidia_mig_slices_included() -> None:
    def group(replicas: int, limits: dict[str, object]) -> dict[str, object]:
        template = {"spec": {"containers": [{"resources": {"limits": limits}}]}}
        return {"replicas": replicas, "template": template}

    spec = {
        "headGroupSpec": {"template": {"spec": {"containers": [{"resources": {"limits": {"cpu": "1"}}}]}}},
        "workerGroupSpecs": [
            group(2, {"nvidia.com/mig-1g.10gb": 1}),
            group(1, {"nvidia.com/mig-3g.40gb": 2, "amd.com/gpu": 1}),
            group(4, {"example.com/mig-1g.10gb": 1}),  # only NVIDIA names MIG slices so
        ],
    }
    assert resources.desired_resources(spec)["desiredGPU"] == "5"
