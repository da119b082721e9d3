"""Clusters: the API's `Cluster` (and the `ClusterSpec` jobs and services embed) to a RayCluster, and back,
as upstream's APIServer maps them (pure, no I/O).

Dicts carry the proto's field names; enums are their names. Templates are the compute templates the
spec names, already read (`templates.from_config_map`).
"""

from __future__ import annotations

from typing import Any

from kuberay.apiserver import errors, volumes
from kuberay.rayresources import RAYCLUSTER

Object = dict[str, Any]

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "kuberay-apiserver"
APP_NAME_LABEL = "app.kubernetes.io/name"
APP_NAME = "kuberay"
CLUSTER_NAME_LABEL = "ray.io/cluster-name"
USER_LABEL = "ray.io/user"
VERSION_LABEL = "ray.io/version"
ENVIRONMENT_LABEL = "ray.io/environment"
CREATION_TIMESTAMP_ANNOTATION = "ray.io/creation-timestamp"
COMPUTE_TEMPLATE_ANNOTATION = "ray.io/compute-template"
IMAGE_ANNOTATION = "ray.io/compute-image"
ENABLE_SERVE_SERVICE_ANNOTATION = "ray.io/enable-serve-service"
DEFAULT_IMAGE_REPOSITORY = "rayproject/ray"
DEFAULT_GPU = "nvidia.com/gpu"
PULL_POLICIES = ("Always", "IfNotPresent")

# What the operator or a node adds to pod templates and containers: left out when mapping back.
_NODE_ANNOTATIONS = frozenset({
    IMAGE_ANNOTATION, COMPUTE_TEMPLATE_ANNOTATION, "openshift.io/scc", "cni.projectcalico.org/podIP",
    "ray.io/health-state", "ray.io/ft-enabled", "cni.projectcalico.org/podIPs",
    "cni.projectcalico.org/containerID", "k8s.v1.cni.cncf.io/network-status", "k8s.v1.cni.cncf.io/networks-status",
})  # fmt: skip
_NODE_LABELS = frozenset({
    "app.kubernetes.io/created-by", "app.kubernetes.io/name", "ray.io/cluster", "ray.io/cluster-dashboard",
    "ray.io/group", "ray.io/identifier", "ray.io/is-ray-node", "ray.io/node-type",
})  # fmt: skip
_HEAD_ENV = frozenset(
    {"MY_POD_IP", "RAY_CLUSTER_NAME", "RAY_PORT", "RAY_ADDRESS", "RAY_USAGE_STATS_KUBERAY_IN_USE"}
)
_WORKER_ENV = frozenset({
    "RAY_DISABLE_DOCKER_CPU_WARNING", "TYPE", "CPU_REQUEST", "CPU_LIMITS", "MEMORY_REQUESTS", "MEMORY_LIMITS",
    "MY_POD_NAME", "MY_POD_IP", "FQ_RAY_IP", "RAY_IP", "RAY_CLUSTER_NAME", "RAY_PORT", "RAY_ADDRESS",
    "RAY_USAGE_STATS_KUBERAY_IN_USE", "REDIS_PASSWORD",
})  # fmt: skip


def validate_spec(spec: Object | None) -> None:
    """Upstream's ValidateClusterSpec, with its messages."""
    if not spec:
        raise errors.invalid_input("A ClusterSpec object is required. Please specify one.")
    head = spec.get("head_group_spec")
    if not head:
        raise errors.invalid_input(
            "Cluster Spec Object requires HeadGroupSpec to be populated. Please specify one."
        )
    if not head.get("compute_template"):
        raise errors.invalid_input("HeadGroupSpec compute template is empty. Please specify a valid value.")
    if not head.get("ray_start_params"):
        raise errors.invalid_input("HeadGroupSpec RayStartParams is empty. Please specify values.")
    if head.get("imagePullPolicy") and head["imagePullPolicy"] not in PULL_POLICIES:
        raise errors.invalid_input(
            "HeadGroupSpec unsupported value for Image pull policy. Please specify Always or IfNotPresent"
        )
    for index, worker in enumerate(spec.get("worker_group_spec") or []):
        if not worker.get("group_name"):
            raise errors.invalid_input(
                f"WorkerNodeSpec {index} group name is empty. Please specify a valid value."
            )
        if not worker.get("compute_template"):
            raise errors.invalid_input(
                f"WorkerNodeSpec {index} compute template is empty. Please specify a valid value."
            )
        if not worker.get("max_replicas"):
            raise errors.invalid_input(
                f"WorkerNodeSpec {index} MaxReplicas can not be 0. Please specify a valid value."
            )
        if worker.get("min_replicas", 0) > worker["max_replicas"]:
            raise errors.invalid_input(
                f"WorkerNodeSpec {index} MinReplica > MaxReplicas. Please specify a valid value."
            )
        if worker.get("imagePullPolicy") and worker["imagePullPolicy"] not in PULL_POLICIES:
            raise errors.invalid_input(
                "Worker GroupSpec unsupported value for Image pull policy. Please specify Always or IfNotPresent"
            )


