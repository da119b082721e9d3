"""RayCluster rules: upstream's `ValidateRayClusterMetadata`, `ValidateRayClusterSpec`,
`ValidateRayClusterUpgradeOptions`, `ValidateRayClusterStatus` and the RayCluster webhook's unique
worker-group names.

`cluster_spec` is also run by the RayJob, RayService and RayCronJob rules on their embedded cluster spec,
so every path it reports is relative to the `at` it is given. Its history-server checks are
`historyserver.py`'s, its network-policy and TLS checks `netsecurity.py`'s, those of upstream v1.8's gated
fields `alphafields.py`'s.

Order and continuation: rules yield in upstream's order. Upstream stops at the first failure; these rules
go on wherever a later rule still means something, and stop only where upstream's later rules depend on
an earlier one (a version that does not parse is not compared; a feature whose gate is off is not checked
further: enable the gate first).
"""

from __future__ import annotations

from collections.abc import Mapping

from kuberay.api import constants as c
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayClusterConditionType
from kuberay.api.validation import alphafields, historyserver, names, netsecurity, wire
from kuberay.api.validation.field import Errors, FieldError
from kuberay.api.validation.wire import JSON
from kubesemantics import goparse

_RESOURCE_START_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")
_TOKEN_AUTH_MIN_VERSION = (2, 52, 0)
_K8S_TOKEN_AUTH_MIN_VERSION = (2, 55, 0)
_LABELS_FILE_MIN_VERSION = (2, 45, 0)
_PRIORITY_MIN_VERSION = (2, 56, 0)


def _restart_policy_allowed(template: JSON) -> bool:
    return wire.text(wire.obj(template, "spec"), "restartPolicy") in ("", "Never")


# --- metadata, webhook, upgrade options, status (RayCluster objects only) ------------------------------------


def metadata(meta: JSON) -> Errors:
    name = wire.text(meta, "name")
    if len(name.encode()) > c.MAX_RAY_CLUSTER_NAME_LENGTH:
        yield FieldError(
            "metadata.name",
            f"RayCluster name should be no more than {c.MAX_RAY_CLUSTER_NAME_LENGTH} characters",
        )
    elif problems := names.dns1035_label(name):
        yield FieldError(
            "metadata.name", f"RayCluster name should be a valid DNS1035 label: {names.go_list(problems)}"
        )


def unique_group_names(spec: JSON) -> Errors:
    """The webhook's check (reported once, at the first repeat, as the webhook does)."""
    seen: set[str] = set()
    for i, group in enumerate(wire.objs(spec, "workerGroupSpecs")):
        name = wire.text(group, "groupName")
        if name in seen:
            yield FieldError(f"spec.workerGroupSpecs[{i}]", "worker group names must be unique")
            return
        seen.add(name)


def upgrade_options(spec: JSON, labels: Mapping[str, str]) -> Errors:
    strategy = wire.obj(spec, "upgradeStrategy")
    if not wire.has(strategy, "type"):
        return
    kind = wire.text(strategy, "type")
    if kind not in ("Recreate", "None"):
        yield FieldError(
            "spec.upgradeStrategy.type",
            f"The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value {kind} is invalid, "
            "valid options are Recreate or None",
        )
    creator = labels.get(c.RAY_ORIGINATED_FROM_CRD_LABEL, "")
    if creator in (c.RAY_JOB_CRD, c.RAY_SERVICE_CRD):
        yield FieldError(
            "spec.upgradeStrategy.type",
            f"upgradeStrategy cannot be set when RayCluster is created by {creator}",
        )


def status(status_: JSON) -> Errors:
    true_types = {
        wire.text(condition, "type")
        for condition in wire.objs(status_, "conditions")
        if wire.text(condition, "status") == "True"
    }
    if {RayClusterConditionType.SUSPENDING, RayClusterConditionType.SUSPENDED} <= true_types:
        yield FieldError(
            "status.conditions",
            "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions "
            "should not be both true",
        )


# --- the cluster spec ------------------------------------------------------------------------------------------


