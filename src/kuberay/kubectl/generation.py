"""The RayCluster that `kubectl ray create cluster` applies, from its flags or its config file; pure.

The object is the one upstream's apply configuration serialises to: only the fields the plugin sets (the
API server's defaulting and the operator fill in the rest), so a server-side apply with the field manager
`ray-kubectl-plugin` owns exactly these fields. Quantities are written in Go's canonical form, zero
quantities are left out, and the head's CPU is a request only (no CPU limit), as upstream chose.

The config file (`--file`) is upstream's schema, read strictly: an unknown key is an error naming its path.
Its values are laid over upstream's defaults: the head's keys one by one, `worker-groups` as a whole list.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from kuberay.kubectl.errors import KubectlPluginError
from kuberay.rayresources import RAYCLUSTER
from kubesemantics import quantity

RAY_VERSION = "2.52.0"
RAY_IMAGE = f"rayproject/ray:{RAY_VERSION}"
FIELD_MANAGER = "ray-kubectl-plugin"
NVIDIA_GPU = "nvidia.com/gpu"
GOOGLE_TPU = "google.com/tpu"
TPU_ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
TPU_DOC_URL = "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus#availability"
GCSFUSE_VOLUME = "cluster-storage"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"

DEFAULT_HEAD_CPU = "2"
DEFAULT_HEAD_MEMORY = "4Gi"
DEFAULT_WORKER_CPU = "2"
DEFAULT_WORKER_MEMORY = "4Gi"


def _scalar_text(value: Any) -> Any:
    # Go's YAML decoder reads a number into a string field as its text (`cpu: 3`, `num-cpus: 0`).
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


Text = Annotated[str, BeforeValidator(_scalar_text)]


class ClusterConfigError(KubectlPluginError, ValueError):
    """A config file or flag value that cannot make a RayCluster; the message is upstream's."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Head(_Strict):
    cpu: Text | None = None
    gpu: Text | None = None
    memory: Text | None = None
    ephemeral_storage: Text | None = Field(None, alias="ephemeral-storage")
    ray_start_params: dict[str, Text] = Field(default_factory=dict, alias="ray-start-params")
    node_selectors: dict[str, str] = Field(default_factory=dict, alias="node-selectors")


class WorkerGroup(_Strict):
    name: Text | None = None
    cpu: Text | None = None
    gpu: Text | None = None
    tpu: Text | None = None
    num_of_hosts: int | None = Field(None, alias="num-of-hosts")
    memory: Text | None = None
    ephemeral_storage: Text | None = Field(None, alias="ephemeral-storage")
    ray_start_params: dict[str, Text] = Field(default_factory=dict, alias="ray-start-params")
    node_selectors: dict[str, str] = Field(default_factory=dict, alias="node-selectors")
    replicas: int = 0


class Autoscaler(_Strict):
    version: Literal["v1", "v2", ""] = ""


class GCSFuseResources(_Strict):
    cpu: Text | None = None
    memory: Text | None = None
    ephemeral_storage: Text | None = Field(None, alias="ephemeral-storage")


class GCSFuse(_Strict):
    bucket_name: str = Field("", alias="bucket-name")
    mount_path: str = Field("", alias="mount-path")
    mount_options: Text | None = Field(None, alias="mount-options")
    disable_metrics: bool | None = Field(None, alias="disable-metrics")
    metadata_prefetch_on_mount: bool | None = Field(None, alias="gcsfuse-metadata-prefetch-on-mount")
    skip_csi_bucket_access_check: bool | None = Field(None, alias="skip-csi-bucket-access-check")
    resources: GCSFuseResources | None = None


class GKE(_Strict):
    gcsfuse: GCSFuse | None = None


class ClusterConfig(_Strict):
    namespace: Text | None = None
    name: Text | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    ray_version: str = Field(RAY_VERSION, alias="ray-version")
    image: str = RAY_IMAGE
    service_account: Text | None = Field(None, alias="service-account")
    head: Head = Field(default_factory=lambda: Head(cpu=DEFAULT_HEAD_CPU, memory=DEFAULT_HEAD_MEMORY))
    worker_groups: list[WorkerGroup] = Field(
        default_factory=lambda: [
            WorkerGroup(
                name="default-group", replicas=1, cpu=DEFAULT_WORKER_CPU, memory=DEFAULT_WORKER_MEMORY
            )
        ],
        alias="worker-groups",
    )
    autoscaler: Autoscaler | None = None
    gke: GKE | None = None


