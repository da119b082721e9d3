"""The arithmetic of rolling updates, as pure functions (no I/O, no clock).

- `scaled_value`: an int-or-percent (`maxSurge: 25%`) against a replica count, rounded as upstream's
  `GetScaledValueFromIntOrPercent` (surge rounds up, unavailability down for Deployments; both up for
  DaemonSets).
- `fenceposts`: a Deployment's resolved (maxSurge, maxUnavailable); both zero means one unavailable.
- `new_set_target` / `old_set_targets`: the next `spec.replicas` of a Deployment's new and old
  ReplicaSets in a rolling update.
- `template_hash`: the `pod-template-hash` of a pod template (FNV-1a 32 over a canonical form, printed
  with Kubernetes' "safe" alphabet, as upstream prints its hash).

Counts are per ReplicaSet (`SetCounts`). Unlike upstream, which reads ReplicaSet status, they come from the
pods themselves at the moment of the decision, and pods above a set's `spec.replicas` (about to be deleted)
count against the surge but not towards availability. That keeps the invariants exact on the pods, whatever
order the controllers run in: at most `replicas + maxSurge` active pods, at least `replicas - maxUnavailable`
available ones (once that many were available).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesemantics import names
from localkube.controllers.errors import ControllerManagerError

POD_TEMPLATE_HASH = "pod-template-hash"
SAFE_ALPHABET = names.SUFFIX_ALPHABET  # client-go's SafeEncodeString maps onto the same characters


class RolloutError(ControllerManagerError, ValueError):
    """An int-or-percent a rollout cannot use; the message names the problem as upstream does."""


def scaled_value(value: int | str | None, total: int, *, round_up: bool, default: int | str = 0) -> int:
    """`value` (an int, or a string `"N%"` of `total`) as a number of replicas."""
    if value is None:
        value = default
    if isinstance(value, bool):
        raise RolloutError(f"invalid value for IntOrString: invalid type: {type(value).__name__}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            raise RolloutError(f"invalid value for IntOrString: invalid value {value!r}") from None
        exact = percent * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    raise RolloutError(f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}")


def fenceposts(
    max_surge: int | str | None, max_unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    """A Deployment's (surge, unavailable) for `desired` replicas (defaults 25% each)."""
    surge = scaled_value(max_surge, desired, round_up=True, default="25%")
    unavailable = scaled_value(max_unavailable, desired, round_up=False, default="25%")
    if surge == 0 and unavailable == 0:
        # Neither may be zero, or no rollout could ever make progress.
        unavailable = 1
    return surge, unavailable


@dataclass(frozen=True)
class SetCounts:
    """One ReplicaSet at a moment: its wanted replicas and its pods."""

    spec: int
    active: int = 0
    available: int = 0

    @property
    def occupied(self) -> int:
        """Pods it has or is about to have: what counts against the surge."""
        return max(self.spec, self.active)

    @property
    def counted_available(self) -> int:
        """Available pods that are staying (those above `spec` are about to go)."""
        return min(self.spec, self.available)


def new_set_target(desired: int, surge: int, new: SetCounts, old: Sequence[SetCounts]) -> int:
    """The new ReplicaSet's next `spec.replicas`: up towards `desired` within the surge."""
    if new.spec >= desired:
        return desired
    room = desired + surge - new.occupied - sum(s.occupied for s in old)
    return new.spec + max(0, min(room, desired - new.spec))


def old_set_targets(desired: int, unavailable: int, new: SetCounts, old: Sequence[SetCounts]) -> list[int]:
    """The old ReplicaSets' next `spec.replicas` (given and returned oldest first).

    First the old sets' unavailable replicas go (they cost no availability), no more than leaves room for
    the new set's own unavailable ones; then available old replicas go while more than
    `desired - unavailable` stay available."""
    targets = [s.spec for s in old]
    if not any(targets):
        return targets
    min_available = desired - unavailable
    everything = new.spec + sum(targets)
    new_unavailable = new.spec - new.counted_available
    budget = everything - min_available - new_unavailable
    if budget <= 0:
        return targets
    for index, counts in enumerate(old):
        unhealthy = counts.spec - counts.counted_available
        cut = min(budget, unhealthy)
        targets[index] -= cut
        budget -= cut
    staying = new.counted_available + sum(
        min(target, counts.available) for target, counts in zip(targets, old, strict=True)
    )
    surplus = staying - min_available
    for index in range(len(targets)):
        if surplus <= 0:
            break
        cut = min(targets[index], surplus)
        targets[index] -= cut
        surplus -= cut
    return targets


def template_hash(template: dict[str, Any], collision_count: int = 0) -> str:
    """The `pod-template-hash` label value of a pod template (stable across runs and processes)."""
    canonical = json.dumps(_without_hash_label(template), sort_keys=True, separators=(",", ":"))
    if collision_count:
        canonical += str(collision_count)
    value = 0x811C9DC5
    for byte in canonical.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(SAFE_ALPHABET[ord(char) % len(SAFE_ALPHABET)] for char in str(value))


def _without_hash_label(template: dict[str, Any]) -> dict[str, Any]:
    """The template as its meaning: no hash label, and no metadata a client's round trip may add or drop
    (`creationTimestamp: null`, `generation: 0`, empty maps)."""
    metadata = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    metadata["labels"] = labels
    meaningful = {
        k: v for k, v in metadata.items() if v not in (None, {}, "") and (k, v) != ("generation", 0)
    }
    stripped = {k: v for k, v in template.items() if k != "metadata"}
    if meaningful:
        stripped["metadata"] = meaningful
    return stripped


def same_template(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Templates equal but for the `pod-template-hash` label (how a Deployment finds its new set)."""
    return _without_hash_label(a) == _without_hash_label(b)


@dataclass(frozen=True)
class ScaledSet:
    """A ReplicaSet as proportional scaling sees it: its replicas and the `max-replicas` annotation
    (the Deployment's replicas plus surge when the set was last scaled; None when it has none)."""

    spec: int
    max_replicas: int | None = None


def proportional_targets(
    desired: int, surge: int, sets: Sequence[ScaledSet], current_total: int
) -> list[int]:
    """The sets' next `spec.replicas` when a Deployment is scaled mid-rollout (sets given oldest first):
    the replicas to add or remove are spread in proportion to each set's size, as upstream's
    `scale`/`GetProportion` spread them; the leftover of the rounding goes to the largest set (the newest
    on a tie when growing, the oldest when shrinking). `current_total` stands in for a set without the
    annotation, as upstream's status.replicas does."""
    targets = [s.spec for s in sets]
    active = [index for index, s in enumerate(sets) if s.spec > 0]
    allowed = desired + surge if desired > 0 else 0
    to_add = allowed - sum(sets[index].spec for index in active)
    if to_add == 0 or not active:
        return targets
    growing = to_add > 0
    order = sorted(active, key=lambda index: (-sets[index].spec, -index if growing else index))
    added = 0
    for index in order:
        if added == to_add:
            break
        fraction = _fraction(sets[index], desired, allowed, current_total)
        proportion = min(fraction, to_add - added) if growing else max(fraction, to_add - added)
        targets[index] += proportion
        added += proportion
    targets[order[0]] = max(targets[order[0]] + to_add - added, 0)
    return targets


def _fraction(replica_set: ScaledSet, desired: int, allowed: int, current_total: int) -> int:
    if desired == 0:
        return -replica_set.spec
    annotated = replica_set.max_replicas or current_total
    if not annotated:
        return 0
    # Go's integer.RoundToInt32 rounds half away from zero.
    exact = replica_set.spec * allowed / annotated
    return int(math.floor(exact + 0.5)) - replica_set.spec
