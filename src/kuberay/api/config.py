"""The operator's `Configuration` file (`config.ray.io/v1alpha1`, passed with `--config`): every field and
default of upstream KubeRay, and the start-up check of the batch-scheduler settings.

Unlike a custom resource, a config file is ours to refuse: unknown fields and values of the wrong JSON type
are errors (`ConfigError`, naming the field) rather than being dropped or coerced; a `Configuration` is
immutable once built. Defaults follow upstream's `SetDefaults_Configuration`, including its treatment of
empty and zero values as "unset" for the addresses and `reconcileConcurrency`.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kuberay.api.errors import InputError
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.meta import Container, EnvVar, GoFloat
from kuberay.api.validation import names

DEFAULT_METRICS_ADDR: Final = ":8080"
DEFAULT_PROBE_ADDR: Final = ":8082"
DEFAULT_RECONCILE_CONCURRENCY: Final = 1
DEFAULT_QPS: Final = 100.0
DEFAULT_BURST: Final = 200
# Names accepted by `batchScheduler`.
BATCH_SCHEDULERS: Final = ("volcano", "yunikorn", "scheduler-plugins", "kai-scheduler")
LOG_ENCODERS: Final = ("json", "console")


class ConfigError(InputError):
    """The operator configuration is invalid; the message names the field."""


class Configuration(BaseModel):
    """The operator's settings. Build with `Configuration.parse` / `Configuration.from_yaml` (file mode)
    or with keyword arguments (flag mode)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", strict=True, frozen=True)

    api_version: Literal["config.ray.io/v1alpha1"] = Field(
        default="config.ray.io/v1alpha1", alias="apiVersion"
    )
    kind: Literal["Configuration"] = "Configuration"
    burst: int = DEFAULT_BURST
    qps: GoFloat = DEFAULT_QPS
    enable_leader_election: bool = Field(default=True, alias="enableLeaderElection")
    # Empty means `json`.
    log_stdout_encoder: str = Field(default="", alias="logStdoutEncoder")
    probe_addr: str = Field(default=DEFAULT_PROBE_ADDR, alias="probeAddr")
    log_file: str = Field(default="", alias="logFile")
    log_file_encoder: str = Field(default="", alias="logFileEncoder")
    # Empty means the operator Pod's namespace.
    leader_election_namespace: str = Field(default="", alias="leaderElectionNamespace")
    batch_scheduler: str = Field(default="", alias="batchScheduler")
    metrics_addr: str = Field(default=DEFAULT_METRICS_ADDR, alias="metricsAddr")
    # Comma-separated namespaces; empty means all namespaces.
    watch_namespace: str = Field(default="", alias="watchNamespace")
    worker_sidecar_containers: list[Container] = Field(default_factory=list, alias="workerSidecarContainers")
    head_sidecar_containers: list[Container] = Field(default_factory=list, alias="headSidecarContainers")
    default_container_envs: list[EnvVar] = Field(default_factory=list, alias="defaultContainerEnvs")
    default_pod_annotations: dict[str, str] = Field(default_factory=dict, alias="defaultPodAnnotations")
    default_pod_labels: dict[str, str] = Field(default_factory=dict, alias="defaultPodLabels")
    reconcile_concurrency: int = Field(default=DEFAULT_RECONCILE_CONCURRENCY, alias="reconcileConcurrency")
    # Deprecated: means `batchScheduler: volcano`.
    enable_batch_scheduler: bool = Field(default=False, alias="enableBatchScheduler")
    use_kubernetes_proxy: bool = Field(default=False, alias="useKubernetesProxy")
    delete_ray_job_after_job_finishes: bool = Field(default=False, alias="deleteRayJobAfterJobFinishes")
    enable_metrics: bool = Field(default=False, alias="enableMetrics")
    # Upstream v1.8's (kuberay#5260): the node label keys Node Label Delivery may hand to Ray; none when empty.
    # Accepted and checked; the delivery itself is not implemented here.
    allowed_node_labels: list[str] = Field(default_factory=list, alias="allowedNodeLabels")
    # Upstream v1.8's node-event forwarder filters (kuberay#4978): the Node Events' sources, reasons and types
    # to forward to the Ray custom resources (empty: all). Types are Normal or Warning. Forwarded by
    # `kuberay.controllers.nodeevents` while any of the three is set.
    node_event_forwarder_sources: list[str] = Field(default_factory=list, alias="nodeEventForwarderSources")
    node_event_forwarder_reasons: list[str] = Field(default_factory=list, alias="nodeEventForwarderReasons")
    node_event_forwarder_types: list[str] = Field(default_factory=list, alias="nodeEventForwarderTypes")

    @field_validator("metrics_addr")
    @classmethod
    def _default_metrics_addr(cls, value: str) -> str:
        return value or DEFAULT_METRICS_ADDR

    @field_validator("probe_addr")
    @classmethod
    def _default_probe_addr(cls, value: str) -> str:
        return value or DEFAULT_PROBE_ADDR

    @field_validator("reconcile_concurrency")
    @classmethod
    def _default_reconcile_concurrency(cls, value: int) -> int:
        return value or DEFAULT_RECONCILE_CONCURRENCY

    @field_validator("log_stdout_encoder", "log_file_encoder")
    @classmethod
    def _known_encoder(cls, value: str) -> str:
        if value and value not in LOG_ENCODERS:
            raise ValueError(f"invalid encoder \"{value}\" (must be 'json' or 'console')")
        return value

    @field_validator("allowed_node_labels")
    @classmethod
    def _label_keys(cls, keys: list[str]) -> list[str]:
        return check_label_keys(keys)

    @field_validator(
        "node_event_forwarder_sources", "node_event_forwarder_reasons", "node_event_forwarder_types"
    )
    @classmethod
    def _no_empty_items(cls, items: list[str]) -> list[str]:
        # The flags join these with commas: an empty item, or one with a comma, could not round-trip.
        if bad := [item for item in items if not item.strip() or "," in item]:
            raise ValueError(f"items must be non-empty and without commas, got {bad!r}")
        return items

    @field_validator("node_event_forwarder_types")
    @classmethod
    def _event_types(cls, items: list[str]) -> list[str]:
        # Upstream refuses to start on another type: it would match no Event and silently forward nothing.
        if bad := [item for item in items if item not in ("Normal", "Warning")]:
            raise ValueError(f"invalid event types {bad!r}: must be 'Normal' or 'Warning'")
        return items

    @classmethod
    def parse(cls, data: Any) -> Configuration:
        """Builds the configuration from a decoded config file; raises `ConfigError` naming the field."""
        if not isinstance(data, dict):
            raise ConfigError(f"config file must be a mapping, not {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(_describe(e)) from None

    @classmethod
    def from_yaml(cls, text: str) -> Configuration:
        """Parses a config file's text (YAML or JSON); an empty file is all defaults."""
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(f"config file is not valid YAML: {e}") from None
        return cls.parse({} if data is None else data)

    def validate_batch_scheduler(self, gates: FeatureGates) -> None:
        """Upstream's `ValidateBatchSchedulerConfig`, with its exact messages."""
        if gates.enabled(Feature.KUBERNETES_WAS):
            if self.enable_batch_scheduler or self.batch_scheduler:
                raise ConfigError(
                    "the KubernetesWAS feature gate cannot be combined with --batch-scheduler or "
                    "--enable-batch-scheduler"
                )
            return
        if self.enable_batch_scheduler and self.batch_scheduler:
            raise ConfigError(
                "both feature flags enable-batch-scheduler (deprecated) and batch-scheduler are set. "
                "Please use batch-scheduler only"
            )
        if self.batch_scheduler and self.batch_scheduler not in BATCH_SCHEDULERS:
            raise ConfigError(f"scheduler is not supported, name={self.batch_scheduler}")


def check_label_keys(keys: list[str]) -> list[str]:
    """`keys` when each is a Kubernetes label key; else ValueError naming the first that is not."""
    for key in keys:
        if problems := names.label_key(key):
            raise ValueError(f"invalid node label key {key!r}: {'; '.join(problems)}")
    return keys


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "<root>"
        if item["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown field")
        else:
            problems.append(f"{where}: {item['msg']}")
    return "invalid Configuration: " + "; ".join(problems)