def parse_config(data: Any) -> ClusterConfig:
    """The config file's document over upstream's defaults (the head merged key by key)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ClusterConfigError("failed to parse YAML: the config file must be a mapping")
    head = data.get("head")
    if isinstance(head, dict):
        data = {**data, "head": {"cpu": DEFAULT_HEAD_CPU, "memory": DEFAULT_HEAD_MEMORY, **head}}
    try:
        return ClusterConfig.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in e.errors()
        )
        raise ClusterConfigError(f"failed to parse YAML: {problems}") from e


def validate_quantity(value: str, name: str) -> None:
    try:
        parsed = quantity.parse(value)
    except (quantity.QuantityError, ValueError) as e:
        raise ClusterConfigError(f"{name} is not a valid resource quantity: {e}") from e
    if parsed < 0:
        raise ClusterConfigError(f"{name} cannot be negative")


def validate_tpu(tpu: str | None, num_of_hosts: int | None, node_selectors: dict[str, str]) -> None:
    if not tpu or tpu == "0":
        return
    if num_of_hosts == 0:
        raise ClusterConfigError("numOfHosts cannot be 0 when using TPU")
    for key in (TPU_ACCELERATOR, TPU_TOPOLOGY):
        if key not in node_selectors:
            raise ClusterConfigError(
                f"{key} is not set in --worker-node-selectors. See {TPU_DOC_URL} for supported values"
            )


def validate_config(config: ClusterConfig) -> None:
    """Upstream's checks of a config file: quantities, TPU node selectors, the gcsfuse bucket and path."""
    head = config.head
    for name, value in (("cpu", head.cpu), ("gpu", head.gpu), ("memory", head.memory),
                        ("ephemeral-storage", head.ephemeral_storage)):  # fmt: skip
        if value is not None:
            validate_quantity(value, name)
    for i, group in enumerate(config.worker_groups):
        for name, value in (("cpu", group.cpu), ("gpu", group.gpu), ("tpu", group.tpu),
                            ("memory", group.memory), ("ephemeral-storage", group.ephemeral_storage)):  # fmt: skip
            if value is not None:
                validate_quantity(value, f"{name} (worker group {i})")
        validate_tpu(group.tpu, group.num_of_hosts, group.node_selectors)
    gcsfuse = config.gke.gcsfuse if config.gke else None
    if gcsfuse is not None:
        if not gcsfuse.bucket_name:
            raise ClusterConfigError(".gcsfuse.bucket-name is required")
        if not gcsfuse.mount_path:
            raise ClusterConfigError(".gcsfuse.mount-path is required")
        if gcsfuse.resources is not None:
            r = gcsfuse.resources
            for name, value in (
                ("cpu", r.cpu),
                ("memory", r.memory),
                ("ephemeral-storage", r.ephemeral_storage),
            ):
                if value is not None:
                    validate_quantity(value, f"gcsfuse.resources.{name}")


def _canonical(value: str) -> str:
    return quantity.canonical(quantity.parse(value), quantity.is_binary(value))


def resource_list(**values: str | None) -> dict[str, str]:
    """Non-zero quantities by resource name (keyword `nvidia_gpu`/`google_tpu`/`ephemeral_storage`)."""
    names = {"nvidia_gpu": NVIDIA_GPU, "google_tpu": GOOGLE_TPU, "ephemeral_storage": "ephemeral-storage"}
    return {
        names.get(key, key): _canonical(value)
        for key, value in values.items()
        if value and not quantity.is_zero(value)
    }


def _pod_template(container: dict[str, Any], node_selectors: dict[str, str], service_account: str | None) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {"containers": [container]}
    if node_selectors:
        spec["nodeSelector"] = dict(node_selectors)
    if service_account:
        spec["serviceAccountName"] = service_account
    return {"spec": spec}


