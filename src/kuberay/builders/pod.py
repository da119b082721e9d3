"""Head and worker Pods of a RayCluster, built exactly as upstream KubeRay builds them.

Each build starts from a deep copy of the group's pod template and runs upstream's pipeline in its order
(`DefaultHeadPodTemplate` / `DefaultWorkerPodTemplate`, then the operator's sidecars and default metadata,
then `BuildPod`, then the owner reference):

1. name (generateName `<cluster>-head-` / `<cluster>-<group>-worker-`) and namespace; workers first get the
   `wait-gcs-ready` init container;
2. rayStartParams from the group's `resources` and `labels`; pod labels; multi-host labels (workers);
   defaulted params;
3. annotations; the autoscaler sidecar (head); GCS fault tolerance; the `metrics` port; autoscaler v2's
   restart policy; token auth; mTLS; the history collector;
4. the operator's sidecar containers and default pod annotations and labels (only keys not yet present);
5. the `/dev/shm` and `ray-logs` volumes, the `ray start` command, init-container env, Ray container env
   (in upstream's injection order, see `_set_ray_container_env`), probes;
6. the controller owner reference to the RayCluster.

The builders read the RayCluster in its wire form (`RayCluster.dump()`: upstream's JSON field names), so
every rule below is written against the names the spec uses. Nothing here reads the environment or the
clock: what upstream reads from the operator's environment or configuration comes in `PodOptions`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayCluster, WorkerGroupSpec
from kuberay.builders import auth, autoscaler, collector, container, gcsft, names, ownership, raystart, tls
from kuberay.builders.errors import BuildError
from kubesemantics import goparse

JSON = container.JSON

ULIMIT_COMMAND = f"ulimit -n ${{{constants.RAY_START_ULIMIT_OPEN_FILES}:-65536}}"
PLASMA_DIRECTORY_PARAM = "plasma-directory"
# Ray >= 2.53 serves one HTTP health endpoint; older Rays are probed with wget through bash.
UNIFIED_HEALTH_CHECK_RAY_VERSION = (2, 53, 0)
RAY_NODE_HEALTH_PATH = "/api/healthz"
_WGET_HEALTH = "wget --tries 1 -T {timeout} -q -O- http://localhost:{port}{path} | grep success"


class PodBuildError(BuildError):
    """The RayCluster cannot produce a pod (the message names the field)."""


@dataclass(frozen=True)
class PodOptions:
    """What upstream takes from the operator's environment, flags and configuration file."""

    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    # CLUSTER_DOMAIN
    cluster_domain: str = constants.DEFAULT_CLUSTER_DOMAIN
    # ENABLE_DETERMINISTIC_HEAD_POD_NAME: the head is named `<cluster>-head` instead of generated.
    deterministic_head_pod_name: bool = False
    # ENABLE_INIT_CONTAINER_INJECTION: workers wait for the GCS in `wait-gcs-ready`.
    init_container_injection: bool = True
    # ENABLE_PROBES_INJECTION
    probes_injection: bool = True
    # ENABLE_LOGIN_SHELL: generated commands run under `bash -cl`.
    login_shell: bool = False
    # Configuration file: defaultContainerEnvs, headSidecarContainers, workerSidecarContainers,
    # defaultPodAnnotations, defaultPodLabels.
    default_container_envs: tuple[Mapping[str, Any], ...] = ()
    head_sidecar_containers: tuple[Mapping[str, Any], ...] = ()
    worker_sidecar_containers: tuple[Mapping[str, Any], ...] = ()
    default_pod_annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    default_pod_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class _Cluster:
    """The facts about the RayCluster that every step needs, read once from its wire form."""

    raw: Mapping[str, Any]
    name: str
    namespace: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Mapping[str, Any]
    head_fqdn: str
    head_port: str
    creator: str

    @classmethod
    def read(cls, raw: Mapping[str, Any], options: PodOptions) -> _Cluster:
        metadata = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        name, namespace = str(metadata.get("name") or ""), str(metadata.get("namespace") or "")
        if not name:
            raise PodBuildError("RayCluster metadata.name is required to build its pods")
        labels = metadata.get("labels") or {}
        creator = labels.get(constants.RAY_ORIGINATED_FROM_CRD_LABEL)
        if creator not in (constants.RAY_JOB_CRD, constants.RAY_SERVICE_CRD):
            creator = constants.RAY_CLUSTER_CRD
        head_params = (spec.get("headGroupSpec") or {}).get("rayStartParams") or {}
        return cls(
            raw=raw,
            name=name,
            namespace=namespace,
            uid=str(metadata.get("uid") or ""),
            labels=labels,
            annotations=metadata.get("annotations") or {},
            spec=spec,
            head_fqdn=names.head_fqdn(name, namespace, spec, options.cluster_domain),
            head_port=raystart.head_port(head_params),
            creator=creator,
        )


