"""Beyond upstream, from its open proposal (kuberay#4974, PR #4975): the `Valid` condition, so a cluster the
operator refuses says so in its status, not only in an Event that expires.

Upstream returns early on a metadata, spec or upgradeStrategy failure and never writes the status, so
`observedGeneration` stays at the last generation it accepted: indistinguishable from a generation not yet
seen. Here a refused generation is still observed: `invalid_status` keeps every field and condition as it
was, moves `observedGeneration` and sets `Valid=False/ValidationFailed` with the refusal's text (the same
text as the Warning Event). A pass that gets past validation sets `Valid=True` whatever happens later in
it (`mark_valid`), as the proposal's review asked: a fixed spec must not keep reading as invalid because a
pod create then failed. The condition follows the `RayClusterStatusConditions` gate, like the others;
`observedGeneration` does not.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubesemantics.conditions import set_condition

JSON = dict[str, Any]
Obj = Mapping[str, Any]

CONDITION = "Valid"
VALIDATION_FAILED = "ValidationFailed"
SPEC_VALID = "RayClusterSpecValid"
VALID_MESSAGE = "RayCluster metadata and spec are valid"


def mark_valid(status: JSON, stamp: str) -> None:
    """Sets `Valid=True` in a status about to be written (in place)."""
    conditions: list[JSON] = status.setdefault("conditions", [])
    set_condition(conditions, CONDITION, "True", SPEC_VALID, VALID_MESSAGE, stamp)


def invalid_status(old: Obj, generation: int, message: str, *, conditions_enabled: bool, stamp: str) -> JSON:
    """The status of a cluster refused for `message`: `old` with only `observedGeneration`, the `Valid`
    condition and `lastUpdateTime` changed."""
    status: JSON = copy.deepcopy(dict(old))
    if generation:
        status["observedGeneration"] = generation
    if conditions_enabled:
        conditions: list[JSON] = list(status.get("conditions") or [])
        set_condition(conditions, CONDITION, "False", VALIDATION_FAILED, message, stamp)
        status["conditions"] = conditions
    status["lastUpdateTime"] = stamp
    return status


def invalid_status_changed(old: Obj, new: Obj) -> bool:
    """Whether a refused cluster's status is worth writing: the general rule ignores `observedGeneration`
    alone, but here it is the point."""
    return any(old.get(field) != new.get(field) for field in ("observedGeneration", "conditions"))