def validate_create(request: Object) -> None:
    cluster = request.get("cluster") or {}
    namespace = request.get("namespace", "")
    if not namespace:
        raise errors.invalid_input("Namespace is empty. Please specify a valid value.")
    if namespace != cluster.get("namespace", ""):
        raise errors.invalid_input(
            "The namespace in the request is different from the namespace in the cluster definition."
        )
    if not cluster.get("name"):
        raise errors.invalid_input("Cluster name is empty. Please specify a valid value.")
    if not cluster.get("user"):
        raise errors.invalid_input("User who create the cluster is empty. Please specify a valid value.")
    validate_spec(cluster.get("cluster_spec"))


def template_names(spec: Object) -> list[str]:
    """The compute templates a cluster spec names, head first, each once."""
    names = [spec["head_group_spec"]["compute_template"]]
    names += [w["compute_template"] for w in spec.get("worker_group_spec") or []]
    return list(dict.fromkeys(names))


def labels(cluster: Object) -> dict[str, str]:
    return {
        CLUSTER_NAME_LABEL: cluster["name"],
        USER_LABEL: cluster.get("user", ""),
        VERSION_LABEL: cluster.get("version", ""),
        ENVIRONMENT_LABEL: cluster.get("environment", "DEV"),
        APP_NAME_LABEL: APP_NAME,
        MANAGED_BY_LABEL: MANAGED_BY,
    }


def to_raycluster(cluster: Object, templates: dict[str, Object], created_at: str) -> Object:
    annotations = dict(cluster.get("annotations") or {})
    serve = annotations.get(ENABLE_SERVE_SERVICE_ANNOTATION) == "true"
    annotations[CREATION_TIMESTAMP_ANNOTATION] = created_at
    return {
        "apiVersion": RAYCLUSTER.api_version,
        "kind": RAYCLUSTER.kind,
        "metadata": {
            "name": cluster["name"],
            "namespace": cluster["namespace"],
            "labels": labels(cluster),
            "annotations": annotations,
        },  # fmt: skip
        "spec": cluster_spec(
            cluster.get("version", ""), cluster.get("envs"), cluster["cluster_spec"], templates, serve=serve
        ),  # fmt: skip
    }


def cluster_spec(version: str, envs: Object | None, spec: Object, templates: dict[str, Object], *,
                 serve: bool = False) -> Object:  # fmt: skip
    head = spec["head_group_spec"]
    result: Object = {
        "rayVersion": version,
        "headGroupSpec": {
            "rayStartParams": dict(head.get("ray_start_params") or {}),
            "template": _pod_template(
                version, envs, head, templates[head["compute_template"]], head=True, serve=serve
            ),  # fmt: skip
        },
        "workerGroupSpecs": [],
    }
    if head.get("service_type"):
        result["headGroupSpec"]["serviceType"] = head["service_type"]
    if head.get("enableIngress"):
        result["headGroupSpec"]["enableIngress"] = True
    if spec.get("headServiceAnnotations"):
        result["headServiceAnnotations"] = dict(spec["headServiceAnnotations"])
    for worker in spec.get("worker_group_spec") or []:
        replicas = worker.get("replicas", 0)
        result["workerGroupSpecs"].append({
            "groupName": worker["group_name"],
            "replicas": replicas,
            "minReplicas": worker.get("min_replicas") or replicas,
            "maxReplicas": worker.get("max_replicas") or replicas,
            "rayStartParams": dict(worker.get("ray_start_params") or {}),
            "template": _pod_template(version, envs, worker, templates[worker["compute_template"]], head=False),
        })  # fmt: skip
    if spec.get("enableInTreeAutoscaling"):
        result["enableInTreeAutoscaling"] = True
        options = _autoscaler_options(spec.get("autoscalerOptions"))
        if options:
            result["autoscalerOptions"] = options
    return result