def _group_resources(group: JSON, label: str, at: str) -> Errors:
    params = wire.strings(group, "rayStartParams")
    if any(params.get(key) for key in _RESOURCE_START_PARAMS) and wire.strings(group, "resources"):
        yield FieldError(
            f"{at}.resources",
            f"resource fields should not be set in both rayStartParams and Resources for {label} group; "
            "please use only one",
        )


def _group_labels(group: JSON, label: str, at: str) -> Errors:
    if "labels" in wire.strings(group, "rayStartParams"):
        yield FieldError(
            f"{at}.rayStartParams[labels]",
            f"rayStartParams['labels'] is not supported for {label} group; please use the top-level Labels field "
            "instead",
        )
        return
    # Upstream joins every failure of every label with "; " in Go's random map order; one error per label
    # (its key and value failures joined the same way) keeps the text and names the label.
    for key, value in wire.strings(group, "labels").items():
        problems = [f"invalid label key for {label} group: '{key}', error: {m}" for m in names.label_key(key)]
        problems += [
            f"invalid label value for key '{key}' in {label} group: '{value}', error: {m}"
            for m in names.label_value(value)
        ]
        if problems:
            yield FieldError(f"{at}.labels[{key}]", "; ".join(problems))


def _version_gate(
    ray_version: str, minimum: tuple[int, ...], lead: str, at: str
) -> tuple[tuple[int, ...] | None, list[FieldError]]:
    """Parses `ray_version` and checks it against `minimum`; `lead` opens each message
    (``authOptions.mode is 'token'``). Returns the version (None when it is unusable) and the failures."""
    shown = ".".join(map(str, minimum))
    if not ray_version:
        return None, [
            FieldError(
                at, f"{lead} but RayVersion was not specified. Ray version {shown} or later is required"
            )
        ]
    try:
        version = goparse.parse_generic_version(ray_version)
    except goparse.GoParseError as error:
        return None, [FieldError(at, f"{lead} but RayVersion format is invalid: {ray_version}, {error}")]
    if goparse.version_less_than(version, minimum):
        return None, [FieldError(at, f"{lead} but minimum Ray version is {shown}, got {ray_version}")]
    return version, []


def _worker_group(group: JSON, at: str, spec: JSON, autoscaling: bool, v2: bool) -> Errors:
    name = wire.text(group, "groupName")
    if not wire.objs(wire.obj(wire.obj(group, "template"), "spec"), "containers"):
        yield FieldError(
            f"{at}.template.spec.containers", "workerGroupSpec should have at least one container"
        )
    low, high = wire.integer(group, "minReplicas"), wire.integer(group, "maxReplicas")
    if not autoscaling and (low is None or high is None):
        yield FieldError(
            f"{at}.{'minReplicas' if low is None else 'maxReplicas'}",
            f"worker group {name} must set both minReplicas and maxReplicas when autoscaling is disabled",
        )
    if low is not None and low < 0:
        yield FieldError(f"{at}.minReplicas", f"worker group {name} has negative minReplicas {low}")
    if high is not None and high < 0:
        yield FieldError(f"{at}.maxReplicas", f"worker group {name} has negative maxReplicas {high}")
    if low is not None and high is not None and low > high:
        yield FieldError(
            f"{at}.minReplicas", f"worker group {name} has minReplicas {low} greater than maxReplicas {high}"
        )
    yield from _group_resources(group, name, at)
    yield from _group_labels(group, name, at)

    idle_timeout = wire.integer(group, "idleTimeoutSeconds")
    if idle_timeout is not None:
        if idle_timeout < 0:
            yield FieldError(
                f"{at}.idleTimeoutSeconds",
                f"worker group {name}: idleTimeoutSeconds must be non-negative, got {idle_timeout}",
            )
        elif not v2:
            yield FieldError(
                f"{at}.idleTimeoutSeconds",
                f"worker group {name}: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set "
                f".spec.autoscalerOptions.version to 'v2' (or set {c.RAY_ENABLE_AUTOSCALER_V2} environment "
                "variable to 'true' in the head pod if using KubeRay < 1.4.0)",
            )

    priority = wire.integer(group, "priority")
    if priority:
        version, failures = _version_gate(
            wire.text(spec, "rayVersion"),
            _PRIORITY_MIN_VERSION,
            f"worker group {name}: priority is set,",
            f"{at}.priority",
        )
        yield from failures
        if version is not None and not v2:
            yield FieldError(
                f"{at}.priority",
                f"worker group {name}: priority is set to {priority}, but autoscaler v2 is not enabled. "
                "Priority is only supported with autoscaler v2 enabled",
            )


