"""RayService rules: upstream's `ValidateRayServiceMetadata` (name and the `ray.io/initializing-timeout`
annotation) and `ValidateRayServiceSpec` (with `ValidateClusterUpgradeOptions`).

Upstream dereferences `clusterUpgradeOptions.maxSurgePercent` without a nil check; here an unset value is
the CRD default, 100, which is what the API server would have written.
"""

from __future__ import annotations

from collections.abc import Mapping

from kuberay.api import constants as c
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.validation import names, raycluster, wire
from kuberay.api.validation.field import Errors, FieldError
from kuberay.api.validation.wire import JSON
from kubesemantics import goparse

SPEC_INVALID = "The RayService spec is invalid: "
METADATA_INVALID = "The RayService metadata is invalid: "
_UPGRADE_TYPES = ("NewClusterWithIncrementalUpgrade", "NewCluster", "None")
_INCREMENTAL = "NewClusterWithIncrementalUpgrade"
_DEFAULT_MAX_SURGE_PERCENT = 100


def _initializing_timeout(value: str) -> str | None:
    """Why the annotation is invalid (a Go duration, else integer seconds; either must be positive)."""
    key = c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION
    try:
        duration = goparse.parse_duration(value)
    except goparse.GoParseError:
        pass
    else:
        return None if duration > 0 else f"annotation {key} must be a positive duration, got: {value}"
    try:
        seconds = goparse.atoi(value)
    except goparse.GoParseError:
        return (
            f"annotation {key} has invalid format: {value}. Expected Go duration format (e.g., '5m', '1h') or "
            "positive integer seconds"
        )
    return None if seconds > 0 else f"annotation {key} must be a positive integer (seconds), got: {value}"


def metadata(meta: JSON) -> Errors:
    name = wire.text(meta, "name")
    prefix = METADATA_INVALID
    if len(name.encode()) > c.MAX_RAY_SERVICE_NAME_LENGTH:
        yield FieldError(
            "metadata.name",
            f"{prefix}RayService name should be no more than {c.MAX_RAY_SERVICE_NAME_LENGTH} characters",
        )
    elif problems := names.dns1035_label(name):
        yield FieldError(
            "metadata.name",
            f"{prefix}RayService name should be a valid DNS1035 label: {names.go_list(problems)}",
        )
    timeout = wire.strings(meta, "annotations").get(c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION, "")
    if timeout and (problem := _initializing_timeout(timeout)) is not None:
        yield FieldError(
            f"metadata.annotations[{c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION}]",
            f"{prefix}RayService annotations is invalid: {problem}",
        )


def _cluster_upgrade_options(spec: JSON, at: str) -> Errors:
    cluster_spec = wire.obj(spec, "rayClusterConfig")
    if not wire.flag(cluster_spec, "enableInTreeAutoscaling"):
        yield FieldError(
            f"{at}.rayClusterConfig.enableInTreeAutoscaling",
            f"{SPEC_INVALID}Ray Autoscaler is required for NewClusterWithIncrementalUpgrade",
        )
    strategy = wire.obj(spec, "upgradeStrategy")
    options_at = f"{at}.upgradeStrategy.clusterUpgradeOptions"
    if not wire.has(strategy, "clusterUpgradeOptions"):
        yield FieldError(
            options_at,
            f"{SPEC_INVALID}ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade",
        )
        return
    options = wire.obj(strategy, "clusterUpgradeOptions")
    max_surge = wire.integer(options, "maxSurgePercent")
    max_surge = _DEFAULT_MAX_SURGE_PERCENT if max_surge is None else max_surge
    surge_ok = 0 <= max_surge <= 100
    if not surge_ok:
        yield FieldError(
            f"{options_at}.maxSurgePercent", f"{SPEC_INVALID}maxSurgePercent must be between 0 and 100"
        )
    step = wire.integer(options, "stepSizePercent")
    if step is None or not 0 <= step <= 100:
        yield FieldError(
            f"{options_at}.stepSizePercent", f"{SPEC_INVALID}stepSizePercent must be between 0 and 100"
        )
    elif surge_ok and step > max_surge:
        yield FieldError(
            f"{options_at}.stepSizePercent",
            f"{SPEC_INVALID}stepSizePercent must be less than or equal to maxSurgePercent",
        )
    interval = wire.integer(options, "intervalSeconds")
    if interval is None or interval <= 0:
        yield FieldError(
            f"{options_at}.intervalSeconds", f"{SPEC_INVALID}intervalSeconds must be greater than 0"
        )
    if not wire.text(options, "gatewayClassName"):
        yield FieldError(
            f"{options_at}.gatewayClassName",
            f"{SPEC_INVALID}gatewayClassName is required for NewClusterWithIncrementalUpgrade",
        )


def service_spec(spec: JSON, annotations: Mapping[str, str], gates: FeatureGates) -> Errors:
    at = "spec"
    cluster_spec = wire.obj(spec, "rayClusterConfig")
    cluster_at = f"{at}.rayClusterConfig"
    if wire.flag(wire.obj(cluster_spec, "authOptions"), "enableK8sTokenAuth"):
        yield FieldError(
            f"{cluster_at}.authOptions.enableK8sTokenAuth",
            f"{SPEC_INVALID}K8s token auth mode is currently not supported for RayService",
        )
    for error in raycluster.cluster_spec(cluster_spec, annotations, gates, cluster_at):
        yield error.prefixed(SPEC_INVALID)
    head_service = wire.obj(wire.obj(cluster_spec, "headGroupSpec"), "headService")
    if wire.text(wire.obj(head_service, "metadata"), "name"):
        yield FieldError(
            f"{cluster_at}.headGroupSpec.headService.metadata.name",
            f"{SPEC_INVALID}spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set",
        )
    strategy = wire.obj(spec, "upgradeStrategy")
    kind = wire.text(strategy, "type")
    if wire.has(strategy, "type") and kind not in _UPGRADE_TYPES:
        yield FieldError(
            f"{at}.upgradeStrategy.type",
            f"{SPEC_INVALID}Spec.UpgradeStrategy.Type value {kind} is invalid, valid options are "
            "NewClusterWithIncrementalUpgrade, NewCluster, or None",
        )
    delay = wire.integer(spec, "rayClusterDeletionDelaySeconds")
    if delay is not None and delay < 0:
        yield FieldError(
            f"{at}.rayClusterDeletionDelaySeconds",
            f"{SPEC_INVALID}Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got {delay}",
        )
    if gates.enabled(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE) and kind == _INCREMENTAL:
        yield from _cluster_upgrade_options(spec, at)