def build_head_pod(cluster: RayCluster, options: PodOptions, *, recreate_hash: str = "") -> JSON:
    """The head Pod of `cluster`, ready to create.

    `recreate_hash` is the cluster's spec hash; when given, the pod is stamped with
    `ray.io/upgrade-strategy-recreate-hash` and `ray.io/kuberay-version`, as upstream does at creation."""
    facts = _Cluster.read(cluster.dump(), options)
    head = facts.spec.get("headGroupSpec") or {}
    template = _template_of(head, "spec.headGroupSpec.template")
    metadata, pod_spec = template["metadata"], template["spec"]
    head_name = names.pod_name(facts.name, constants.HEAD_NODE, not options.deterministic_head_pod_name)
    if options.deterministic_head_pod_name:
        metadata["name"] = head_name
    else:
        metadata["generateName"] = head_name
    metadata["namespace"] = facts.namespace

    params = _group_params(head)
    metadata["labels"] = _pod_labels(
        facts.name, constants.HEAD_NODE, constants.HEAD_GROUP_NAME, head, template
    )
    params = raystart.with_missing_params(params, constants.HEAD_NODE)
    _init_annotations(metadata, facts)

    ray = pod_spec["containers"][constants.RAY_CONTAINER_INDEX]
    if autoscaler.is_enabled(facts.spec):
        params["no-monitor"] = "true"
        pod_spec["serviceAccountName"] = names.check_name(pod_spec.get("serviceAccountName") or facts.name)
        sidecar = autoscaler.build_container(str(ray.get("image") or ""), options.login_shell)
        if auth.is_enabled(facts.spec):
            auth.set_container_env(facts.name, sidecar, facts.spec.get("authOptions"))
        if tls.is_enabled(facts.spec, options.feature_gates):
            tls.set_container_config(sidecar)
        autoscaler.merge_overrides(sidecar, facts.spec.get("autoscalerOptions"))
        pod_spec["containers"].append(sidecar)
        version = autoscaler.version(facts.spec)
        if version == autoscaler.VERSION_V2:
            container.append_env(ray, {"name": constants.RAY_ENABLE_AUTOSCALER_V2, "value": "true"})
            pod_spec["restartPolicy"] = "Never"
        elif version == autoscaler.VERSION_V1:
            container.append_env(ray, {"name": constants.RAY_ENABLE_AUTOSCALER_V2, "value": "false"})

    gcsft.configure(template, params, facts.raw, constants.HEAD_NODE)
    _add_metrics_port(ray)
    _configure_auth_tls_collector(template, facts, options, constants.HEAD_NODE)
    _apply_operator_defaults(template, options.head_sidecar_containers, options)

    pod = _build_pod(template, constants.HEAD_NODE, params, facts, options)
    if recreate_hash:
        annotations = {
            **pod["metadata"].get("annotations", {}),
            constants.UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION: recreate_hash,
            constants.KUBERAY_VERSION_ANNOTATION: constants.KUBERAY_VERSION,
        }
        pod["metadata"]["annotations"] = _sorted(annotations)
    return pod


