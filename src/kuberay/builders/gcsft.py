"""GCS fault tolerance on Ray pods: Redis-backed (external Redis) or embedded (RocksDB on a PVC).

FT is on when the RayCluster has annotation `ray.io/ft-enabled: true` (the legacy switch) or sets
`spec.gcsFaultToleranceOptions`; it is embedded when those options name backend `rocksdb`. The head pod
always carries annotation `ray.io/ft-enabled` ("true"/"false"). Workers only get a longer GCS reconnect
timeout, so that they survive a head restart. With Redis, the head gets the storage namespace (the
cluster's uid unless overridden), the Redis address and credentials; credentials reach `ray start` as
`$REDIS_USERNAME` / `$REDIS_PASSWORD`, expanded by the shell, so no secret ends up in the pod spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.builders import container

BACKEND_REDIS = "redis"
BACKEND_ROCKSDB = "rocksdb"


def is_enabled(cluster_spec: Mapping[str, Any], cluster_annotations: Mapping[str, str]) -> bool:
    legacy = cluster_annotations.get(constants.RAY_FT_ENABLED_ANNOTATION, "").lower() == "true"
    return legacy or cluster_spec.get("gcsFaultToleranceOptions") is not None


def is_embedded(options: Mapping[str, Any] | None) -> bool:
    return options is not None and (options.get("backend") or BACKEND_REDIS) == BACKEND_ROCKSDB


def storage_pvc_name(cluster_name: str, options: Mapping[str, Any] | None) -> str:
    """The embedded backend's PVC: `storage.claimName`, else `<cluster>-gcs-pvc`."""
    claim = ((options or {}).get("storage") or {}).get("claimName")
    return claim or cluster_name + constants.GCS_STORAGE_PVC_SUFFIX


def storage_namespace(cluster: Mapping[str, Any]) -> str:
    """Where the head keeps its state in Redis: the uid, overridden by the legacy annotation, overridden by
    `gcsFaultToleranceOptions.externalStorageNamespace`."""
    metadata = cluster.get("metadata") or {}
    namespace = (metadata.get("annotations") or {}).get(constants.RAY_EXTERNAL_STORAGE_NS_ANNOTATION)
    if namespace is None:
        namespace = metadata.get("uid") or ""
    options = (cluster.get("spec") or {}).get("gcsFaultToleranceOptions") or {}
    return str(options.get("externalStorageNamespace") or namespace)


def configure(
    template: container.JSON, params: dict[str, str], cluster: Mapping[str, Any], node_type: str
) -> None:
    """`configureGCSFaultTolerance` on a pod template (metadata and spec); adds `redis-username` and
    `redis-password` to the head's `params`."""
    spec = cluster.get("spec") or {}
    metadata = cluster.get("metadata") or {}
    enabled = is_enabled(spec, metadata.get("annotations") or {})
    annotations = template["metadata"].setdefault("annotations", {})
    if node_type == constants.HEAD_NODE:
        annotations[constants.RAY_FT_ENABLED_ANNOTATION] = "true" if enabled else "false"
    if not enabled:
        return
    ray = template["spec"]["containers"][constants.RAY_CONTAINER_INDEX]
    options = spec.get("gcsFaultToleranceOptions")
    if node_type == constants.WORKER_NODE:
        container.add_env_if_absent(
            ray,
            constants.RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S,
            constants.DEFAULT_WORKER_RAY_GCS_RECONNECT_TIMEOUT_S,
        )
    elif is_embedded(options):
        _configure_embedded(template, ray, str(metadata.get("name", "")), options or {})
    else:
        _configure_redis(annotations, ray, params, cluster, options)


def _configure_redis(
    annotations: dict[str, str],
    ray: container.JSON,
    params: dict[str, str],
    cluster: Mapping[str, Any],
    options: Mapping[str, Any] | None,
) -> None:
    namespace = storage_namespace(cluster)
    annotations[constants.RAY_EXTERNAL_STORAGE_NS_ANNOTATION] = namespace
    container.add_env_if_absent(ray, constants.RAY_EXTERNAL_STORAGE_NS, namespace)
    if options is None:
        # Legacy mode: a password given in rayStartParams is exported so the Redis cleanup Job can use it.
        if not container.env_exists(ray, constants.REDIS_PASSWORD) and "redis-password" in params:
            container.append_env(ray, container.value_env(constants.REDIS_PASSWORD, params["redis-password"]))
        return
    container.append_env(
        ray, container.value_env(constants.RAY_REDIS_ADDRESS, str(options.get("redisAddress") or ""))
    )
    for field, param, env in (
        ("redisUsername", "redis-username", constants.REDIS_USERNAME),
        ("redisPassword", "redis-password", constants.REDIS_PASSWORD),
    ):
        credential = options.get(field)
        if credential is None:
            continue
        params[param] = f"${env}"
        variable = container.value_env(env, str(credential.get("value") or ""))
        if credential.get("valueFrom") is not None:
            variable["valueFrom"] = credential["valueFrom"]
        container.append_env(ray, variable)


def _configure_embedded(
    template: container.JSON, ray: container.JSON, cluster_name: str, options: Mapping[str, Any]
) -> None:
    container.add_env_if_absent(ray, constants.RAY_GCS_STORAGE, constants.GCS_STORAGE_ROCKSDB_VALUE)
    container.add_env_if_absent(ray, constants.RAY_GCS_STORAGE_PATH, constants.GCS_STORAGE_MOUNT_PATH)
    mount: container.JSON = {
        "name": constants.GCS_STORAGE_VOLUME_NAME,
        "mountPath": constants.GCS_STORAGE_MOUNT_PATH,
    }
    sub_path = (options.get("storage") or {}).get("subPath")
    if sub_path:
        mount["subPath"] = sub_path
    container.append_mount(ray, mount)
    claim = {"claimName": storage_pvc_name(cluster_name, options)}
    container.append_volume(
        template["spec"], {"name": constants.GCS_STORAGE_VOLUME_NAME, "persistentVolumeClaim": claim}
    )