def _gcs_fault_tolerance(
    spec: JSON,
    at: str,
    head: JSON,
    head_at: str,
    head_container: JSON,
    annotations: Mapping[str, str],
    gates: FeatureGates,
) -> Errors:
    options = wire.obj(spec, "gcsFaultToleranceOptions")
    options_at = f"{at}.gcsFaultToleranceOptions"
    container_at = f"{head_at}.template.spec.containers[0]"
    if wire.strings(head, "rayStartParams").get("redis-password"):
        yield FieldError(
            f"{head_at}.rayStartParams[redis-password]",
            "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - use "
            "GcsFaultToleranceOptions.RedisPassword instead",
        )
    if (i := wire.env_index(head_container, c.REDIS_PASSWORD)) is not None:
        yield FieldError(
            f"{container_at}.env[{i}]",
            "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - use "
            "GcsFaultToleranceOptions.RedisPassword instead",
        )
    if (i := wire.env_index(head_container, c.RAY_REDIS_ADDRESS)) is not None:
        yield FieldError(
            f"{container_at}.env[{i}]",
            "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - use "
            "GcsFaultToleranceOptions.RedisAddress instead",
        )
    if annotations.get(c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION):
        yield FieldError(
            f"metadata.annotations[{c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION}]",
            "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled "
            "- use GcsFaultToleranceOptions.ExternalStorageNamespace instead",
        )

    if (wire.text(options, "backend") or "redis") != c.GCS_STORAGE_ROCKSDB_VALUE:
        if wire.has(options, "storage"):
            yield FieldError(
                f"{options_at}.storage",
                "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the "
                "'rocksdb' backend",
            )
        return
    if not gates.enabled(Feature.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE):
        yield FieldError(
            f"{options_at}.backend",
            "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') "
            f"requires the {Feature.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE} feature gate to be enabled",
        )
        return
    for key, field in (
        ("redisAddress", "RedisAddress"),
        ("redisUsername", "RedisUsername"),
        ("redisPassword", "RedisPassword"),
        ("externalStorageNamespace", "ExternalStorageNamespace"),
    ):
        # Strings count when non-empty, credentials when present (Go: string vs pointer fields).
        if options.get(key) not in (None, ""):
            yield FieldError(
                f"{options_at}.{key}",
                f"cannot set GcsFaultToleranceOptions.{field} when backend is 'rocksdb'",
            )
    storage = wire.obj(options, "storage")
    if wire.text(storage, "claimName") and (
        wire.has(storage, "size") or wire.has(storage, "storageClassName") or bool(storage.get("accessModes"))
    ):
        yield FieldError(
            f"{options_at}.storage.claimName",
            "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, and "
            "accessModes",
        )
    for env_name in (c.RAY_GCS_STORAGE, c.RAY_GCS_STORAGE_PATH):
        if (i := wire.env_index(head_container, env_name)) is not None:
            yield FieldError(
                f"{container_at}.env[{i}]",
                f"cannot set `{c.RAY_GCS_STORAGE}` or `{c.RAY_GCS_STORAGE_PATH}` env var in head Pod when the "
                "embedded GCS FT backend is used - these are managed by KubeRay",
            )
            break
    for i, mount in enumerate(wire.objs(head_container, "volumeMounts")):
        if (
            wire.text(mount, "mountPath") == c.GCS_STORAGE_MOUNT_PATH
            or wire.text(mount, "name") == c.GCS_STORAGE_VOLUME_NAME
        ):
            yield FieldError(
                f"{container_at}.volumeMounts[{i}]",
                f'cannot set a volume mount named "{c.GCS_STORAGE_VOLUME_NAME}" or mounted at '
                f"{c.GCS_STORAGE_MOUNT_PATH} in the head container when the embedded GCS FT backend is used - it "
                "is managed by KubeRay",
            )
            break
    for i, volume in enumerate(wire.objs(wire.obj(wire.obj(head, "template"), "spec"), "volumes")):
        if wire.text(volume, "name") == c.GCS_STORAGE_VOLUME_NAME:
            yield FieldError(
                f"{head_at}.template.spec.volumes[{i}]",
                f'cannot set a volume named "{c.GCS_STORAGE_VOLUME_NAME}" in the head Pod when the embedded GCS FT '
                "backend is used - it is managed by KubeRay",
            )
            break