def build_worker_pod(
    cluster: RayCluster,
    worker_group: WorkerGroupSpec,
    options: PodOptions,
    *,
    replica_index: int = 0,
    replica_group_name: str = "",
    host_index: int = 0,
) -> JSON:
    """A worker Pod of `worker_group` (one of the cluster's `workerGroupSpecs`), ready to create.

    With gate RayMultiHostIndexing the pod is labelled with `replica_index`, and, in groups of more than
    one host, with its replica group `replica_group_name` and `host_index` within it."""
    facts = _Cluster.read(cluster.dump(), options)
    group = worker_group.dump()
    group_name = str(group.get("groupName") or "")
    if not group_name:
        raise PodBuildError("spec.workerGroupSpecs[].groupName is required to build its pods")
    template = _template_of(group, f"spec.workerGroupSpecs[{group_name}].template")
    metadata, pod_spec = template["metadata"], template["spec"]
    metadata["generateName"] = names.pod_name(f"{facts.name}-{group_name}", constants.WORKER_NODE, True)
    metadata["namespace"] = facts.namespace
    if options.init_container_injection:
        pod_spec.setdefault("initContainers", []).append(_wait_gcs_ready(pod_spec, facts, options))
    metadata.pop("name", None)

    params = _group_params(group)
    labels = _pod_labels(facts.name, constants.WORKER_NODE, group_name, group, template)
    if options.feature_gates.enabled(Feature.RAY_MULTI_HOST_INDEXING):
        labels[constants.RAY_WORKER_REPLICA_INDEX_LABEL] = str(replica_index)
        if int(group.get("numOfHosts") or 1) > 1:
            labels[constants.RAY_WORKER_REPLICA_NAME_LABEL] = replica_group_name
            labels[constants.RAY_HOST_INDEX_LABEL] = str(host_index)
    metadata["labels"] = labels
    params = raystart.with_missing_params(
        params, constants.WORKER_NODE, f"{facts.head_fqdn}:{facts.head_port}"
    )
    _init_annotations(metadata, facts)
    gcsft.configure(template, params, facts.raw, constants.WORKER_NODE)
    _add_metrics_port(pod_spec["containers"][constants.RAY_CONTAINER_INDEX])
    if autoscaler.is_enabled(facts.spec) and autoscaler.version(facts.spec) == autoscaler.VERSION_V2:
        pod_spec["restartPolicy"] = "Never"
    _configure_auth_tls_collector(template, facts, options, constants.WORKER_NODE)
    _apply_operator_defaults(template, options.worker_sidecar_containers, options)
    return _build_pod(template, constants.WORKER_NODE, params, facts, options)


def _template_of(group: Mapping[str, Any], path: str) -> JSON:
    template: JSON = _without_nulls(group.get("template") or {})
    spec = template.get("spec") or {}
    containers = spec.get("containers")
    if not containers or not isinstance(containers, list):
        raise PodBuildError(f"{path}.spec.containers must have at least one container (the Ray container)")
    template["spec"] = spec
    template["metadata"] = dict(template.get("metadata") or {})
    return template


def _without_nulls(value: Any) -> Any:
    """A deep copy without JSON nulls: Go decodes a null field as absent, and so do the builders."""
    if isinstance(value, Mapping):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _group_params(group: Mapping[str, Any]) -> dict[str, str]:
    params = {str(k): str(v) for k, v in (group.get("rayStartParams") or {}).items()}
    params = raystart.with_group_resources(params, group.get("resources"))
    return raystart.with_group_labels(params, group.get("labels"))