def _autoscaler_options(options: Object | None) -> Object:
    if not options:
        return {}
    result: Object = {}
    for api_name, crd_name in (("idleTimeoutSeconds", "idleTimeoutSeconds"), ("upscalingMode", "upscalingMode"),
                               ("image", "image"), ("imagePullPolicy", "imagePullPolicy")):  # fmt: skip
        if options.get(api_name):
            result[crd_name] = options[api_name]
    if options.get("cpu") or options.get("memory"):
        quantities = {k: options[k] for k in ("cpu", "memory") if options.get(k)}
        result["resources"] = {"limits": dict(quantities), "requests": dict(quantities)}
    env = _env_vars(options.get("envs"))
    if env:
        result["env"] = env
    return result


def _env_vars(envs: Object | None) -> list[Object]:
    if not envs:
        return []
    result: list[Object] = [{"name": k, "value": v} for k, v in sorted((envs.get("values") or {}).items())]
    for name, source in sorted((envs.get("valuesFrom") or {}).items()):
        kind = source.get("source", "CONFIGMAP")
        if kind == "CONFIGMAP":
            ref: Object = {"configMapKeyRef": {"name": source.get("name", ""), "key": source.get("key", "")}}
        elif kind == "SECRET":
            ref = {"secretKeyRef": {"name": source.get("name", ""), "key": source.get("key", "")}}
        elif kind == "RESOURCEFIELD":
            ref = {
                "resourceFieldRef": {
                    "containerName": source.get("name", ""),
                    "resource": source.get("key", ""),
                }
            }
        else:
            ref = {"fieldRef": {"fieldPath": source.get("key", "")}}
        result.append({"name": name, "valueFrom": ref})
    return result


def _field_env(name: str, path: str) -> Object:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _resource_env(name: str, resource: str) -> Object:
    return {
        "name": name,
        "valueFrom": {"resourceFieldRef": {"containerName": "ray-worker", "resource": resource}},
    }


def _security_context(context: Object | None) -> Object | None:
    if context is None:
        return None
    result: Object = {}
    caps = context.get("capabilities") or {}
    if caps:
        result["capabilities"] = {k: list(caps[k]) for k in ("add", "drop") if caps.get(k)}
    if "privileged" in context:
        result["privileged"] = context["privileged"]
    return result


def _pod_template(version: str, envs: Object | None, group: Object, template: Object, *, head: bool,
                  serve: bool = False) -> Object:  # fmt: skip
    image = group.get("image") or f"{DEFAULT_IMAGE_REPOSITORY}:{version}"
    pull = "Always" if (group.get("imagePullPolicy") or "").lower() == "always" else "IfNotPresent"
    quantities = {"cpu": str(template.get("cpu", 0)),
                  "memory": f"{template.get('memory', 0)}{template.get('memory_unit', '')}"}  # fmt: skip
    resources = {"limits": dict(quantities), "requests": dict(quantities)}
    if template.get("gpu"):
        gpu = template.get("gpu_accelerator") or DEFAULT_GPU
        resources["limits"][gpu] = resources["requests"][gpu] = str(template["gpu"])
    for name, amount in sorted((template.get("extended_resources") or {}).items()):
        if amount:
            resources["limits"][name] = resources["requests"][name] = str(amount)
    if head:
        env = [_field_env("MY_POD_IP", "status.podIP")]
        ports = [{"name": "redis", "containerPort": 6379}, {"name": "head", "containerPort": 10001},
                 {"name": "dashboard", "containerPort": 8265}, {"name": "metrics", "containerPort": 8080}]  # fmt: skip
        if serve:
            ports += [
                {"name": "dashboard-agent", "containerPort": 52365},
                {"name": "serve", "containerPort": 8000},
            ]
    else:
        env = [{"name": "RAY_DISABLE_DOCKER_CPU_WARNING", "value": "1"}, {"name": "TYPE", "value": "worker"},
               _resource_env("CPU_REQUEST", "requests.cpu"), _resource_env("CPU_LIMITS", "limits.cpu"),
               _resource_env("MEMORY_REQUESTS", "requests.memory"), _resource_env("MEMORY_LIMITS", "limits.memory"),
               _field_env("MY_POD_NAME", "metadata.name"), _field_env("MY_POD_IP", "status.podIP")]  # fmt: skip
        ports = [{"containerPort": 80}]
    env += _env_vars(envs) + _env_vars(group.get("environment"))
    container: Object = {"name": "ray-head" if head else "ray-worker", "image": image, "imagePullPolicy": pull,
                         "env": env, "ports": ports, "resources": resources}  # fmt: skip
    pod_volumes, mounts = volumes.to_pod(group.get("volumes") or [])
    if mounts:
        container["volumeMounts"] = mounts
    if not head:
        container["lifecycle"] = {"preStop": {"exec": {"command": ["/bin/sh", "-c", "ray stop"]}}}
    security = _security_context(group.get("security_context"))
    if security is not None:
        container["securityContext"] = security
    annotations = {COMPUTE_TEMPLATE_ANNOTATION: template["name"], IMAGE_ANNOTATION: group.get("image", "")}
    annotations.update(group.get("annotations") or {})
    pod: Object = {"containers": [container]}
    if pod_volumes:
        pod["volumes"] = pod_volumes
    tolerations = [_toleration(t) for t in template.get("tolerations") or []]
    if tolerations:
        pod["tolerations"] = tolerations
    # Upstream's test is "longer than one character".
    if len(group.get("service_account", "")) > 1:
        pod["serviceAccountName"] = group["service_account"]
    if len(group.get("image_pull_secret", "")) > 1:
        pod["imagePullSecrets"] = [{"name": group["image_pull_secret"]}]
    return {"metadata": {"annotations": annotations, "labels": dict(group.get("labels") or {})}, "spec": pod}


