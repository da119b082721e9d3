"""Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), which `kubectl get` prints.

Custom resources get `Name` plus their version's additionalPrinterColumns (or `Name`, `Age` when it
declares none), evaluated with the simple JSONPath the CRDs use (`.status.state`, `.spec.a[0].b`,
`.spec.groups[*].replicas`, and the filter `.status.conditions[?(@.type == "Ready")].status`). Built-in kinds get the columns kubectl users know for the common kinds
(pods, services, workloads, jobs, namespaces, nodes) and `Name`, `Age` otherwise. `date` columns are
shown as ages (`5m`, `3h2m`), as the real server's CRD table convertor does.

Each row carries the object as `PartialObjectMetadata` (the default `includeObject=Metadata`), the whole
object with `includeObject=Object`, or nothing with `None`.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from typing import Any

from kubesemantics import times
from kubesemantics.goparse import human_duration
from kubesemantics.selectors import selector_text
from localkube.server import autoscaling
from localkube.server.registry import PrinterColumn, ResourceType

Cell = str | int | float | bool | None

_NAME = {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}  # fmt: skip
_AGE = PrinterColumn(
    "Age", "date", ".metadata.creationTimestamp", "CreationTimestamp is the time the object was created."
)
# A field, an index (`[*]`, `[2]`, `[-1]`), or a filter on a field of the elements: `[?(@.type == "Ready")]`
# (`==` or `!=`, against a quoted string or a bare literal, compared as text).
_SEGMENT_RE = re.compile(
    r"""\[\?\(@\.([\w.-]+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|([^)\s]+))\)\]|([^.\[\]]+)|\[(\*|-?\d+)\]"""
)


def _text(value: Any) -> str:
    """A JSON value as a filter's literal spells it (`true`, not Python's `True`)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def jsonpath_values(obj: Any, path: str) -> list[Any]:
    """Every value `path` reaches in `obj` (`{}` around the path is allowed and ignored)."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    current = [obj]
    for match in _SEGMENT_RE.finditer(path):
        field, operator, double, single, bare, name, index = match.groups()
        following: list[Any] = []
        for value in current:
            if field is not None:
                if isinstance(value, list):
                    wanted = next(text for text in (double, single, bare) if text is not None)
                    following.extend(
                        item for item in value
                        if any(_text(found) == wanted for found in jsonpath_values(item, field)) == (operator == "==")
                    )  # fmt: skip
            elif name is not None:
                if isinstance(value, dict) and name in value:
                    following.append(value[name])
            elif isinstance(value, list):
                if index == "*":
                    following.extend(value)
                elif -len(value) <= int(index) < len(value):
                    following.append(value[int(index)])
        current = following
    return current


def age(timestamp: Any) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        then = times.parse_time(timestamp)
    except ValueError:
        return "<invalid>"
    return human_duration((datetime.datetime.now(datetime.UTC) - then).total_seconds())


def _cell(column: PrinterColumn, obj: dict[str, Any]) -> Cell:
    values = jsonpath_values(obj, column.json_path)
    if not values:
        return None
    value = values[0]
    if column.type == "date":
        return age(value)
    if isinstance(value, dict | list):
        return str(value)
    if len(values) > 1:
        return ",".join(str(v) for v in values)
    return value  # type: ignore[no-any-return]


def _columns(resource_type: ResourceType) -> list[PrinterColumn]:
    if resource_type.custom:
        return list(resource_type.printer_columns) or [_AGE]
    builtin = _BUILTIN_COLUMNS.get(resource_type.kind)
    return [column for column, _ in builtin] if builtin else [_AGE]


def _builtin_cells(resource_type: ResourceType, obj: dict[str, Any]) -> list[Cell] | None:
    builtin = _BUILTIN_COLUMNS.get(resource_type.kind) if not resource_type.custom else None
    return [compute(obj) for _, compute in builtin] if builtin else None


def table(
    resource_type: ResourceType, objects: list[dict[str, Any]], metadata: dict[str, Any], include_object: str
) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of `objects`; `metadata` is the list metadata (resourceVersion, continue)."""
    columns = _columns(resource_type)
    name_column = (
        {**_NAME, "priority": 1} if resource_type.kind == "Event" and not resource_type.custom else _NAME
    )
    definitions = [name_column] + [
        {
            "name": column.name,
            "type": "string" if column.type == "date" else column.type,
            "format": column.format,
            "description": column.description,
            "priority": column.priority,
        }
        for column in columns
    ]
    rows = []
    for obj in objects:
        cells = _builtin_cells(resource_type, obj)
        if cells is None:
            cells = [_cell(column, obj) for column in columns]
        row: dict[str, Any] = {"cells": [obj.get("metadata", {}).get("name", ""), *cells]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    }


