"""The RayCluster's own reading of its conditions: which suspension state they say it is in. The generic
condition rules (`meta.SetStatusCondition` and its siblings) are `kubesemantics.conditions`'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.api.raycluster import RayClusterConditionType

JSON = dict[str, Any]
Obj = Mapping[str, Any]


def suspend_status(status: Obj) -> str:
    """The first of `RayClusterSuspending` / `RayClusterSuspended` that is True, else ""."""
    for condition in status.get("conditions") or ():
        if (
            condition.get("type")
            in (
                RayClusterConditionType.SUSPENDING,
                RayClusterConditionType.SUSPENDED,
            )
            and condition.get("status") == "True"
        ):
            return str(condition["type"])
    return ""