def _pod_labels(
    cluster_name: str,
    node_type: raystart.NodeType,
    group_name: str,
    group: Mapping[str, Any],
    template: Mapping[str, Any],
) -> dict[str, str]:
    """`labelPod`: the standard labels, overlaid by the template's and then the group's `labels`, except
    the three that identify the pod to the operator and to Ray's autoscaler."""
    labels = {
        constants.RAY_NODE_LABEL: constants.RAY_NODE_LABEL_VALUE,
        constants.RAY_CLUSTER_LABEL: cluster_name,
        constants.RAY_NODE_TYPE_LABEL: node_type,
        constants.RAY_NODE_GROUP_LABEL: group_name,
        constants.RAY_ID_LABEL: names.identifier(cluster_name, node_type),
        constants.KUBERNETES_APPLICATION_NAME_LABEL: constants.APPLICATION_NAME,
        constants.KUBERNETES_CREATED_BY_LABEL: constants.COMPONENT_NAME,
    }
    protected = (constants.RAY_NODE_TYPE_LABEL, constants.RAY_NODE_GROUP_LABEL, constants.RAY_CLUSTER_LABEL)
    overrides = {**(template["metadata"].get("labels") or {}), **(group.get("labels") or {})}
    labels.update((k, v) for k, v in overrides.items() if k not in protected)
    return labels


def _init_annotations(metadata: JSON, facts: _Cluster) -> None:
    annotations = metadata.setdefault("annotations", {})
    if facts.annotations.get(constants.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION, "").lower() == "true":
        annotations[constants.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION] = "true"


def _add_metrics_port(ray: JSON) -> None:
    if not container.has_port_named(ray, constants.METRICS_PORT_NAME):
        ray.setdefault("ports", []).append(
            {"name": constants.METRICS_PORT_NAME, "containerPort": constants.DEFAULT_METRICS_PORT}
        )


def _configure_auth_tls_collector(
    template: JSON, facts: _Cluster, options: PodOptions, node_type: raystart.NodeType
) -> None:
    pod_spec = template["spec"]
    auth_options = facts.spec.get("authOptions")
    if auth.is_enabled(facts.spec):
        auth.configure_pod(facts.name, pod_spec, auth_options)
    if tls.is_enabled(facts.spec, options.feature_gates):
        tls.configure_pod(pod_spec, facts.name, node_type)
    collector_options = collector.options_of(facts.spec, options.feature_gates)
    if collector_options is not None:
        sidecar = collector.build_container(
            collector_options, node_type, facts.name, facts.namespace, facts.head_fqdn, facts.labels
        )
        if auth.is_enabled(facts.spec):
            auth.set_container_env(facts.name, sidecar, auth_options)
        if node_type == constants.HEAD_NODE:
            collector.add_head_pre_stop(pod_spec["containers"][constants.RAY_CONTAINER_INDEX])
        pod_spec["containers"].append(sidecar)


def _apply_operator_defaults(
    template: JSON, sidecars: tuple[Mapping[str, Any], ...], options: PodOptions
) -> None:
    template["spec"]["containers"].extend(copy.deepcopy(dict(sidecar)) for sidecar in sidecars)
    metadata = template["metadata"]
    for key, defaults in (
        ("annotations", options.default_pod_annotations),
        ("labels", options.default_pod_labels),
    ):
        values = metadata.setdefault(key, {})
        for name, value in defaults.items():
            values.setdefault(name, value)


def _wait_gcs_ready(pod_spec: Mapping[str, Any], facts: _Cluster, options: PodOptions) -> JSON:
    """The `wait-gcs-ready` init container: polls the GCS until it answers, with the Ray container's image,
    security context, env and mounts as they are in the template (they may carry TLS settings)."""
    ray = pod_spec["containers"][constants.RAY_CONTAINER_INDEX]
    init = container.image_of(ray, constants.WAIT_GCS_READY_INIT_CONTAINER_NAME)
    init["command"] = container.shell_command(options.login_shell)
    init["args"] = [_wait_gcs_script(f"{facts.head_fqdn}:{facts.head_port}")]
    if ray.get("securityContext") is not None:
        init["securityContext"] = copy.deepcopy(ray["securityContext"])
    if ray.get("env"):
        init["env"] = copy.deepcopy(ray["env"])
    if ray.get("volumeMounts"):
        init["volumeMounts"] = copy.deepcopy(ray["volumeMounts"])
    init["resources"] = container.fixed_resources("200m", "256Mi")
    return init


