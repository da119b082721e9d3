from pathlib import Path
from typing import Any

import pytest

from kuberay.builders import rediscleanup
from support import golden
from unit.builders import podcases

DIRECTORY = Path(__file__).parent / "testdata" / "rediscleanup"

# The command line as spec/raycluster.md §2.16 gives it.
SPEC_COMMAND = (
    'echo "To get more information about manually deleting the storage namespace in Redis and removing the '
    "RayCluster's finalizer, please check https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html "
    'for more details." && python -c "from ray._private.gcs_utils import cleanup_redis_storage; from urllib.parse '
    "import urlparse; import os; import sys; redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
    "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; parsed = "
    "urlparse(redis_address); sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, "
    "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', "
    "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\""
)


def build(case: Path) -> dict[str, Any]:
    cluster, options, _ = podcases.load(case)
    return rediscleanup.build_redis_cleanup_job(cluster, options)


@pytest.mark.parametrize("case", golden.cases(DIRECTORY), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), build(case))


def test_command_matches_the_spec() -> None:
    assert rediscleanup.cleanup_command(with_username=False) == SPEC_COMMAND
    with_username = SPEC_COMMAND.replace(
        "port=parsed.port, ", "port=parsed.port, username=os.getenv('REDIS_USERNAME', parsed.username), "
    )
    assert rediscleanup.cleanup_command(with_username=True) == with_username


def test_job_from_the_head_pod() -> None:
    job = build(DIRECTORY / "redis-username-mtls.input.yaml")
    assert job["metadata"]["name"] == "raycluster-external-redis-redis-cleanup"
    assert job["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"
    assert job["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"
    assert "team" not in job["metadata"]["annotations"]  # RayCluster annotations do not reach pods
    assert job["metadata"]["ownerReferences"][0]["uid"] == "uid-20"
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 300
    template = job["spec"]["template"]
    assert template["metadata"]["generateName"] == "raycluster-external-redis-head-"
    spec = template["spec"]
    assert [c["name"] for c in spec["containers"]] == ["ray-head"]
    assert [c["name"] for c in spec["initContainers"]] == ["user-init"]
    assert spec["restartPolicy"] == "Never"
    ray = spec["containers"][0]
    assert "username=os.getenv('REDIS_USERNAME'" in ray["args"][0] and ray["command"] == [
        "/bin/bash",
        "-c",
        "--",
    ]
    assert "livenessProbe" not in ray and "readinessProbe" not in ray
    assert ray["resources"] == {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "200m", "memory": "256Mi"},
    }
    assert [e["name"] for e in ray["env"]][-2:] == [
        "RAY_redis_db_connect_retries",
        "RAY_redis_db_connect_wait_milliseconds",
    ]


def test_job_name_is_trimmed_as_a_label() -> None:
    job = build(DIRECTORY / "legacy-password.input.yaml")
    name = job["metadata"]["name"]
    assert (
        len(name) == 63
        and name.endswith("-redis-cleanup")
        and name == "a-very-long-raycluster-name-that-needs-trimming-for-jobs-redis-cleanup"[-63:]
    )
    assert "username=" not in job["spec"]["template"]["spec"]["containers"][0]["args"][0]
