"""The Redis cleanup Job: deletes a deleted RayCluster's GCS state from its external Redis.

Built when a RayCluster with Redis-backed GCS fault tolerance is deleted (its finalizer waits for the Job).
It is the head pod turned into a one-shot Job, so it inherits the image, the Redis address, the
credentials and the storage namespace exactly as the head had them: only the Ray container is kept (no
sidecars), its command becomes a `cleanup_redis_storage` call, probes go, resources shrink to a fixed small
size, and the pod never restarts. Labels say `ray.io/node-type: redis-cleanup`. `wait-for-tls-ip-san` is
dropped: the mTLS controller never adds the Job pod's IP to a certificate, so it would wait forever.
"""

from __future__ import annotations

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import container, names, ownership, pod

_DOCS_HINT = (
    'echo "To get more information about manually deleting the storage namespace in Redis and removing the '
    "RayCluster's finalizer, please check "
    'https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html for more details."'
)
_CLEANUP_PREFIX = (
    "from ray._private.gcs_utils import cleanup_redis_storage; "
    "from urllib.parse import urlparse; "
    "import os; "
    "import sys; "
    "redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
    "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; "
    "parsed = urlparse(redis_address); "
)
_USERNAME_ARGUMENT = "username=os.getenv('REDIS_USERNAME', parsed.username), "
_CLEANUP_CALL = (
    "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, {username}"
    "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', "
    "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None"
)
ACTIVE_DEADLINE_SECONDS = 300


def cleanup_command(with_username: bool) -> str:
    """The shell line of the Job's container; the Redis username is passed only when the head has one."""
    call = _CLEANUP_CALL.format(username=_USERNAME_ARGUMENT if with_username else "")
    return f'{_DOCS_HINT} && python -c "{_CLEANUP_PREFIX}{call}"'


def job_name(cluster_name: str) -> str:
    return names.check_label(cluster_name + constants.REDIS_CLEANUP_SUFFIX)


def build_redis_cleanup_job(cluster: RayCluster, options: pod.PodOptions) -> container.JSON:
    """The Job that cleans `cluster`'s storage namespace out of Redis."""
    head = pod.build_head_pod(cluster, options)
    metadata, spec = head["metadata"], head["spec"]
    metadata["labels"][constants.RAY_NODE_TYPE_LABEL] = constants.REDIS_CLEANUP_NODE
    ray = spec["containers"][constants.RAY_CONTAINER_INDEX]
    spec["containers"] = [ray]
    init_containers = [
        init
        for init in spec.get("initContainers") or ()
        if init.get("name") != constants.WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME
    ]
    if init_containers:
        spec["initContainers"] = init_containers
    else:
        spec.pop("initContainers", None)
    ray["command"] = container.shell_command(options.login_shell)
    ray["args"] = [cleanup_command(container.env_exists(ray, constants.REDIS_USERNAME))]
    ray.pop("livenessProbe", None)
    ray.pop("readinessProbe", None)
    # At least 60 s of retries before the Job gives up on Redis.
    container.append_env(
        ray,
        {"name": constants.RAY_REDIS_DB_CONNECT_RETRIES, "value": "120"},
        {"name": constants.RAY_REDIS_DB_CONNECT_WAIT_MILLISECONDS, "value": "500"},
    )
    # Fixed and GPU-free: the cleanup needs little and must not wait for accelerators.
    ray["resources"] = container.fixed_resources("200m", "256Mi")
    spec["restartPolicy"] = "Never"
    job_metadata: container.JSON = {
        "name": job_name(cluster.name),
        "namespace": cluster.namespace,
        "labels": dict(metadata["labels"]),
    }
    if metadata.get("annotations"):
        job_metadata["annotations"] = dict(metadata["annotations"])
    job_metadata["ownerReferences"] = [
        ownership.controller_reference(
            constants.API_VERSION, "RayCluster", cluster.name, cluster.metadata.uid or ""
        )
    ]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": job_metadata,
        "spec": {
            "backoffLimit": 0,
            "template": {"metadata": metadata, "spec": spec},
            "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
        },
    }
