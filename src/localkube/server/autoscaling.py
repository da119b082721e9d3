"""HorizontalPodAutoscalers as kube-apiserver keeps them: stored in autoscaling/v2 (its storage version),
defaulted as the v2 decoder defaults every object it reads, and served through autoscaling/v1 as a view
converted on the way, so one object reads and writes through both versions.

What v1 cannot hold travels in the annotations kube-apiserver uses for it: metrics other than a CPU
utilization target (`autoscaling.alpha.kubernetes.io/metrics`, as v1 MetricSpecs), the current metrics
(`.../current-metrics`), the conditions (`.../conditions`) and the behavior (`.../behavior`, written as Go's
encoding/json writes the internal type: field names capitalized, unset pointers `null`). Writing through v1
reads them back into the v2 object; the v2 form never carries them. As upstream's conversion, a v1 object
without any metric gets the implicit 80% CPU utilization target.
"""

from __future__ import annotations

import json
from typing import Any

from localkube.admission.errors import INVALID, REQUIRED, FieldError

V1 = "autoscaling/v1"
V2 = "autoscaling/v2"
DEFAULT_CPU_UTILIZATION = 80
METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR)
# The behavior v2 defaults (pkg/apis/autoscaling/v2/defaults.go): the scale-up and scale-down rules the
# controller applied before behaviors existed; a scale-down window stays unset (a controller flag sets it).
_SCALE_UP = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_SCALE_DOWN = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
_RULE_FIELDS = (
    ("StabilizationWindowSeconds", "stabilizationWindowSeconds"),
    ("SelectPolicy", "selectPolicy"),
)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _some(**fields: Any) -> dict[str, Any]:
    """The fields that are set (Go's `omitempty` on pointers)."""
    return {key: value for key, value in fields.items() if value is not None}


def _cpu_target(utilization: Any) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def default_v2(obj: dict[str, Any]) -> None:
    """The v2 defaults, in place: minReplicas 1, the 80% CPU target when no metric is given, every unset rule
    of a given behavior; and the status fields Go always writes (`desiredReplicas`, `currentMetrics`)."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [_cpu_target(DEFAULT_CPU_UTILIZATION)]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for direction, defaults in (("scaleUp", _SCALE_UP), ("scaleDown", _SCALE_DOWN)):
            given = {k: v for k, v in _dict(behavior.get(direction)).items() if v is not None}
            behavior[direction] = {**json.loads(json.dumps(defaults)), **given}
    status = obj.get("status")
    if isinstance(status, dict) or status is None:
        status = obj["status"] = status or {}
        status.setdefault("desiredReplicas", 0)
        status.setdefault("currentMetrics", None)


def validate(obj: dict[str, Any]) -> list[FieldError]:
    """The spec checks of kube-apiserver's HPA validation that do not need metrics (in v2's field paths)."""
    spec = _dict(obj.get("spec"))
    causes: list[FieldError] = []
    minimum, maximum = spec.get("minReplicas"), spec.get("maxReplicas") or 0
    if isinstance(minimum, int) and minimum < 1:
        causes.append(FieldError("spec.minReplicas", INVALID, minimum, "must be greater than or equal to 1"))
    if isinstance(maximum, int) and maximum < 1:
        causes.append(FieldError("spec.maxReplicas", INVALID, maximum, "must be greater than 0"))
    if isinstance(minimum, int) and isinstance(maximum, int) and maximum < minimum:
        causes.append(
            FieldError("spec.maxReplicas", INVALID, maximum, "must be greater than or equal to `minReplicas`")
        )
    reference = _dict(spec.get("scaleTargetRef"))
    for name in ("kind", "name"):
        if not reference.get(name):
            causes.append(FieldError(f"spec.scaleTargetRef.{name}", REQUIRED))
    return causes


def _go_json(value: Any) -> str:
    """`value` as Go's json.Marshal writes it (compact, with <, > and & escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _without_round_trip(metadata: dict[str, Any]) -> dict[str, Any]:
    annotations = {k: v for k, v in _dict(metadata.get("annotations")).items() if k not in _ROUND_TRIP}
    out = {k: v for k, v in metadata.items() if k != "annotations"}
    if annotations:
        out["annotations"] = annotations
    return out


