"""Validation of the apps/v1 workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet) that the real API
server does and the controllers rely on.

Without it a workload whose selector does not select its own template would make pods forever (each new
pod is released as soon as it is made). Checks, with apimachinery's paths and messages: a required,
non-empty `spec.selector` that matches `spec.template.metadata.labels` and never changes after create;
`replicas` and `minReadySeconds` not negative; the pod template's `restartPolicy` `Always`; a Deployment's
strategy (`maxSurge`/`maxUnavailable` ints or `N%`, not both zero, unavailability at most 100%, no
`rollingUpdate` with `Recreate`) and a `progressDeadlineSeconds` above `minReadySeconds`; a StatefulSet's
`podManagementPolicy` and `updateStrategy.type`; a DaemonSet's `updateStrategy.type`.
"""

from __future__ import annotations

import re
from typing import Any

from kubesemantics.schema import supported_values
from kubesemantics.selectors import label_selector_matches, selector_text
from localkube.admission.errors import FORBIDDEN, INVALID, REQUIRED, UNSUPPORTED, FieldError

WORKLOAD_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"})
_PERCENT_RE = re.compile(r"^[0-9]+%$")
_PERCENT_TEXT = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
    "regex used for validation is '[0-9]+%')"
)


def validate_workload(kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The causes for refusing a workload write; empty for other kinds and for valid workloads."""
    if kind not in WORKLOAD_KINDS:
        return []
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    causes = _selector(kind, spec, old)
    for name in ("replicas", "minReadySeconds"):
        value = spec.get(name)
        if isinstance(value, int) and value < 0:
            causes.append(FieldError(f"spec.{name}", INVALID, value, "must be greater than or equal to 0"))
    template_spec = (spec.get("template") or {}).get("spec") or {}
    restart = template_spec.get("restartPolicy", "Always")
    if restart != "Always":
        causes.append(
            FieldError("spec.template.spec.restartPolicy", UNSUPPORTED, restart, supported_values(["Always"]))
        )
    if kind == "Deployment":
        causes += _deployment(spec)
    elif kind == "StatefulSet":
        policy = spec.get("podManagementPolicy", "OrderedReady")
        policies = ("OrderedReady", "Parallel")
        if policy not in policies:
            causes.append(
                FieldError("spec.podManagementPolicy", UNSUPPORTED, policy, supported_values(policies))
            )
        causes += _strategy_type(spec, "updateStrategy", ("OnDelete", "RollingUpdate"))
    elif kind == "DaemonSet":
        causes += _strategy_type(spec, "updateStrategy", ("OnDelete", "RollingUpdate"))
    return causes


def _selector(kind: str, spec: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    selector = spec.get("selector")
    if selector is None:
        return [FieldError("spec.selector", REQUIRED)]
    text = selector_text(selector) if isinstance(selector, dict) else ""
    if not text:
        return [
            FieldError("spec.selector", INVALID, selector, f"empty selector is invalid for {kind.lower()}")
        ]
    if old is not None and ((old.get("spec") or {}).get("selector") or {}) != selector:
        return [FieldError("spec.selector", INVALID, selector, "field is immutable")]
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not label_selector_matches(selector, labels):
        return [
            FieldError(
                "spec.template.metadata.labels",
                INVALID,
                labels,
                "`selector` does not match template `labels`",
            )
        ]
    return []


def _deployment(spec: dict[str, Any]) -> list[FieldError]:
    causes = _strategy_type(spec, "strategy", ("Recreate", "RollingUpdate"))
    strategy = spec.get("strategy") or {}
    rolling = strategy.get("rollingUpdate")
    if strategy.get("type") == "Recreate" and rolling is not None:
        causes.append(FieldError("spec.strategy.rollingUpdate", FORBIDDEN, detail="may not be specified when strategy `type` is 'Recreate'"))  # fmt: skip
    elif isinstance(rolling, dict):
        path = "spec.strategy.rollingUpdate"
        surge, unavailable = rolling.get("maxSurge"), rolling.get("maxUnavailable")
        for name, value in (("maxSurge", surge), ("maxUnavailable", unavailable)):
            if isinstance(value, str) and not _PERCENT_RE.match(value):
                causes.append(FieldError(f"{path}.{name}", INVALID, value, _PERCENT_TEXT))
            elif isinstance(value, int) and value < 0:
                causes.append(
                    FieldError(f"{path}.{name}", INVALID, value, "must be greater than or equal to 0")
                )
        if isinstance(unavailable, str) and _PERCENT_RE.match(unavailable) and int(unavailable[:-1]) > 100:
            causes.append(
                FieldError(f"{path}.maxUnavailable", INVALID, unavailable, "must not be greater than 100%")
            )
        if _is_zero(surge) and _is_zero(unavailable):
            causes.append(FieldError(f"{path}.maxUnavailable", INVALID, unavailable, "may not be 0 when `maxSurge` is 0"))  # fmt: skip
    deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
    if isinstance(deadline, int) and isinstance(min_ready, int) and deadline <= min_ready:
        causes.append(FieldError("spec.progressDeadlineSeconds", INVALID, deadline, "must be greater than minReadySeconds"))  # fmt: skip
    return causes


def _is_zero(value: Any) -> bool:
    return value in (0, "0%")


def _strategy_type(spec: dict[str, Any], field: str, allowed: tuple[str, ...]) -> list[FieldError]:
    kind = (spec.get(field) or {}).get("type")
    if kind is None or kind in allowed:
        return []
    return [FieldError(f"spec.{field}.type", UNSUPPORTED, kind, supported_values(allowed))]