def _worker_group(config: ClusterConfig, index: int, group: WorkerGroup) -> dict[str, Any]:
    name = group.name or ("default-group" if index == 0 else f"default-group-{index}")
    container = {
        "name": "ray-worker",
        "image": config.image,
        "resources": {
            "requests": resource_list(cpu=group.cpu, memory=group.memory, ephemeral_storage=group.ephemeral_storage,
                                      nvidia_gpu=group.gpu, google_tpu=group.tpu),
            "limits": resource_list(memory=group.memory, ephemeral_storage=group.ephemeral_storage,
                                    nvidia_gpu=group.gpu, google_tpu=group.tpu),
        },
    }  # fmt: skip
    spec: dict[str, Any] = {"groupName": name, "replicas": group.replicas}
    if group.ray_start_params:
        spec["rayStartParams"] = dict(group.ray_start_params)
    if group.num_of_hosts is not None:
        spec["numOfHosts"] = group.num_of_hosts
    spec["template"] = _pod_template(container, group.node_selectors, config.service_account)
    return spec


def raycluster(config: ClusterConfig, name: str, namespace: str) -> dict[str, Any]:
    """The RayCluster to apply."""
    head = config.head
    head_container = {
        "name": "ray-head",
        "image": config.image,
        "resources": {
            "requests": resource_list(cpu=head.cpu, memory=head.memory, ephemeral_storage=head.ephemeral_storage,
                                      nvidia_gpu=head.gpu),
            "limits": resource_list(memory=head.memory, ephemeral_storage=head.ephemeral_storage, nvidia_gpu=head.gpu),
        },
        "ports": [
            {"containerPort": 6379, "name": "gcs-server"},
            {"containerPort": 8265, "name": "dashboard"},
            {"containerPort": 10001, "name": "client"},
        ],
    }  # fmt: skip
    head_group: dict[str, Any] = {}
    if head.ray_start_params:
        head_group["rayStartParams"] = dict(head.ray_start_params)
    head_group["template"] = _pod_template(head_container, head.node_selectors, config.service_account)
    spec: dict[str, Any] = {
        "rayVersion": config.ray_version,
        "headGroupSpec": head_group,
        "workerGroupSpecs": [_worker_group(config, i, g) for i, g in enumerate(config.worker_groups)],
    }
    if config.autoscaler is not None and config.autoscaler.version:
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = {"version": config.autoscaler.version}
    if config.gke is not None and config.gke.gcsfuse is not None:
        _add_gcsfuse(spec, config.gke.gcsfuse)
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if config.labels:
        metadata["labels"] = dict(config.labels)
    if config.annotations:
        metadata["annotations"] = dict(config.annotations)
    return {"apiVersion": RAYCLUSTER.api_version, "kind": RAYCLUSTER.kind, "metadata": metadata, "spec": spec}


def _add_gcsfuse(spec: dict[str, Any], gcsfuse: GCSFuse) -> None:
    """The Cloud Storage FUSE CSI volume on every pod, mounted in its first container, and the sidecar's
    resources as the driver's pod annotations."""
    attributes = {"bucketName": gcsfuse.bucket_name}
    if gcsfuse.mount_options:
        attributes["mountOptions"] = gcsfuse.mount_options
    for key, flag in (("disableMetrics", gcsfuse.disable_metrics),
                      ("gcsfuseMetadataPrefetchOnMount", gcsfuse.metadata_prefetch_on_mount),
                      ("skipCSIBucketAccessCheck", gcsfuse.skip_csi_bucket_access_check)):  # fmt: skip
        if flag is not None:
            attributes[key] = "true" if flag else "false"
    annotations: dict[str, str] = {}
    r = gcsfuse.resources
    if r is not None:
        if r.cpu:
            annotations["gke-gcsfuse/cpu-request"] = r.cpu
        if r.memory:
            annotations["gke-gcsfuse/memory-limit"] = annotations["gke-gcsfuse/memory-request"] = r.memory
        if r.ephemeral_storage:
            annotations["gke-gcsfuse/ephemeral-storage-limit"] = r.ephemeral_storage
            annotations["gke-gcsfuse/ephemeral-storage-request"] = r.ephemeral_storage
    for group in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]:
        template = group["template"]
        template["spec"].setdefault("volumes", []).append(
            {"name": GCSFUSE_VOLUME, "csi": {"driver": GCSFUSE_DRIVER, "volumeAttributes": dict(attributes)}}
        )
        template["spec"]["containers"][0].setdefault("volumeMounts", []).append(
            {"name": GCSFUSE_VOLUME, "mountPath": gcsfuse.mount_path}
        )
        metadata = template.setdefault("metadata", {})
        if annotations:
            metadata.setdefault("annotations", {}).update(annotations)