def _wait_gcs_script(address: str) -> str:
    """Polls `ray health-check` every 5 s: quietly for the first 120 s, then showing Ray's output and
    pointing at the troubleshooting FAQ; exits 0 once the GCS answers."""
    return f"""
SECONDS=0
while true; do
  if (( SECONDS <= 120 )); then
    if ray health-check --address {address} > /dev/null 2>&1; then
      echo "GCS is ready."
      exit 0
    fi
    echo "$SECONDS seconds elapsed: Waiting for GCS to be ready."
  else
    if ray health-check --address {address}; then
      echo "GCS is ready. Any error messages above can be safely ignored."
      exit 0
    fi
    echo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, refer to the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."
  fi
  sleep 5
done
"""


def _build_pod(
    template: JSON, node_type: raystart.NodeType, params: dict[str, str], facts: _Cluster, options: PodOptions
) -> JSON:
    """`BuildPod`, then the controller owner reference."""
    metadata, pod_spec = template["metadata"], template["spec"]
    if facts.creator == constants.RAY_SERVICE_CRD:
        serving = (
            constants.ENABLE_SERVING_SERVICE_FALSE
            if node_type == constants.HEAD_NODE
            else constants.ENABLE_SERVING_SERVICE_TRUE
        )
        metadata["labels"][constants.RAY_CLUSTER_SERVING_SERVICE_LABEL] = serving
    ray = pod_spec["containers"][constants.RAY_CONTAINER_INDEX]

    if PLASMA_DIRECTORY_PARAM not in params:
        _add_empty_dir(
            pod_spec,
            ray,
            constants.SHARED_MEMORY_VOLUME_NAME,
            constants.SHARED_MEMORY_MOUNT_PATH,
            memory=True,
        )
    # The autoscaler (head) and the history collector read Ray's logs from a shared volume.
    log_readers = []
    if node_type == constants.HEAD_NODE and autoscaler.is_enabled(facts.spec):
        log_readers.append(_container_named(pod_spec, constants.AUTOSCALER_CONTAINER_NAME))
    if options.feature_gates.enabled(Feature.RAY_CLUSTER_HISTORY_SERVER):
        log_readers.append(_container_named(pod_spec, constants.COLLECTOR_CONTAINER_NAME))
    for reader in log_readers:
        if reader is not None:
            _add_empty_dir(
                pod_spec, ray, constants.RAY_LOG_VOLUME_NAME, constants.RAY_LOG_MOUNT_PATH, memory=False
            )
            _add_empty_dir(
                pod_spec, reader, constants.RAY_LOG_VOLUME_NAME, constants.RAY_LOG_MOUNT_PATH, memory=False
            )

    user_command = "".join(f" {part} " for part in [*(ray.get("command") or ()), *(ray.get("args") or ())])
    params = raystart.with_container_resources(params, ray.get("resources"))
    start_command = raystart.ray_start_command(node_type, params)
    overwrite = (metadata.get("annotations") or {}).get(constants.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION, "")
    if overwrite.lower() != "true" and "ray start" not in user_command:
        generated = f"{ULIMIT_COMMAND}; {start_command}"
        ray["command"] = container.shell_command(options.login_shell)
        ray["args"] = [f"{user_command} && {generated}" if user_command else generated]

    for init in pod_spec.get("initContainers") or ():
        container.append_env(
            init,
            container.value_env(constants.FQ_RAY_IP, facts.head_fqdn),
            container.value_env(constants.RAY_IP, names.ray_ip(facts.head_fqdn)),
        )
    _set_ray_container_env(pod_spec, ray, node_type, start_command, facts, options)
    if options.probes_injection:
        _add_probes(ray, node_type, params, facts)

    metadata["labels"] = _sorted(metadata["labels"])
    metadata["annotations"] = _sorted(metadata.get("annotations") or {})
    if not metadata["annotations"]:
        del metadata["annotations"]  # Go omits an empty map
    metadata["ownerReferences"] = [
        ownership.controller_reference(constants.API_VERSION, "RayCluster", facts.name, facts.uid)
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def _container_named(pod_spec: Mapping[str, Any], name: str) -> JSON | None:
    return next((c for c in pod_spec["containers"] if c.get("name") == name), None)


def _add_empty_dir(pod_spec: JSON, target: JSON, volume: str, path: str, *, memory: bool) -> None:
    """`addEmptyDir`: nothing if `target` already mounts something at `path`; the volume only if none of
    that name exists. The in-memory volume is capped at the container's memory limit, else request."""
    if container.mounted_at(target, path):
        return
    if not container.volume_exists(pod_spec, volume):
        empty_dir: JSON = {}
        if memory:
            empty_dir["medium"] = "Memory"
            resources = target.get("resources") or {}
            for kind in ("limits", "requests"):
                if "memory" in (resources.get(kind) or {}):
                    empty_dir["sizeLimit"] = resources[kind]["memory"]
                    break
        container.append_volume(pod_spec, {"name": volume, "emptyDir": empty_dir})
    container.append_mount(target, {"name": volume, "mountPath": path})


def _set_ray_container_env(
    pod_spec: JSON,
    ray: JSON,
    node_type: raystart.NodeType,
    start_command: str,
    facts: _Cluster,
    options: PodOptions,
) -> None:
    """`setContainerEnvVars`: appended after everything the template and the earlier steps put there."""
    ray.setdefault("env", [])
    for default in options.default_container_envs:
        if not container.env_exists(ray, str(default.get("name"))):
            container.append_env(ray, copy.deepcopy(dict(default)))
    address_host = constants.LOCAL_HOST
    if node_type == constants.WORKER_NODE:
        address_host = facts.head_fqdn
        container.append_env(
            ray,
            container.value_env(constants.FQ_RAY_IP, facts.head_fqdn),
            container.value_env(constants.RAY_IP, names.ray_ip(facts.head_fqdn)),
        )
    container.append_env(
        ray,
        container.field_env(constants.RAY_CLUSTER_NAME, f"metadata.labels['{constants.RAY_CLUSTER_LABEL}']"),
        container.field_env(constants.RAY_CLUSTER_NAMESPACE, "metadata.namespace"),
        container.field_env(constants.RAY_CLOUD_INSTANCE_ID, "metadata.name"),
        container.field_env(
            constants.RAY_NODE_TYPE_NAME, f"metadata.labels['{constants.RAY_NODE_GROUP_LABEL}']"
        ),
        container.value_env(constants.KUBERAY_GEN_RAY_START_CMD, start_command),
    )
    container.add_env_if_absent(ray, constants.RAY_PORT, facts.head_port)
    if facts.creator == constants.RAY_SERVICE_CRD:
        container.add_env_if_absent(ray, constants.RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO, "0")
        container.add_env_if_absent(ray, constants.RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS, "5")
        container.add_env_if_absent(ray, constants.RAY_SERVE_KV_TIMEOUT_S, "5")
    container.add_env_if_absent(ray, constants.RAY_ADDRESS, f"{address_host}:{facts.head_port}")
    container.add_env_if_absent(ray, constants.RAY_USAGE_STATS_KUBERAY_IN_USE, "1")
    if node_type == constants.HEAD_NODE:
        tags = f"kuberay_version={constants.KUBERAY_VERSION};kuberay_crd={facts.creator}"
        container.append_env(ray, container.value_env(constants.RAY_USAGE_STATS_EXTRA_TAGS, tags))
    container.add_env_if_absent(ray, constants.RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE, "1")
    if (
        options.feature_gates.enabled(Feature.RAY_CLUSTER_HISTORY_SERVER)
        and _container_named(pod_spec, constants.COLLECTOR_CONTAINER_NAME) is not None
    ):
        container.add_env_if_absent(ray, constants.RAY_ENABLE_RAY_EVENT, "true")
        container.add_env_if_absent(ray, constants.RAY_ENABLE_CORE_WORKER_RAY_EVENT_TO_AGGREGATOR, "true")
        container.add_env_if_absent(
            ray, constants.RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR, collector.EVENTS_EXPORT_ADDRESS
        )
        for name in (
            constants.RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES,
            constants.RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES,
        ):
            container.add_env_if_absent(ray, name, constants.DEFAULT_RAY_EXPOSABLE_EVENT_TYPES)


def _port_param(params: Mapping[str, str], key: str, default: int) -> int:
    """A port from rayStartParams when it is a decimal int32 (as Go's ParseInt(s, 10, 32)), else `default`."""
    text = params.get(key, "")
    body = text[1:] if text[:1] in "+-" else text
    if body.isascii() and body.isdigit() and -(2**31) <= int(text) < 2**31:
        return int(text)
    return default


def _supports_unified_health_check(ray_version: str) -> bool:
    try:
        version = goparse.parse_generic_version(ray_version)
    except goparse.GoParseError:
        return False
    return not goparse.version_less_than(version, UNIFIED_HEALTH_CHECK_RAY_VERSION)


def _add_probes(ray: JSON, node_type: raystart.NodeType, params: Mapping[str, str], facts: _Cluster) -> None:
    """`initLivenessAndReadinessProbe`: liveness and readiness probes, each only if the user set none."""
    agent_port = _port_param(
        params, "dashboard-agent-listen-port", constants.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT
    )
    dashboard_port = _port_param(params, "dashboard-port", constants.DEFAULT_DASHBOARD_PORT)
    http = _supports_unified_health_check(str(facts.spec.get("rayVersion") or ""))
    commands = [_WGET_HEALTH.format(timeout=2, port=agent_port, path="/api/local_raylet_healthz")]
    if node_type == constants.HEAD_NODE:
        commands.append(_WGET_HEALTH.format(timeout=10, port=dashboard_port, path="/api/gcs_healthz"))
    head = node_type == constants.HEAD_NODE

    def action(checks: list[str], allow_http: bool) -> JSON:
        if allow_http:
            return {"httpGet": {"path": RAY_NODE_HEALTH_PATH, "port": agent_port}}
        return {"exec": {"command": ["bash", "-c", " && ".join(checks)]}}

    if ray.get("livenessProbe") is None:
        ray["livenessProbe"] = {
            **action(commands, http),
            "initialDelaySeconds": 30,
            "timeoutSeconds": 5 if head else 2,
            "periodSeconds": 5,
            "successThreshold": 1,
            "failureThreshold": 120,
        }
    if ray.get("readinessProbe") is None:
        readiness_checks, readiness_http, failure_threshold = commands, http, 10
        if facts.creator == constants.RAY_SERVICE_CRD and not head:
            # Serving workers are ready only when their Serve proxy answers too.
            serve_port = container.port_named(
                ray, constants.SERVING_PORT_NAME, constants.DEFAULT_SERVING_PORT
            )
            serve_check = _WGET_HEALTH.format(timeout=10, port=serve_port, path="/-/healthz")
            readiness_checks, readiness_http, failure_threshold = [*commands, serve_check], False, 1
        ray["readinessProbe"] = {
            **action(readiness_checks, readiness_http),
            "initialDelaySeconds": 10,
            "timeoutSeconds": 5 if head else 2,
            "periodSeconds": 5,
            "successThreshold": 1,
            "failureThreshold": failure_threshold,
        }


def _sorted(values: Mapping[str, str]) -> dict[str, str]:
    # Go writes map keys in sorted order; doing the same keeps built objects stable and diffable.
    return {key: values[key] for key in sorted(values)}