# -- v2 -> v1 ---------------------------------------------------------------------------------------------


def _reference(ref: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": ref.get("kind", ""),
        "name": ref.get("name", ""),
        **_some(apiVersion=ref.get("apiVersion") or None),
    }


def _v1_metric(metric: dict[str, Any]) -> dict[str, Any]:
    kind = metric.get("type", "")
    out: dict[str, Any] = {"type": kind}
    source = _dict(metric.get({"ContainerResource": "containerResource"}.get(kind, kind.lower())))
    target, identifier = _dict(source.get("target")), _dict(source.get("metric"))
    if kind == "Object":
        out["object"] = {
            "target": _reference(_dict(source.get("describedObject"))),
            "metricName": identifier.get("name", ""),
            "targetValue": target.get("value") or "0",
            **_some(selector=identifier.get("selector"), averageValue=target.get("averageValue")),
        }
    elif kind == "Pods":
        out["pods"] = {
            "metricName": identifier.get("name", ""),
            "targetAverageValue": target.get("averageValue") or "0",
            **_some(selector=identifier.get("selector")),
        }
    elif kind in ("Resource", "ContainerResource"):
        resource = {
            "name": source.get("name", ""),
            **_some(
                targetAverageUtilization=target.get("averageUtilization"),
                targetAverageValue=target.get("averageValue"),
            ),
        }
        if kind == "Resource":
            out["resource"] = resource
        else:
            out["containerResource"] = {**resource, "container": source.get("container", "")}
    elif kind == "External":
        out["external"] = {
            "metricName": identifier.get("name", ""),
            **_some(
                metricSelector=identifier.get("selector"),
                targetValue=target.get("value"),
                targetAverageValue=target.get("averageValue"),
            ),
        }
    return out


def _v1_metric_status(metric: dict[str, Any]) -> dict[str, Any]:
    kind = metric.get("type", "")
    out: dict[str, Any] = {"type": kind}
    source = _dict(metric.get({"ContainerResource": "containerResource"}.get(kind, kind.lower())))
    current, identifier = _dict(source.get("current")), _dict(source.get("metric"))
    if kind == "Object":
        out["object"] = {
            "target": _reference(_dict(source.get("describedObject"))),
            "metricName": identifier.get("name", ""),
            "currentValue": current.get("value") or "0",
            **_some(selector=identifier.get("selector"), averageValue=current.get("averageValue")),
        }
    elif kind == "Pods":
        out["pods"] = {
            "metricName": identifier.get("name", ""),
            "currentAverageValue": current.get("averageValue") or "0",
            **_some(selector=identifier.get("selector")),
        }
    elif kind in ("Resource", "ContainerResource"):
        resource = {
            "name": source.get("name", ""),
            **_some(currentAverageUtilization=current.get("averageUtilization")),
            "currentAverageValue": current.get("averageValue") or "0",
        }
        if kind == "Resource":
            out["resource"] = resource
        else:
            out["containerResource"] = {**resource, "container": source.get("container", "")}
    elif kind == "External":
        out["external"] = {
            "metricName": identifier.get("name", ""),
            **_some(metricSelector=identifier.get("selector")),
            "currentValue": current.get("value") or "0",
            **_some(currentAverageValue=current.get("averageValue")),
        }
    return out


