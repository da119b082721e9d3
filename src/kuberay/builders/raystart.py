"""`rayStartParams` completion and the `ray start` command line, rendered exactly as upstream renders it.

The pipeline for one Ray node, in upstream's order:

1. `with_group_resources` and `with_group_labels`: the group's top-level `resources` and `labels` fields
   overwrite `num-cpus` / `memory` / `num-gpus` / `resources` and `labels`;
2. `with_missing_params`: `address` (workers), `dashboard-host` (head), `metrics-export-port`,
   `dashboard-agent-listen-port` when absent, and `block=true` always;
3. (the pod builder adds `no-monitor`, `redis-username`, `redis-password` here);
4. `with_container_resources`: `num-cpus`, `memory`, `num-gpus` and one custom accelerator derived from the
   Ray container's resources, each only when absent;
5. `ray_start_command`: flags sorted by key, booleans as bare switches.

Every function returns a new dict and leaves its argument alone. Upstream mutates the RayCluster's map in
place; since each step only fills what is absent (or overwrites with the same derived value) that
mutation is idempotent and a fresh copy per build gives the same command.

The spacing of the command is part of the contract (users grep `KUBERAY_GEN_RAY_START_CMD`): each flag is
rendered as ``" --key=value "`` or ``" --key "``, and the prefix is ``"ray start --head "`` or
``"ray start "``, hence the double spaces and the trailing space.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from kuberay.builders import goformat
from kubesemantics import quantity

NodeType = Literal["head", "worker"]

DEFAULT_METRICS_PORT = 8080
DEFAULT_DASHBOARD_AGENT_LISTEN_PORT = 52365
DEFAULT_GCS_SERVER_PORT = 6379

# Flags that take an explicit boolean value (`--include-dashboard=false`); any other flag whose value is
# "true"/"false" is a bare switch, emitted when true and dropped when false.
_EXPLICIT_BOOLEAN_FLAGS = frozenset({"log-color", "include-dashboard", "include-log-monitor"})

# Container resources that Ray knows under another name, in upstream's table.
CUSTOM_ACCELERATORS: Mapping[str, str] = {
    "aws.amazon.com/neuroncore": "neuron_cores",
    "google.com/tpu": "TPU",
}

_MIG_RESOURCE = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


def is_gpu_resource_key(key: str) -> bool:
    """`nvidia.com/gpu`, `amd.com/gpu`, anything ending in `gpu`, and NVIDIA MIG slices
    (`nvidia.com/mig-2g.32gb`)."""
    return key.endswith("gpu") or _MIG_RESOURCE.search(key) is not None


def head_port(head_params: Mapping[str, str]) -> str:
    """The port workers and drivers use to reach the GCS: the head's `port` param, verbatim, or 6379."""
    return head_params.get("port", str(DEFAULT_GCS_SERVER_PORT))


def with_group_resources(params: Mapping[str, str], resources: Mapping[str, str] | None) -> dict[str, str]:
    """Applies a group's top-level `resources` (Ray resource name -> quantity). Unparsable quantities are
    skipped, as upstream logs and skips them."""
    result = dict(params)
    custom: dict[str, float] = {}
    for name, raw in (resources or {}).items():
        try:
            value = quantity.parse(raw)
        except quantity.QuantityError:
            continue
        normalized = name.lower()
        if normalized == "cpu":
            result["num-cpus"] = str(quantity.ceil_value(raw))
        elif normalized == "memory":
            result["memory"] = str(quantity.ceil_value(raw))
        elif is_gpu_resource_key(normalized):
            result["num-gpus"] = str(quantity.ceil_value(raw))
        else:
            custom[name] = float(value)
    if custom:
        result["resources"] = f"'{goformat.json(custom)}'"
    return result


def with_group_labels(params: Mapping[str, str], labels: Mapping[str, str] | None) -> dict[str, str]:
    """Renders a group's top-level `labels` as ``--labels=k1=v1,k2=v2`` (sorted by key)."""
    result = dict(params)
    if labels:
        result["labels"] = ",".join(f"{key}={labels[key]}" for key in sorted(labels))
    return result