def _auth(spec: JSON, at: str) -> Errors:
    auth = wire.obj(spec, "authOptions")
    auth_at = f"{at}.authOptions"
    k8s_token_auth = wire.flag(auth, "enableK8sTokenAuth")
    if wire.text(auth, "mode") != "token":
        if k8s_token_auth:
            yield FieldError(
                f"{auth_at}.enableK8sTokenAuth",
                "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'",
            )
        return
    ray_version = wire.text(spec, "rayVersion")
    version, failures = _version_gate(
        ray_version, _TOKEN_AUTH_MIN_VERSION, "authOptions.mode is 'token'", f"{at}.rayVersion"
    )
    yield from failures
    if version is None or not k8s_token_auth:
        return
    if goparse.version_less_than(version, _K8S_TOKEN_AUTH_MIN_VERSION):
        yield FieldError(
            f"{at}.rayVersion",
            f"authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got {ray_version}",
        )
    if wire.text(auth, "secretName"):
        yield FieldError(
            f"{auth_at}.secretName",
            "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set",
        )


def cluster_spec(spec: JSON, annotations: Mapping[str, str], gates: FeatureGates, at: str) -> Errors:
    """Upstream's `ValidateRayClusterSpec(spec, annotations)`: `annotations` are the owning object's
    (RayCluster, RayJob or RayService); `at` is the spec's path (``spec``, ``spec.rayClusterSpec``, ...)."""
    head = wire.obj(spec, "headGroupSpec")
    head_at = f"{at}.headGroupSpec"
    head_pod = wire.obj(wire.obj(head, "template"), "spec")
    head_containers = wire.objs(head_pod, "containers")
    if not head_containers:
        yield FieldError(
            f"{head_at}.template.spec.containers", "headGroupSpec should have at least one container"
        )
    head_container = head_containers[0] if head_containers else {}
    container_at = f"{head_at}.template.spec.containers[0]"
    yield from _group_resources(head, "Head", head_at)
    yield from _group_labels(head, "Head", head_at)

    autoscaling = wire.flag(spec, "enableInTreeAutoscaling")
    autoscaler = wire.obj(spec, "autoscalerOptions")
    explicit_v2 = wire.text(autoscaler, "version") == "v2"
    # Head env RAY_enable_autoscaler_v2 = 1/true: the switch for v2 before KubeRay 1.4.
    v2_env = wire.env_index(head_container, c.RAY_ENABLE_AUTOSCALER_V2)
    v2_env_value = "" if v2_env is None else wire.text(wire.objs(head_container, "env")[v2_env], "value")
    v2_env_enabled = v2_env_value in ("1", "true")
    v2 = explicit_v2 or v2_env_enabled
    groups = wire.objs(spec, "workerGroupSpecs")
    for i, group in enumerate(groups):
        yield from _worker_group(group, f"{at}.workerGroupSpecs[{i}]", spec, autoscaling, v2)

    has_ft_options = wire.has(spec, "gcsFaultToleranceOptions")
    ft_annotation = annotations.get(c.RAY_FT_ENABLED_ANNOTATION, "")
    if ft_annotation and has_ft_options:
        yield FieldError(
            f"metadata.annotations[{c.RAY_FT_ENABLED_ANNOTATION}]",
            f"{c.RAY_FT_ENABLED_ANNOTATION} annotation and GcsFaultToleranceOptions are both set. Please use only "
            "GcsFaultToleranceOptions to configure GCS fault tolerance",
        )
    redis_address = wire.env_index(head_container, c.RAY_REDIS_ADDRESS)
    if not (ft_annotation.lower() == "true" or has_ft_options) and redis_address is not None:
        yield FieldError(
            f"{container_at}.env[{redis_address}]",
            f"{c.RAY_REDIS_ADDRESS} is set which implicitly enables GCS fault tolerance, but "
            "GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance",
        )
    if has_ft_options:
        yield from _gcs_fault_tolerance(spec, at, head, head_at, head_container, annotations, gates)
        yield from alphafields.active_passive(spec, at, gates)
    yield from alphafields.label_mappings(spec, at, gates)
    if gates.enabled(Feature.TOPOLOGY_LABEL_DELIVERY) and any(wire.has(g, "labelMappings") for g in groups):
        # Node Label Delivery starts Ray with `--labels-file`, which Ray 2.45.0 added (kuberay#5300).
        yield from _version_gate(
            wire.text(spec, "rayVersion"),
            _LABELS_FILE_MIN_VERSION,
            "labelMappings is set",
            f"{at}.rayVersion",
        )[1]
    username_param = wire.strings(head, "rayStartParams").get("redis-username")
    username_env = wire.env_index(head_container, c.REDIS_USERNAME)
    if username_param or username_env is not None:
        yield FieldError(
            f"{head_at}.rayStartParams[redis-username]"
            if username_param
            else f"{container_at}.env[{username_env}]",
            "cannot set redis username in rayStartParams or environment variables - use "
            "GcsFaultToleranceOptions.RedisUsername instead",
        )

    suspended = [(i, wire.text(g, "groupName")) for i, g in enumerate(groups) if wire.flag(g, "suspend")]
    if not gates.enabled(Feature.RAY_JOB_DELETION_POLICY):
        for i, name in suspended:
            yield FieldError(
                f"{at}.workerGroupSpecs[{i}].suspend",
                f"worker group {name} can be suspended only when the {Feature.RAY_JOB_DELETION_POLICY} feature "
                "gate is enabled",
            )
    if not autoscaling and v2_env_enabled:
        yield FieldError(
            f"{container_at}.env[{v2_env}]",
            f"environment variable {c.RAY_ENABLE_AUTOSCALER_V2} cannot be set to '{v2_env_value}' when "
            "enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use autoscaler v2",
        )
    if autoscaling:
        for i, name in suspended:
            yield FieldError(
                f"{at}.workerGroupSpecs[{i}].suspend",
                f"worker group {name} cannot be suspended with Autoscaler enabled",
            )
        if wire.has(autoscaler, "version") and v2_env is not None:
            yield FieldError(
                f"{at}.autoscalerOptions.version",
                f"both .spec.autoscalerOptions.version and head Pod env var {c.RAY_ENABLE_AUTOSCALER_V2} are set, "
                "please only use the former",
            )
        if explicit_v2:
            if not _restart_policy_allowed(wire.obj(head, "template")):
                yield FieldError(
                    f"{head_at}.template.spec.restartPolicy",
                    "restartPolicy for head Pod should be Never or unset when using autoscaler V2",
                )
            for i, group in enumerate(groups):
                if not _restart_policy_allowed(wire.obj(group, "template")):
                    yield FieldError(
                        f"{at}.workerGroupSpecs[{i}].template.spec.restartPolicy",
                        f"restartPolicy for worker group {wire.text(group, 'groupName')} should be Never or unset "
                        "when using autoscaler V2",
                    )
    idle_timeout = wire.integer(autoscaler, "idleTimeoutSeconds")
    if idle_timeout is not None and idle_timeout < 0:
        yield FieldError(
            f"{at}.autoscalerOptions.idleTimeoutSeconds",
            f"autoscalerOptions.idleTimeoutSeconds must be non-negative, got {idle_timeout}",
        )
    if (start_cmd := wire.env_index(autoscaler, c.KUBERAY_GEN_AUTOSCALER_START_CMD)) is not None:
        yield FieldError(
            f"{at}.autoscalerOptions.env[{start_cmd}]",
            f"autoscalerOptions.env must not contain {c.KUBERAY_GEN_AUTOSCALER_START_CMD}: it is managed by KubeRay "
            "and injected automatically into the autoscaler container",
        )
    if wire.has(spec, "historyServerOptions"):
        yield from historyserver.history_server(spec, at, gates)
    yield from _auth(spec, at)
    if wire.has(spec, "networkPolicy"):
        yield from netsecurity.network_policy(spec, at, gates)
    if wire.has(spec, "tlsOptions"):
        yield from netsecurity.tls(spec, at, gates)