def _internal_behavior(behavior: dict[str, Any]) -> dict[str, Any]:
    """The behavior as Go marshals the internal type kube-apiserver keeps in the annotation."""

    def rules(value: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            return None
        out: dict[str, Any] = {go: value.get(name) for go, name in _RULE_FIELDS}
        policies = value.get("policies")
        out["Policies"] = (
            None
            if policies is None
            else [
                {
                    "Type": p.get("type", ""),
                    "Value": p.get("value", 0),
                    "PeriodSeconds": p.get("periodSeconds", 0),
                }
                for p in policies
            ]
        )
        return out

    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored v2 HorizontalPodAutoscaler as autoscaling/v1 serves it."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    v1_spec: dict[str, Any] = {
        "scaleTargetRef": _reference(_dict(spec.get("scaleTargetRef"))),
        **_some(minReplicas=spec.get("minReplicas")),
        "maxReplicas": spec.get("maxReplicas", 0),
    }
    others = []
    cpu_seen = False
    for metric in metrics:
        resource = _dict(metric.get("resource"))
        utilization = _dict(resource.get("target")).get("averageUtilization")
        is_cpu = metric.get("type") == "Resource" and resource.get("name") == "cpu"
        if is_cpu and not cpu_seen:
            cpu_seen = True
            if utilization is not None:
                v1_spec["targetCPUUtilizationPercentage"] = utilization
        if not (is_cpu and utilization is not None):
            others.append(_v1_metric(metric))
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    v1_status: dict[str, Any] = {
        **_some(
            observedGeneration=status.get("observedGeneration"), lastScaleTime=status.get("lastScaleTime")
        ),
        "currentReplicas": status.get("currentReplicas", 0),
        "desiredReplicas": status.get("desiredReplicas", 0),
    }
    for metric in current:
        resource = _dict(metric.get("resource"))
        utilization = _dict(resource.get("current")).get("averageUtilization")
        if metric.get("type") == "Resource" and resource.get("name") == "cpu" and utilization is not None:
            v1_status["currentCPUUtilizationPercentage"] = utilization
    metadata = _without_round_trip(_dict(obj.get("metadata")))
    annotations: dict[str, str] = {}
    if others:
        annotations[METRICS] = _go_json(others)
    if current:
        annotations[CURRENT_METRICS] = _go_json([_v1_metric_status(m) for m in current])
    if isinstance(spec.get("behavior"), dict):
        annotations[BEHAVIOR] = _go_json(_internal_behavior(spec["behavior"]))
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    if conditions:
        annotations[CONDITIONS] = _go_json([_condition(c) for c in conditions])
    if annotations:
        metadata["annotations"] = {**_dict(metadata.get("annotations")), **annotations}
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "spec", "status")}
    return {"apiVersion": V1, "kind": obj.get("kind", "HorizontalPodAutoscaler"), "metadata": metadata,
            "spec": v1_spec, "status": v1_status, **out}  # fmt: skip


def _condition(condition: dict[str, Any]) -> dict[str, Any]:
    # A Time struct is never left out by omitempty: Go writes a zero one as null.
    return {
        "type": condition.get("type", ""),
        "status": condition.get("status", ""),
        "lastTransitionTime": condition.get("lastTransitionTime"),
        **_some(reason=condition.get("reason") or None, message=condition.get("message") or None),
    }


# -- v1 -> v2 ---------------------------------------------------------------------------------------------


def _v2_metric(metric: dict[str, Any]) -> dict[str, Any]:
    kind = metric.get("type", "")
    out: dict[str, Any] = {"type": kind}
    if kind == "Object":
        source = _dict(metric.get("object"))
        average = source.get("averageValue")
        target = _some(
            type="Value" if average is None else "AverageValue",
            value=source.get("targetValue"),
            averageValue=average,
        )
        out["object"] = {
            "describedObject": _reference(_dict(source.get("target"))),
            "target": target,
            "metric": _some(name=source.get("metricName", ""), selector=source.get("selector")),
        }
    elif kind == "Pods":
        source = _dict(metric.get("pods"))
        out["pods"] = {
            "metric": _some(name=source.get("metricName", ""), selector=source.get("selector")),
            "target": {"type": "AverageValue", "averageValue": source.get("targetAverageValue") or "0"},
        }
    elif kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = _dict(metric.get(field))
        utilization = source.get("targetAverageUtilization")
        target = _some(
            type="AverageValue" if utilization is None else "Utilization",
            averageValue=source.get("targetAverageValue"),
            averageUtilization=utilization,
        )
        out[field] = {"name": source.get("name", ""), "target": target}
        if kind == "ContainerResource":
            out[field]["container"] = source.get("container", "")
    elif kind == "External":
        source = _dict(metric.get("external"))
        value = source.get("targetValue")
        target = _some(
            type="AverageValue" if value is None else "Value",
            value=value,
            averageValue=source.get("targetAverageValue"),
        )
        out["external"] = {
            "metric": _some(name=source.get("metricName", ""), selector=source.get("metricSelector")),
            "target": target,
        }
    return out