def _toleration(toleration: Object) -> Object:
    effect = toleration.get("effect", "")
    return {
        "key": toleration.get("key", ""),
        "operator": "Exists" if toleration.get("operator") == "Exists" else "Equal",
        "value": toleration.get("value", ""),
        "effect": effect if effect in ("NoExecute", "NoSchedule") else "PreferNoSchedule",
    }


# --- back from the CRD ---------------------------------------------------------------------------------


def from_raycluster(obj: Object, events: list[Object]) -> Object:
    meta = obj.get("metadata") or {}
    labels_ = meta.get("labels") or {}
    result: Object = {
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "version": labels_.get(VERSION_LABEL, ""),
        "user": labels_.get(USER_LABEL, ""),
        "environment": labels_.get(ENVIRONMENT_LABEL)
        if labels_.get(ENVIRONMENT_LABEL) in ("DEV", "TESTING", "STAGING", "PRODUCTION")
        else "DEV",  # fmt: skip
        "created_at": meta.get("creationTimestamp"),
        "cluster_state": (obj.get("status") or {}).get("state", ""),
        "cluster_spec": spec_from_crd(obj.get("spec") or {}),
        "service_endpoint": dict((obj.get("status") or {}).get("endpoints") or {}),
        "events": [event_from_crd(labels_.get(CLUSTER_NAME_LABEL, ""), e) for e in events],
    }
    if meta.get("annotations"):
        result["annotations"] = dict(meta["annotations"])
    if meta.get("deletionTimestamp"):
        result["deleted_at"] = meta["deletionTimestamp"]
    return result


def event_from_crd(prefix: str, event: Object) -> Object:
    """An events.k8s.io/v1 Event as upstream shows it in `events`."""
    meta = event.get("metadata") or {}
    series = event.get("series") or {}
    first = event.get("eventTime") or event.get("deprecatedFirstTimestamp")
    last = series.get("lastObservedTime") or event.get("deprecatedLastTimestamp") or event.get("eventTime")
    result: Object = {
        "id": meta.get("name", ""),
        "name": f"{prefix}-{meta.get('name', '')}",
        "created_at": meta.get("creationTimestamp"),
        "first_timestamp": first,
        "last_timestamp": last,
        "reason": event.get("reason", ""),
        "message": event.get("note", ""),
        "type": event.get("type", ""),
        "count": series.get("count") if series else event.get("deprecatedCount", 0),
    }
    return {k: v for k, v in result.items() if v not in (None, "")}


