"""The apps/v1 Deployment controller: rolls a Deployment's pods out through ReplicaSets.

The ReplicaSet whose template equals the Deployment's (but for the `pod-template-hash` label) is the new
one; it is named `<deployment>-<hash>`, labelled and selected by `pod-template-hash`, and carries the
revision annotation `deployment.kubernetes.io/revision` (one more than any older set's, also after
`kubectl rollout undo` brings an old template back), as does the Deployment. Strategies:
- `RollingUpdate`: the new set grows within `maxSurge` and old ones shrink within `maxUnavailable`
  (arithmetic in `rollout`), counting the pods themselves.
- `Recreate`: every old set goes to zero, and the new one starts only once no old pod remains.
A scale of the Deployment mid-rollout (or while paused) resizes its active sets in proportion, as
upstream's proportional scaling does, instead of rolling on.
A paused Deployment (`kubectl rollout pause`) changes no ReplicaSet. Old sets with no pods beyond
`revisionHistoryLimit` are deleted, oldest revision first.

Status is written as upstream writes it and `kubectl rollout status` reads it: `observedGeneration`,
`replicas`, `updatedReplicas`, `readyReplicas`, `availableReplicas`, `unavailableReplicas`, and the
`Available` and `Progressing` conditions with upstream's reasons (`NewReplicaSetCreated`,
`FoundNewReplicaSet`, `ReplicaSetUpdated`, `NewReplicaSetAvailable`, `ProgressDeadlineExceeded`, ...); a
rollout that makes no progress for `progressDeadlineSeconds` is marked `ProgressDeadlineExceeded`.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Iterable
from typing import Any

from kubesemantics import times
from kubesemantics.conditions import find_condition, transition_time
from localkube.controllers import podstate
from localkube.controllers.api import ControllerApi
from localkube.controllers.ownership import (
    Ownership,
    controller_reference,
    controller_uid,
    key_of,
)
from localkube.controllers.replicaset import PODS_PREFIX, REPLICASETS_PREFIX, compact
from localkube.controllers.rollout import (
    POD_TEMPLATE_HASH,
    RolloutError,
    ScaledSet,
    SetCounts,
    fenceposts,
    new_set_target,
    old_set_targets,
    proportional_targets,
    same_template,
    template_hash,
)
from localkube.controllers.workload import OwningController
from localkube.server.errors import ApiError
from localkube.storage import Event, Store

DEPLOYMENTS_PREFIX = "/registry/apps/deployments/"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
# Annotations of the Deployment that are its own, not copied onto its ReplicaSets.
_NOT_COPIED = {
    REVISION,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deployment.kubernetes.io/revision-history",
    "kubectl.kubernetes.io/last-applied-configuration",
}


def revision_of(obj: dict[str, Any]) -> int:
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION, "")
    return int(text) if str(text).isdigit() else 0


class DeploymentController(OwningController):
    name = "deployment-controller"
    owner_prefix = DEPLOYMENTS_PREFIX
    owner_kind = "Deployment"
    dependent_prefix = REPLICASETS_PREFIX
    prefixes = (DEPLOYMENTS_PREFIX, REPLICASETS_PREFIX, PODS_PREFIX)

    def __init__(
        self, store: Store, api: ControllerApi, clock: Callable[[], datetime.datetime] = podstate.now
    ) -> None:
        super().__init__(store, api, clock)
        # Read only: the pods of each ReplicaSet (the ReplicaSet controller adopts and releases them).
        self._pods = Ownership(store, REPLICASETS_PREFIX, "ReplicaSet", PODS_PREFIX)

    def observe(self, event: Event) -> Iterable[str]:
        if event.key.startswith(PODS_PREFIX):
            return [key for rs in self._pods.observe(event) for key in self._deployment_of(rs)]
        if event.key.startswith(REPLICASETS_PREFIX):
            self._pods.observe(event)
        return self._owned.observe(event)

    def _deployment_of(self, replicaset_key: str) -> list[str]:
        replicaset = self._store.get(replicaset_key)
        uid = controller_uid(replicaset) if replicaset else None
        key = self._owned.owner_key(uid) if uid else None
        return [key] if key else []

    # -- reconcile ------------------------------------------------------------------------------------

    def sync(self, key: str, deployment: dict[str, Any], sets: list[dict[str, Any]]) -> float | None:
        spec = deployment.get("spec") or {}
        desired = int(spec.get("replicas", 1))
        strategy = spec.get("strategy") or {}
        rolling = strategy.get("rollingUpdate") or {}
        try:
            surge, unavailable = fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), desired)
        except RolloutError as err:
            raise ValueError(f"spec.strategy.rollingUpdate: {err}") from err
        if strategy.get("type") == "Recreate":
            surge, unavailable = 0, 0
        sets = [s for s in sets if not s["metadata"].get("deletionTimestamp")]
        new = next(
            (s for s in _oldest_first(sets) if same_template(_template(s), _template(deployment))), None
        )
        olds = [s for s in _oldest_first(sets) if s is not new]
        status = copy.deepcopy(deployment.get("status") or {})
        now = self._clock()
        recreate = strategy.get("type") == "Recreate"
        if not recreate and _scaling_event(desired, sets):
            # A scale (kubectl scale, an autoscaler) mid-rollout, or while paused: resize, do not roll.
            self._scale_proportionally(deployment, new, olds, surge, status, now)
        elif not spec.get("paused"):
            if recreate:
                new = self._recreate(deployment, new, olds, status, now)
            else:
                new = self._roll(deployment, new, olds, surge, unavailable, status, now)
            self._clean_history(deployment, olds)
        return self._write_status(key, deployment, new, olds, min(unavailable, desired), status, now)

    def _recreate(
        self,
        deployment: dict[str, Any],
        new: dict[str, Any] | None,
        olds: list[dict[str, Any]],
        status: dict[str, Any],
        now: datetime.datetime,
    ) -> dict[str, Any] | None:
        desired = int(deployment["spec"].get("replicas", 1))
        for old in olds:
            if int(old["spec"].get("replicas", 0)):
                self._scale(deployment, old, 0, 0)
        # Not one old pod may remain, not even a terminating one.
        if any(
            podstate.phase(pod) not in ("Succeeded", "Failed")
            for old in olds
            for pod in self._pods.owned(old["metadata"]["uid"])
        ):
            return new
        if new is None:
            return self._create_set(deployment, olds, desired, status, now)
        new = self._found(deployment, new, olds, status, now)
        if int(new["spec"].get("replicas", 0)) != desired:
            new = self._scale(deployment, new, desired, desired)
        return new

    def _roll(
        self,
        deployment: dict[str, Any],
        new: dict[str, Any] | None,
        olds: list[dict[str, Any]],
        surge: int,
        unavailable: int,
        status: dict[str, Any],
        now: datetime.datetime,
    ) -> dict[str, Any]:
        desired = int(deployment["spec"].get("replicas", 1))
        min_ready = int(deployment["spec"].get("minReadySeconds") or 0)
        old_counts = [self._counts(old, min_ready, now) for old in olds]
        if new is None:
            target = new_set_target(desired, surge, SetCounts(0), old_counts)
            new = self._create_set(deployment, olds, target, status, now)
        else:
            new = self._found(deployment, new, olds, status, now)
            target = new_set_target(desired, surge, self._counts(new, min_ready, now), old_counts)
            if target != int(new["spec"].get("replicas", 0)) or _annotation(new, DESIRED_REPLICAS) != str(
                desired
            ):
                new = self._scale(deployment, new, target, desired + surge)
        targets = old_set_targets(desired, unavailable, self._counts(new, min_ready, now), old_counts)
        for old, old_target in zip(olds, targets, strict=True):
            if old_target != int(old["spec"].get("replicas", 0)):
                self._scale(deployment, old, old_target, desired + surge)
        return new

    def _scale_proportionally(
        self,
        deployment: dict[str, Any],
        new: dict[str, Any] | None,
        olds: list[dict[str, Any]],
        surge: int,
        status: dict[str, Any],
        now: datetime.datetime,
    ) -> None:
        """Upstream's `scale`: one active set takes the whole count; a saturated new set retires the old
        ones; otherwise every active set grows or shrinks in proportion to its size."""
        desired = int(deployment["spec"].get("replicas", 1))
        ordered = _oldest_first([*olds, *([new] if new is not None else [])])
        active = [s for s in ordered if int(s["spec"].get("replicas", 0))]
        if len(active) <= 1:
            chosen = active[0] if active else (new or (ordered[-1] if ordered else None))
            if chosen is not None:
                self._scale(deployment, chosen, desired, desired + surge)
            return
        min_ready = int(deployment["spec"].get("minReadySeconds") or 0)
        if (
            new is not None
            and int(new["spec"].get("replicas", 0)) == desired
            and _annotation(new, DESIRED_REPLICAS) == str(desired)
            and self._counts(new, min_ready, now).available == desired
        ):
            for old in olds:
                if int(old["spec"].get("replicas", 0)):
                    self._scale(deployment, old, 0, desired + surge)
            return
        sized = [ScaledSet(int(s["spec"].get("replicas", 0)), _max_replicas(s)) for s in ordered]
        targets = proportional_targets(desired, surge, sized, int(status.get("replicas") or 0))
        for replicaset, target in zip(ordered, targets, strict=True):
            if int(replicaset["spec"].get("replicas", 0)):
                self._scale(deployment, replicaset, target, desired + surge)

    def _counts(self, replicaset: dict[str, Any], min_ready: int, now: datetime.datetime) -> SetCounts:
        pods = [pod for pod in self._pods.owned(replicaset["metadata"]["uid"]) if podstate.active(pod)]
        return SetCounts(
            spec=int((replicaset.get("spec") or {}).get("replicas", 0)),
            active=len(pods),
            available=sum(1 for pod in pods if podstate.available(pod, min_ready, now)),
        )

    # -- ReplicaSet writes ----------------------------------------------------------------------------

    def _create_set(
        self,
        deployment: dict[str, Any],
        olds: list[dict[str, Any]],
        replicas: int,
        status: dict[str, Any],
        now: datetime.datetime,
    ) -> dict[str, Any]:
        metadata, spec = deployment["metadata"], deployment["spec"]
        template = copy.deepcopy(spec.get("template") or {})
        hash_value = template_hash(template, int(status.get("collisionCount") or 0))
        template.setdefault("metadata", {}).setdefault("labels", {})[POD_TEMPLATE_HASH] = hash_value
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH] = hash_value
        surge = _annotation_surge(deployment)
        annotations = {
            **{k: v for k, v in (metadata.get("annotations") or {}).items() if k not in _NOT_COPIED},
            REVISION: str(_next_revision(olds)),
            DESIRED_REPLICAS: str(spec.get("replicas", 1)),
            MAX_REPLICAS: str(int(spec.get("replicas", 1)) + surge),
        }
        replicaset = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{metadata['name']}-{hash_value}",
                "namespace": metadata["namespace"],
                "labels": dict(template["metadata"]["labels"]),
                "annotations": annotations,
                "ownerReferences": [controller_reference(deployment)],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                "selector": selector,
                "template": template,
            },
        }
        try:
            created = self._owned.note(
                self._api.create("apps", "replicasets", metadata["namespace"], replicaset)
            )
        except ApiError as err:
            if err.code != 409:
                raise
            existing = self._store.get(key_of(REPLICASETS_PREFIX, replicaset))
            if (
                existing is not None
                and controller_uid(existing) == metadata["uid"]
                and same_template(_template(existing), template)
            ):
                # Ours, created by an earlier pass whose event has not arrived yet.
                return existing
            # A foreign set holds the name: hash again with the next collision count.
            status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
            self._api.update_status(key_of(DEPLOYMENTS_PREFIX, deployment), {**deployment, "status": status})
            raise
        if replicas > 0:
            message = f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas}"
            self._event(deployment, "ScalingReplicaSet", message)
        _set_condition(
            status,
            "Progressing",
            "True",
            "NewReplicaSetCreated",
            f'Created new replica set "{created["metadata"]["name"]}"',
            now,
        )
        return created

    def _found(
        self,
        deployment: dict[str, Any],
        new: dict[str, Any],
        olds: list[dict[str, Any]],
        status: dict[str, Any],
        now: datetime.datetime,
    ) -> dict[str, Any]:
        """Brings the existing new set's revision past every old one's (after an undo, say)."""
        if find_condition(status.get("conditions") or [], "Progressing") is None and _has_deadline(
            deployment
        ):
            _set_condition(
                status,
                "Progressing",
                "True",
                "FoundNewReplicaSet",
                f'Found new replica set "{new["metadata"]["name"]}"',
                now,
            )
        wanted = max(_next_revision(olds), revision_of(new))
        min_ready = int(deployment["spec"].get("minReadySeconds") or 0)
        if revision_of(new) == wanted and int(new["spec"].get("minReadySeconds") or 0) == min_ready:
            return new
        updated = copy.deepcopy(new)
        updated["metadata"].setdefault("annotations", {})[REVISION] = str(wanted)
        updated["spec"]["minReadySeconds"] = min_ready
        return self._api.update(key_of(REPLICASETS_PREFIX, new), updated)

    def _scale(
        self, deployment: dict[str, Any], replicaset: dict[str, Any], replicas: int, max_replicas: int
    ) -> dict[str, Any]:
        updated = copy.deepcopy(replicaset)
        before = int(updated["spec"].get("replicas", 0))
        updated["spec"]["replicas"] = replicas
        annotations = updated["metadata"].setdefault("annotations", {})
        annotations[DESIRED_REPLICAS] = str(deployment["spec"].get("replicas", 1))
        annotations[MAX_REPLICAS] = str(max_replicas)
        scaled = self._api.update(key_of(REPLICASETS_PREFIX, replicaset), updated)
        if before != replicas:
            direction = "up" if replicas > before else "down"
            message = (
                f"Scaled {direction} replica set {replicaset['metadata']['name']} from {before} to {replicas}"
            )
            self._event(deployment, "ScalingReplicaSet", message)
        return scaled

    def _clean_history(self, deployment: dict[str, Any], olds: list[dict[str, Any]]) -> None:
        limit = deployment["spec"].get("revisionHistoryLimit")
        if limit is None:
            return
        idle = [
            old
            for old in olds
            # As upstream: no replicas wanted and none active (what the status counts, too).
            if not int(old["spec"].get("replicas", 0))
            and not any(podstate.active(pod) for pod in self._pods.owned(old["metadata"]["uid"]))
        ]
        idle.sort(key=revision_of)
        for old in idle[: max(len(idle) - int(limit), 0)]:
            self._api.delete(key_of(REPLICASETS_PREFIX, old))

    # -- status ---------------------------------------------------------------------------------------

    def _write_status(
        self,
        key: str,
        deployment: dict[str, Any],
        new: dict[str, Any] | None,
        olds: list[dict[str, Any]],
        unavailable: int,
        status: dict[str, Any],
        now: datetime.datetime,
    ) -> float | None:
        spec = deployment["spec"]
        desired = int(spec.get("replicas", 1))
        min_ready = int(spec.get("minReadySeconds") or 0)
        pods = {
            uid: [p for p in self._pods.owned(uid) if podstate.active(p)]
            for uid in (s["metadata"]["uid"] for s in ([new] if new else []) + olds)
        }
        everyone = [pod for group in pods.values() for pod in group]
        waits = [podstate.available_in(pod, min_ready, now) for pod in everyone]
        available = sum(1 for wait in waits if wait == 0.0)
        previous = deployment.get("status") or {}
        status.update(
            observedGeneration=deployment["metadata"].get("generation", 1),
            replicas=len(everyone),
            updatedReplicas=len(pods[new["metadata"]["uid"]]) if new else 0,
            readyReplicas=sum(1 for pod in everyone if podstate.ready(pod)),
            availableReplicas=available,
            unavailableReplicas=max(desired - available, 0),
        )
        if available >= desired - unavailable:
            _set_condition(
                status,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                now,
            )
        else:
            _set_condition(
                status,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                now,
            )
        recheck = self._progress(deployment, new, previous, status, now)
        pending = [wait for wait in waits if wait]
        if pending:
            recheck = min(pending + ([recheck] if recheck is not None else []))
        status = compact(status)
        if status != previous:
            self._api.update_status(key, {**deployment, "status": status})
        if new is not None and _annotation(deployment, REVISION) != _annotation(new, REVISION):
            fresh = self._store.get(key)
            if fresh is not None:
                fresh["metadata"].setdefault("annotations", {})[REVISION] = _annotation(new, REVISION)
                self._api.update(key, fresh)
        return recheck

    def _progress(
        self,
        deployment: dict[str, Any],
        new: dict[str, Any] | None,
        previous: dict[str, Any],
        status: dict[str, Any],
        now: datetime.datetime,
    ) -> float | None:
        """Sets `Progressing` as upstream's `syncRolloutStatus` does; returns when the deadline falls."""
        spec = deployment["spec"]
        if spec.get("paused"):
            _set_condition(status, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", now)
            return None
        current = find_condition(status.get("conditions") or [], "Progressing")
        if current is not None and current.get("reason") == "DeploymentPaused":
            _set_condition(
                status, "Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed", now
            )
            current = find_condition(status.get("conditions") or [], "Progressing")
        if not _has_deadline(deployment):
            status["conditions"] = [c for c in status.get("conditions") or [] if c["type"] != "Progressing"]
            return None
        desired = int(spec.get("replicas", 1))
        name = new["metadata"]["name"] if new else ""
        complete = status["updatedReplicas"] == status["replicas"] == status["availableReplicas"] == desired
        if complete and new is not None:
            _set_condition(
                status,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{name}" has successfully progressed.',
                now,
            )
            return None
        progressed = (
            status["updatedReplicas"] > int(previous.get("updatedReplicas") or 0)
            or status["replicas"] - status["updatedReplicas"]
            < int(previous.get("replicas") or 0) - int(previous.get("updatedReplicas") or 0)
            or status["readyReplicas"] > int(previous.get("readyReplicas") or 0)
            or status["availableReplicas"] > int(previous.get("availableReplicas") or 0)
        )
        if progressed:
            message = (
                f'ReplicaSet "{name}" is progressing.'
                if new
                else f'Deployment "{deployment["metadata"]["name"]}" is progressing.'
            )
            _set_condition(status, "Progressing", "True", "ReplicaSetUpdated", message, now, touch=True)
        current = find_condition(status.get("conditions") or [], "Progressing")
        if current is None or current.get("reason") in ("NewReplicaSetAvailable", "ProgressDeadlineExceeded"):
            return None
        if current.get("status") != "True":
            return None
        deadline = times.parse_time(current["lastUpdateTime"]) + datetime.timedelta(
            seconds=int(spec["progressDeadlineSeconds"])
        )
        if now >= deadline:
            _set_condition(
                status,
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                f'ReplicaSet "{name}" has timed out progressing.',
                now,
            )
            return None
        return (deadline - now).total_seconds()


def _scaling_event(desired: int, sets: list[dict[str, Any]]) -> bool:
    """Whether an active set was last sized for another replica count than the Deployment's."""
    return any(
        int(s["spec"].get("replicas", 0)) and _annotation(s, DESIRED_REPLICAS) not in ("", str(desired))
        for s in sets
    )


def _max_replicas(replicaset: dict[str, Any]) -> int | None:
    text = _annotation(replicaset, MAX_REPLICAS)
    return int(text) if text.isdigit() else None


def _template(obj: dict[str, Any]) -> dict[str, Any]:
    return (obj.get("spec") or {}).get("template") or {}


def _annotation(obj: dict[str, Any], name: str) -> str:
    return str(((obj.get("metadata") or {}).get("annotations") or {}).get(name, ""))


def _annotation_surge(deployment: dict[str, Any]) -> int:
    spec = deployment["spec"]
    if (spec.get("strategy") or {}).get("type") == "Recreate":
        return 0
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    return fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), int(spec.get("replicas", 1)))[0]


def _oldest_first(sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        sets, key=lambda s: (str(s["metadata"].get("creationTimestamp") or ""), s["metadata"]["name"])
    )


def _next_revision(olds: list[dict[str, Any]]) -> int:
    return max((revision_of(old) for old in olds), default=0) + 1


def _has_deadline(deployment: dict[str, Any]) -> bool:
    return deployment["spec"].get("progressDeadlineSeconds") is not None


def _set_condition(
    status: dict[str, Any],
    kind: str,
    value: str,
    reason: str,
    message: str,
    now: datetime.datetime,
    *,
    touch: bool = False,
) -> None:
    """Upstream's `SetDeploymentCondition`: an unchanged status and reason is left alone (unless `touch`,
    which refreshes `lastUpdateTime` as progress does); a new status moves `lastTransitionTime`."""
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    existing = find_condition(status.get("conditions") or [], kind)
    if (
        existing is not None
        and existing.get("status") == value
        and existing.get("reason") == reason
        and not touch
    ):
        return
    moment = times.format_time(now)
    transition = transition_time(existing, value, moment)
    condition = {
        "type": kind,
        "status": value,
        "lastUpdateTime": moment,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }
    status["conditions"] = [c for c in conditions if c.get("type") != kind] + [condition]