# -- built-in kinds -------------------------------------------------------------------------------------


def _get(obj: dict[str, Any], *path: str) -> Any:
    current: Any = obj
    for part in path:
        if not isinstance(current, dict):
            return None
        current = current.get(part)
    return current


def _created(obj: dict[str, Any]) -> str:
    return age(_get(obj, "metadata", "creationTimestamp"))


def _pod_ready(obj: dict[str, Any]) -> str:
    statuses = _get(obj, "status", "containerStatuses") or []
    containers = _get(obj, "spec", "containers") or []
    return f"{sum(1 for s in statuses if s.get('ready'))}/{len(containers)}"


def _pod_status(obj: dict[str, Any]) -> str:
    if _get(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    for status in _get(obj, "status", "containerStatuses") or []:
        state = status.get("state") or {}
        for phase in ("waiting", "terminated"):
            reason = (state.get(phase) or {}).get("reason")
            if reason:
                return str(reason)
    return str(_get(obj, "status", "reason") or _get(obj, "status", "phase") or "Pending")


def _pod_restarts(obj: dict[str, Any]) -> int:
    return sum(int(s.get("restartCount", 0)) for s in _get(obj, "status", "containerStatuses") or [])


def _service_ports(obj: dict[str, Any]) -> str:
    ports = []
    for port in _get(obj, "spec", "ports") or []:
        text = f"{port.get('port')}"
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        ports.append(f"{text}/{port.get('protocol', 'TCP')}")
    return ",".join(ports) or "<none>"


def _node_ready(obj: dict[str, Any]) -> str:
    for condition in _get(obj, "status", "conditions") or []:
        if condition.get("type") == "Ready":
            return "Ready" if condition.get("status") == "True" else "NotReady"
    return "Unknown"


def _job_status(obj: dict[str, Any]) -> str:
    for condition in _get(obj, "status", "conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "Failed", "Suspended"):
            return str(condition["type"])
    return "Running"


def _event_object(obj: dict[str, Any]) -> str:
    """`kind/name` of what a core (`involvedObject`) or events.k8s.io (`regarding`) Event is about."""
    about = _get(obj, "involvedObject") or _get(obj, "regarding") or {}
    return f"{str(about.get('kind') or '').lower()}/{about.get('name') or ''}"


def _controller_of(obj: dict[str, Any]) -> str:
    for reference in _get(obj, "metadata", "ownerReferences") or []:
        if reference.get("controller"):
            group = str(reference.get("apiVersion", "")).rpartition("/")[0]
            kind = str(reference.get("kind", "")).lower() + (f".{group}" if group else "")
            return f"{kind}/{reference.get('name', '')}"
    return "<none>"


def _column(name: str, compute: Callable[[dict[str, Any]], Cell], kind: str = "string", priority: int = 0) -> tuple[PrinterColumn, Callable[[dict[str, Any]], Cell]]:  # fmt: skip
    return PrinterColumn(name, kind, "", priority=priority), compute


_AGE_COLUMN = _column("Age", _created)


def _hpa(obj: dict[str, Any]) -> dict[str, Any]:
    """The v2 form the HPA columns read (kubectl's printer reads the internal, v2-shaped object)."""
    return autoscaling.from_v1(obj) if obj.get("apiVersion") == autoscaling.V1 else obj


def _metric_text(spec: dict[str, Any], status: dict[str, Any] | None) -> str:
    """One metric of the Targets column, `current/target` as kubectl prints it (`cpu: <unknown>/80%`)."""
    kind = spec.get("type")
    field = {"ContainerResource": "containerResource"}.get(str(kind), str(kind).lower())
    source, current_source = spec.get(field) or {}, (status or {}).get(field)
    target, current = source.get("target") or {}, (current_source or {}).get("current") or {}
    if kind in ("Resource", "ContainerResource"):
        prefix = f"{source.get('name', '')}: "
        if target.get("averageValue") is not None:
            shown = current.get("averageValue") if current_source else None
            return f"{prefix}{shown or '<unknown>'}/{target['averageValue']}"
        utilization = current.get("averageUtilization")
        shown = f"{utilization}%" if current_source and utilization is not None else "<unknown>"
        wanted = target.get("averageUtilization")
        return f"{prefix}{shown}/{'<auto>' if wanted is None else f'{wanted}%'}"
    if kind == "Pods":
        return f"{current.get('averageValue') or '<unknown>'}/{target.get('averageValue', '')}"
    if kind in ("Object", "External"):
        if target.get("averageValue") is not None:
            return f"{current.get('averageValue') or '<unknown>'}/{target['averageValue']} (avg)"
        return f"{current.get('value') or '<unknown>'}/{target.get('value', '')}"
    return "<unknown type>"


def _hpa_targets(obj: dict[str, Any]) -> str:
    hpa = _hpa(obj)
    specs = _get(hpa, "spec", "metrics") or []
    statuses = _get(hpa, "status", "currentMetrics") or []
    if not specs:
        return "<none>"
    shown = [_metric_text(s, statuses[i] if i < len(statuses) else None) for i, s in enumerate(specs)]
    more = f" + {len(shown) - 2} more..." if len(shown) > 2 else ""
    return ", ".join(shown[:2]) + more


# The wide (`-o wide`) columns of the workload kinds.
_TEMPLATE_COLUMNS = (
    _column(
        "Containers",
        lambda o: ",".join(
            str(c.get("name", "")) for c in _get(o, "spec", "template", "spec", "containers") or []
        ),
        priority=1,
    ),
    _column(
        "Images",
        lambda o: ",".join(
            str(c.get("image", "")) for c in _get(o, "spec", "template", "spec", "containers") or []
        ),
        priority=1,
    ),
)
_SELECTOR_COLUMN = _column(
    "Selector", lambda o: selector_text(_get(o, "spec", "selector")) or "<none>", priority=1
)

_BUILTIN_COLUMNS: dict[str, list[tuple[PrinterColumn, Callable[[dict[str, Any]], Cell]]]] = {
    "Pod": [
        _column("Ready", _pod_ready),
        _column("Status", _pod_status),
        _column("Restarts", _pod_restarts, "integer"),
        _AGE_COLUMN,
        _column("IP", lambda o: _get(o, "status", "podIP") or "<none>", priority=1),
        _column("Node", lambda o: _get(o, "spec", "nodeName") or "<none>", priority=1),
    ],
    "Service": [
        _column("Type", lambda o: _get(o, "spec", "type") or "ClusterIP"),
        _column("Cluster-IP", lambda o: _get(o, "spec", "clusterIP") or "<none>"),
        _column("External-IP", lambda o: ",".join(_get(o, "spec", "externalIPs") or []) or "<none>"),
        _column("Port(s)", _service_ports),
        _AGE_COLUMN,
    ],
    "Deployment": [
        _column("Ready", lambda o: f"{_get(o, 'status', 'readyReplicas') or 0}/{_get(o, 'spec', 'replicas') or 0}"),
        _column("Up-to-date", lambda o: _get(o, "status", "updatedReplicas") or 0, "integer"),
        _column("Available", lambda o: _get(o, "status", "availableReplicas") or 0, "integer"),
        _AGE_COLUMN,
        *_TEMPLATE_COLUMNS,
        _SELECTOR_COLUMN,
    ],
    "Job": [
        _column("Status", _job_status),
        _column("Completions", lambda o: f"{_get(o, 'status', 'succeeded') or 0}/{_get(o, 'spec', 'completions') or 1}"),
        _AGE_COLUMN,
    ],
    "Event": [
        _column("Last Seen", lambda o: age(_get(o, "lastTimestamp") or _get(o, "deprecatedLastTimestamp") or _get(o, "eventTime") or _get(o, "metadata", "creationTimestamp"))),
        _column("Type", lambda o: _get(o, "type") or ""),
        _column("Reason", lambda o: _get(o, "reason") or ""),
        _column("Object", _event_object),
        _column("Message", lambda o: _get(o, "message") or _get(o, "note") or ""),
    ],
    "ConfigMap": [_column("Data", lambda o: len(_get(o, "data") or {}) + len(_get(o, "binaryData") or {}), "integer"), _AGE_COLUMN],
    "Secret": [
        _column("Type", lambda o: _get(o, "type") or "Opaque"),
        _column("Data", lambda o: len(_get(o, "data") or {}), "integer"),
        _AGE_COLUMN,
    ],
    "ServiceAccount": [_column("Secrets", lambda o: len(_get(o, "secrets") or []), "integer"), _AGE_COLUMN],
    "ReplicaSet": [
        _column("Desired", lambda o: _get(o, "spec", "replicas") or 0, "integer"),
        _column("Current", lambda o: _get(o, "status", "replicas") or 0, "integer"),
        _column("Ready", lambda o: _get(o, "status", "readyReplicas") or 0, "integer"),
        _AGE_COLUMN,
        *_TEMPLATE_COLUMNS,
        _SELECTOR_COLUMN,
    ],
    "StatefulSet": [
        _column("Ready", lambda o: f"{_get(o, 'status', 'readyReplicas') or 0}/{_get(o, 'spec', 'replicas') or 0}"),
        _AGE_COLUMN,
        *_TEMPLATE_COLUMNS,
    ],
    "DaemonSet": [
        _column("Desired", lambda o: _get(o, "status", "desiredNumberScheduled") or 0, "integer"),
        _column("Current", lambda o: _get(o, "status", "currentNumberScheduled") or 0, "integer"),
        _column("Ready", lambda o: _get(o, "status", "numberReady") or 0, "integer"),
        _column("Up-to-date", lambda o: _get(o, "status", "updatedNumberScheduled") or 0, "integer"),
        _column("Available", lambda o: _get(o, "status", "numberAvailable") or 0, "integer"),
        _column("Node Selector", lambda o: ",".join(f"{k}={v}" for k, v in sorted((_get(o, "spec", "template", "spec", "nodeSelector") or {}).items())) or "<none>"),
        _AGE_COLUMN,
        *_TEMPLATE_COLUMNS,
        _SELECTOR_COLUMN,
    ],
    "ControllerRevision": [
        _column("Controller", _controller_of),
        _column("Revision", lambda o: _get(o, "revision") or 0, "integer"),
        _AGE_COLUMN,
    ],
    "Endpoints": [
        _column("Endpoints", lambda o: ",".join(
            f"{a.get('ip')}:{p.get('port')}" for sub in _get(o, "subsets") or [] for a in sub.get("addresses") or [] for p in sub.get("ports") or []
        ) or "<none>"),
        _AGE_COLUMN,
    ],
    "Ingress": [
        _column("Class", lambda o: _get(o, "spec", "ingressClassName") or "<none>"),
        _column("Hosts", lambda o: ",".join(r.get("host", "*") for r in _get(o, "spec", "rules") or []) or "*"),
        _column("Address", lambda o: ",".join(i.get("ip") or i.get("hostname", "") for i in _get(o, "status", "loadBalancer", "ingress") or [])),
        _AGE_COLUMN,
    ],
    "PersistentVolumeClaim": [
        _column("Status", lambda o: _get(o, "status", "phase") or "Pending"),
        _column("Volume", lambda o: _get(o, "spec", "volumeName") or ""),
        _column("Capacity", lambda o: _get(o, "status", "capacity", "storage") or ""),
        _AGE_COLUMN,
    ],
    "HorizontalPodAutoscaler": [
        _column("Reference", lambda o: f"{_get(_hpa(o), 'spec', 'scaleTargetRef', 'kind') or ''}/{_get(_hpa(o), 'spec', 'scaleTargetRef', 'name') or ''}"),
        _column("Targets", _hpa_targets),
        _column("MinPods", lambda o: str(m) if (m := _get(o, "spec", "minReplicas")) is not None else "<unset>"),
        _column("MaxPods", lambda o: _get(o, "spec", "maxReplicas") or 0, "integer"),
        _column("Replicas", lambda o: _get(o, "status", "currentReplicas") or 0, "integer"),
        _AGE_COLUMN,
    ],
    "Lease": [_column("Holder", lambda o: _get(o, "spec", "holderIdentity") or ""), _AGE_COLUMN],
    "PriorityClass": [
        _column("Value", lambda o: _get(o, "value") or 0, "integer"),
        _column("Global-Default", lambda o: bool(_get(o, "globalDefault")), "boolean"),
        _AGE_COLUMN,
    ],
    "Namespace": [_column("Status", lambda o: _get(o, "status", "phase") or "Active"), _AGE_COLUMN],
    "Node": [
        _column("Status", _node_ready),
        _AGE_COLUMN,
        _column("Version", lambda o: _get(o, "status", "nodeInfo", "kubeletVersion") or ""),
    ],
    "CustomResourceDefinition": [
        _column("Created At", lambda o: _get(o, "metadata", "creationTimestamp"), "date"),
    ],
}  # fmt: skip
