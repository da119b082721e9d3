"""The history server's rules on a RayCluster spec: upstream's `validateCollectorOptions` and the checks of
`historyServerOptions` in `ValidateRayClusterSpec` (feature-gated, as upstream's are).
"""

from __future__ import annotations

from kuberay.api import constants as c
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.validation import wire
from kuberay.api.validation.field import Errors, FieldError
from kuberay.api.validation.wire import JSON

_COLLECTOR_MANAGED_ENV_VARS = (
    c.POD_IP,
    c.FQ_RAY_IP,
    c.RAY_CLUSTER_NAME,
    c.RAY_CLUSTER_NAMESPACE,
    c.RAY_ROLE,
    c.OWNER_KIND,
    c.OWNER_NAME,
    c.EVENTS_PORT,
)


def _collector_options(options: JSON, at: str) -> Errors:
    """Upstream's `validateCollectorOptions`; its checks depend on one another, so the first failure ends
    them."""
    if not wire.text(options, "image"):
        yield FieldError(f"{at}.image", "historyServerOptions.collectorOptions.image must be set")
        return
    entries = wire.objs(options, "env")
    # Later entries win for duplicate names, as upstream builds a map from the list.
    by_name = {wire.text(entry, "name"): (i, entry) for i, entry in enumerate(entries)}
    for name in _COLLECTOR_MANAGED_ENV_VARS:
        if name in by_name:
            yield FieldError(
                f"{at}.env[{by_name[name][0]}]",
                f"historyServerOptions.collectorOptions.env must not contain {name}: it is managed by KubeRay and "
                "injected automatically into the collector container",
            )
            return

    def literal(name: str) -> str:
        return wire.text(by_name[name][1], "value") if name in by_name else ""

    def has_value(name: str) -> bool:
        return bool(literal(name)) or (name in by_name and wire.has(by_name[name][1], "valueFrom"))

    backend = literal(c.STORAGE_BACKEND)
    if not backend:
        yield FieldError(
            f"{at}.env",
            f"{c.STORAGE_BACKEND} environment variable must be set with a literal string value in "
            "historyServerOptions.collectorOptions.env",
        )
        return
    required: tuple[str, ...] = ()
    backend = backend.upper()
    if backend == "GCS":
        required = (c.GCS_BUCKET,)
    elif backend == "S3":
        required = (c.S3_REGION,)
    elif backend == "ALIYUNOSS":
        required = (c.ALIYUN_OSS_BUCKET, c.ALIYUN_OSS_ENDPOINT, c.ALIYUN_OSS_REGION)
    elif backend == "AZUREBLOB":
        mode = literal(c.AZURE_STORAGE_AUTH_MODE).strip().lower()
        if mode == "connection_string":
            needed = c.AZURE_STORAGE_CONNECTION_STRING
        elif mode in ("workload_identity", "default"):
            needed = c.AZURE_STORAGE_ACCOUNT_URL
        else:
            if not has_value(c.AZURE_STORAGE_CONNECTION_STRING) and not has_value(
                c.AZURE_STORAGE_ACCOUNT_URL
            ):
                yield FieldError(
                    f"{at}.env",
                    f"either {c.AZURE_STORAGE_CONNECTION_STRING} or {c.AZURE_STORAGE_ACCOUNT_URL} environment "
                    f"variable must be set when {c.STORAGE_BACKEND} is AZUREBLOB",
                )
            return
        if not has_value(needed):
            yield FieldError(
                f"{at}.env",
                f"{needed} environment variable must be set when {c.STORAGE_BACKEND} is AZUREBLOB and "
                f"{c.AZURE_STORAGE_AUTH_MODE} is {mode}",
            )
        return
    for name in required:
        if not has_value(name):
            yield FieldError(
                f"{at}.env", f"{name} environment variable must be set when {c.STORAGE_BACKEND} is {backend}"
            )
            return


def history_server(spec: JSON, at: str, gates: FeatureGates) -> Errors:
    options_at = f"{at}.historyServerOptions"
    if not gates.enabled(Feature.RAY_CLUSTER_HISTORY_SERVER):
        yield FieldError(options_at, f"{Feature.RAY_CLUSTER_HISTORY_SERVER} feature gate is not enabled")
        return
    options = wire.obj(spec, "historyServerOptions")
    if not wire.has(options, "collectorOptions"):
        yield FieldError(
            f"{options_at}.collectorOptions", "historyServerOptions.collectorOptions must be set"
        )
        return
    yield from _collector_options(wire.obj(options, "collectorOptions"), f"{options_at}.collectorOptions")
    for group_at, name, group in wire.pod_groups(spec, at):
        owner = "head pod template" if name is None else f"worker group {name} pod template"
        for i, container in enumerate(wire.template_containers(group)):
            if wire.text(container, "name") == c.COLLECTOR_CONTAINER_NAME:
                yield FieldError(
                    f"{group_at}.template.spec.containers[{i}].name",
                    f"{owner} must not define a container with name '{c.COLLECTOR_CONTAINER_NAME}' when history "
                    "server collector options are enabled",
                )