def spec_from_crd(spec: Object) -> Object:
    head = spec.get("headGroupSpec") or {}
    result: Object = {
        "head_group_spec": _group_from_crd(head, head=True),
        "worker_group_spec": [_group_from_crd(w, head=False) for w in spec.get("workerGroupSpecs") or []],
    }
    if spec.get("enableInTreeAutoscaling"):
        result["enableInTreeAutoscaling"] = True
        options = spec.get("autoscalerOptions")
        if options:
            limits = (
                (options.get("resources") or {}).get("limits")
                or (options.get("resources") or {}).get("requests")
                or {}
            )
            back = {
                k: options[k]
                for k in ("idleTimeoutSeconds", "upscalingMode", "image", "imagePullPolicy")
                if k in options
            }
            back.update({k: str(limits[k]) for k in ("cpu", "memory") if k in limits})
            if options.get("env"):
                back["envs"] = {"values": {e["name"]: e.get("value", "") for e in options["env"]}}
            result["autoscalerOptions"] = back
    if spec.get("headServiceAnnotations"):
        result["headServiceAnnotations"] = dict(spec["headServiceAnnotations"])
    return result


def _group_from_crd(group: Object, *, head: bool) -> Object:
    template = group.get("template") or {}
    meta = template.get("metadata") or {}
    annotations = dict(meta.get("annotations") or {})
    pod = template.get("spec") or {}
    result: Object = {
        "ray_start_params": dict(group.get("rayStartParams") or {}),
        "image": annotations.get(IMAGE_ANNOTATION, ""),
        "compute_template": annotations.get(COMPUTE_TEMPLATE_ANNOTATION, ""),
        "volumes": volumes.from_pod(pod) or None,
    }
    if head:
        result["service_type"] = group.get("serviceType", "")
        if group.get("enableIngress"):
            result["enableIngress"] = True
    else:
        replicas = group.get("replicas", 0)
        result.update(group_name=group.get("groupName", ""), replicas=replicas,
                      min_replicas=group.get("minReplicas", 0), max_replicas=group.get("maxReplicas", 0))  # fmt: skip
    extra_annotations = {k: v for k, v in annotations.items() if k not in _NODE_ANNOTATIONS}
    if extra_annotations:
        result["annotations"] = extra_annotations
    extra_labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _NODE_LABELS}
    if extra_labels:
        result["labels"] = extra_labels
    name = "ray-head" if head else "ray-worker"
    containers = pod.get("containers") or []
    container = next((c for c in containers if c.get("name") == name), None)
    if container is not None:
        env = _env_from_crd(container.get("env") or [], _HEAD_ENV if head else _WORKER_ENV)
        if env is not None:
            result["environment"] = env
        security = container.get("securityContext")
        if security is not None:
            result["security_context"] = {"capabilities": dict(security.get("capabilities") or {}),
                                          **({"privileged": security["privileged"]} if "privileged" in security else {})}  # fmt: skip
    if len(pod.get("serviceAccountName", "")) > 1:
        result["service_account"] = pod["serviceAccountName"]
    if pod.get("imagePullSecrets"):
        result["image_pull_secret"] = pod["imagePullSecrets"][0].get("name", "")
    if containers and containers[0].get("imagePullPolicy") == "Always":
        result["imagePullPolicy"] = "Always"
    return {k: v for k, v in result.items() if v not in (None, "")}


def _env_from_crd(env: list[Object], skip: frozenset[str]) -> Object | None:
    if not env:
        return None
    values: dict[str, str] = {}
    values_from: dict[str, Object] = {}
    for var in env:
        name = var.get("name", "")
        if name in skip:
            continue
        source = var.get("valueFrom")
        if source is None:
            values[name] = var.get("value", "")
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            values_from[name] = {
                "source": "CONFIGMAP",
                "name": ref.get("name", ""),
                "key": ref.get("key", ""),
            }
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            values_from[name] = {"source": "SECRET", "name": ref.get("name", ""), "key": ref.get("key", "")}
        elif "resourceFieldRef" in source:
            ref = source["resourceFieldRef"]
            values_from[name] = {"source": "RESOURCEFIELD", "name": ref.get("containerName", ""),
                                 "key": ref.get("resource", "")}  # fmt: skip
        elif "fieldRef" in source:
            values_from[name] = {"source": "FIELD", "key": source["fieldRef"].get("fieldPath", "")}
    return {"values": values, "valuesFrom": values_from}