def _v2_metric_status(metric: dict[str, Any]) -> dict[str, Any]:
    kind = metric.get("type", "")
    out: dict[str, Any] = {"type": kind}
    if kind == "Object":
        source = _dict(metric.get("object"))
        out["object"] = {
            "metric": _some(name=source.get("metricName", ""), selector=source.get("selector")),
            "current": _some(
                value=source.get("currentValue") or "0", averageValue=source.get("averageValue")
            ),
            "describedObject": _reference(_dict(source.get("target"))),
        }
    elif kind == "Pods":
        source = _dict(metric.get("pods"))
        out["pods"] = {
            "metric": _some(name=source.get("metricName", ""), selector=source.get("selector")),
            "current": {"averageValue": source.get("currentAverageValue") or "0"},
        }
    elif kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = _dict(metric.get(field))
        current = _some(
            averageValue=source.get("currentAverageValue") or "0",
            averageUtilization=source.get("currentAverageUtilization"),
        )
        out[field] = {"name": source.get("name", ""), "current": current}
        if kind == "ContainerResource":
            out[field]["container"] = source.get("container", "")
    elif kind == "External":
        source = _dict(metric.get("external"))
        out["external"] = {
            "metric": _some(name=source.get("metricName", ""), selector=source.get("metricSelector")),
            "current": _some(
                value=source.get("currentValue") or "0", averageValue=source.get("currentAverageValue")
            ),
        }
    return out


def _annotation_list(annotations: dict[str, Any], key: str) -> list[dict[str, Any]] | None:
    """A round-trip annotation's list; None when absent or not a JSON list (upstream skips what it cannot
    decode)."""
    if key not in annotations:
        return None
    try:
        value = json.loads(str(annotations[key]))
    except ValueError:
        return None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else None


def _v2_behavior(text: Any) -> dict[str, Any] | None:
    try:
        internal = json.loads(str(text))
    except ValueError:
        return None
    if not isinstance(internal, dict):
        return None
    behavior: dict[str, Any] = {}
    for go_direction, direction in (("ScaleUp", "scaleUp"), ("ScaleDown", "scaleDown")):
        rules = internal.get(go_direction)
        if not isinstance(rules, dict):
            continue
        out = _some(**{name: rules.get(go) for go, name in _RULE_FIELDS})
        if isinstance(rules.get("Policies"), list):
            out["policies"] = [
                {
                    "type": p.get("Type", ""),
                    "value": p.get("Value", 0),
                    "periodSeconds": p.get("PeriodSeconds", 0),
                }
                for p in rules["Policies"]
                if isinstance(p, dict)
            ]
        behavior[direction] = out
    return behavior or None


def from_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 HorizontalPodAutoscaler in its stored v2 form (round-trip annotations read back)."""
    metadata = _dict(obj.get("metadata"))
    annotations = _dict(metadata.get("annotations"))
    v1_spec = _dict(obj.get("spec"))
    spec: dict[str, Any] = {
        k: v for k, v in v1_spec.items() if k in ("scaleTargetRef", "minReplicas", "maxReplicas")
    }
    metrics = [_v2_metric(m) for m in _annotation_list(annotations, METRICS) or []]
    if v1_spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append(_cpu_target(v1_spec["targetCPUUtilizationPercentage"]))
    # autoscaling/v1 once left the CPU target to the controller; conversion makes it explicit.
    spec["metrics"] = metrics or [_cpu_target(DEFAULT_CPU_UTILIZATION)]
    if BEHAVIOR in annotations and (behavior := _v2_behavior(annotations[BEHAVIOR])) is not None:
        spec["behavior"] = behavior
    out: dict[str, Any] = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out.update(apiVersion=V2, metadata=_without_round_trip(metadata), spec=spec)
    if "status" in obj:
        v1_status = _dict(obj.get("status"))
        status = {
            k: v
            for k, v in v1_status.items()
            if k in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")
        }
        current = v1_status.get("currentCPUUtilizationPercentage")
        if current is not None:
            cpu = {"name": "cpu", "current": {"averageUtilization": current}}
            status["currentMetrics"] = [{"type": "Resource", "resource": cpu}]
        if (listed := _annotation_list(annotations, CURRENT_METRICS)) is not None:
            status["currentMetrics"] = [_v2_metric_status(m) for m in listed]
        if (conditions := _annotation_list(annotations, CONDITIONS)) is not None:
            status["conditions"] = [_some(**c) for c in conditions]
        out["status"] = status
    return out