def with_missing_params(params: Mapping[str, str], node_type: NodeType, address: str = "") -> dict[str, str]:
    """`setMissingRayStartParams`. `address` (`<head fqdn>:<head port>`) is used for workers only."""
    result = dict(params)
    if node_type == "worker":
        result.setdefault("address", address)
    else:
        result.setdefault("dashboard-host", "0.0.0.0")
    result.setdefault("metrics-export-port", str(DEFAULT_METRICS_PORT))
    result["block"] = "true"
    result.setdefault("dashboard-agent-listen-port", str(DEFAULT_DASHBOARD_AGENT_LISTEN_PORT))
    return result


def with_container_resources(
    params: Mapping[str, str], resources: Mapping[str, Any] | None
) -> dict[str, str]:
    """Fills `num-cpus`, `memory`, `num-gpus` and one custom accelerator from the Ray container's
    `resources` (a ResourceRequirements dict), each only when the param is absent.

    CPUs come from the limit, else the request; memory from the limit only; GPUs and accelerators from
    limits only, scanning resource names in sorted order (the first GPU key wins, and only the first
    custom accelerator is considered)."""
    result = dict(params)
    limits: Mapping[str, Any] = (resources or {}).get("limits") or {}
    requests: Mapping[str, Any] = (resources or {}).get("requests") or {}
    if "num-cpus" not in result:
        for source in (limits, requests):
            cpu = _nonzero(source.get("cpu"))
            if cpu is not None:
                result["num-cpus"] = str(quantity.ceil_value(cpu))
                break
    if "memory" not in result:
        memory = _nonzero(limits.get("memory"))
        if memory is not None:
            result["memory"] = str(quantity.ceil_value(memory))
    if limits:
        _add_accelerators(result, limits)
    return result


def _nonzero(raw: Any) -> str | int | float | None:
    """The quantity if it is set and non-zero. A missing or unparsable quantity counts as zero, as a
    zero-valued Go `Quantity` does."""
    if raw is None:
        return None
    try:
        return None if quantity.is_zero(raw) else raw
    except quantity.QuantityError:
        return None


def _add_accelerators(params: dict[str, str], limits: Mapping[str, Any]) -> None:
    declared = _declared_custom_resources(params)
    if declared is None:
        return  # upstream logs the unreadable `resources` param and derives no accelerator at all
    accelerator_seen = any(name in declared for name in CUSTOM_ACCELERATORS.values())
    for key in sorted(limits):
        value = _nonzero(limits[key])
        if "num-gpus" not in params and is_gpu_resource_key(key) and value is not None:
            params["num-gpus"] = str(quantity.ceil_value(value))
        ray_name = CUSTOM_ACCELERATORS.get(key)
        if not accelerator_seen and ray_name is not None and value is not None:
            if ray_name not in declared:
                declared[ray_name] = quantity.approximate_float(value)
                params["resources"] = f"'{goformat.json(declared)}'"
            accelerator_seen = True


def _declared_custom_resources(params: Mapping[str, str]) -> dict[str, float] | None:
    """The JSON object of the `resources` param (quotes and spaces around it stripped), or None when it is
    not an object of numbers."""
    if "resources" not in params:
        return {}
    text = params["resources"].strip("'\"` ")
    try:
        decoded = json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return None
    if decoded is None:
        return {}
    if not isinstance(decoded, dict):
        return None
    numbers: dict[str, float] = {}
    for name, value in decoded.items():
        if isinstance(value, bool) or not isinstance(value, int | float | None):
            return None
        numbers[name] = float(value or 0)
    return numbers


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def render_flags(params: Mapping[str, str]) -> str:
    """`convertParamMap`: every param as ``" --key=value "`` in sorted key order; a "true"/"false" value is
    a bare ``" --key "`` switch (dropped when false), except for flags that take an explicit boolean."""
    rendered = []
    for key in sorted(params):
        value = params[key]
        if value.lower() in ("true", "false") and key not in _EXPLICIT_BOOLEAN_FLAGS:
            if value.lower() == "true":
                rendered.append(f" --{key} ")
        else:
            rendered.append(f" --{key}={value} ")
    return "".join(rendered)


def ray_start_command(node_type: str, params: Mapping[str, str]) -> str:
    """The `ray start` line for a head or a worker from fully completed params; for any other node type
    upstream renders nothing (it logs the mistake), and so does this."""
    if node_type == "head":
        return "ray start --head " + render_flags(params)
    if node_type == "worker":
        return "ray start " + render_flags(params)
    return ""
