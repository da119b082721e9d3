"""The batch/v1 Job controller: runs a Job's pods to completion or failure.

What it honours: `parallelism`, `completions` (unset with parallelism unset means 1; unset with
parallelism set means the first success completes the Job once nothing else runs), `backoffLimit`
(default 6; failed pods, plus container restarts of `OnFailure` pods, count as failures),
`activeDeadlineSeconds`, `suspend`, `ttlSecondsAfterFinished`. Status is written as a real Job
controller writes it: `active`, `ready`, `succeeded`, `failed`, `startTime`, `completionTime`, and the
terminal conditions in pairs (`SuccessCriteriaMet` + `Complete`, `FailureTarget` + `Failed`) with
upstream's reasons (`CompletionsReached`, `BackoffLimitExceeded`, `DeadlineExceeded`).

Pods are named `<job>-<random>`, labelled `batch.kubernetes.io/job-name` / `job-name` and
`batch.kubernetes.io/controller-uid` / `controller-uid`, and owned by the Job (controller, blocking
owner deletion), so deleting the Job deletes them. Counts come from the pods that exist: a terminated pod
deleted by hand is no longer counted. A finished Job deletes its remaining active pods.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Iterable
from typing import Any

from kubesemantics import times
from kubesemantics.conditions import find_condition
from localkube.controllers import podstate
from localkube.controllers.api import ControllerApi
from localkube.controllers.ownership import pod_from_template
from localkube.storage import Event, Store

JOBS_PREFIX = "/registry/batch/jobs/"
PODS_PREFIX = "/registry/core/pods/"
DEFAULT_BACKOFF_LIMIT = 6


class JobController:
    name = "job-controller"
    prefixes = (JOBS_PREFIX, PODS_PREFIX)

    def __init__(
        self, store: Store, api: ControllerApi, clock: Callable[[], datetime.datetime] = podstate.now
    ) -> None:
        self._store = store
        self._api = api
        self._clock = clock
        self._job_key: dict[str, str] = {}  # job uid -> key
        self._pods: dict[str, set[str]] = {}  # job uid -> pod keys

    def observe(self, event: Event) -> Iterable[str]:
        metadata = event.object.get("metadata") or {}
        if event.key.startswith(JOBS_PREFIX):
            if event.type == "DELETED":
                self._job_key.pop(metadata.get("uid", ""), None)
                return []
            self._job_key[metadata["uid"]] = event.key
            return [event.key]
        owner = next(
            (
                r["uid"]
                for r in metadata.get("ownerReferences") or []
                if r.get("kind") == "Job" and r.get("controller")
            ),
            None,
        )
        if owner is None:
            return []
        pods = self._pods.setdefault(owner, set())
        if event.type == "DELETED":
            pods.discard(event.key)
        else:
            pods.add(event.key)
        job_key = self._job_key.get(owner)
        return [job_key] if job_key else []

    def reconcile(self, key: str) -> float | None:
        job = self._store.get(key)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return None
        spec, status = job.get("spec") or {}, copy.deepcopy(job.get("status") or {})
        now = self._clock()
        if _finished(status):
            return self._expire(key, job, status, now)
        pods = [
            p for p in (self._store.get(k) for k in sorted(self._pods.get(job["metadata"]["uid"], ()))) if p
        ]
        active = [p for p in pods if podstate.active(p)]
        succeeded = sum(1 for p in pods if podstate.phase(p) == "Succeeded")
        failed = sum(1 for p in pods if podstate.phase(p) == "Failed")
        if (spec.get("template", {}).get("spec") or {}).get("restartPolicy") == "OnFailure":
            failed += sum(podstate.restarts(p) for p in active)
        recheck: float | None = None
        if spec.get("suspend"):
            self._delete_all(active)
            active = []
            _set_condition(status, "Suspended", "True", "JobSuspended", "Job suspended", now)
        else:
            _set_condition(
                status, "Suspended", "False", "JobResumed", "Job resumed", now, only_if_present=True
            )
            status.setdefault("startTime", times.format_time(now))
            completions = spec.get("completions", None if "parallelism" in spec else 1)
            deadline = spec.get("activeDeadlineSeconds")
            elapsed = (now - times.parse_time(status["startTime"])).total_seconds()
            if failed > spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT):
                self._delete_all(active)
                active = []
                _fail(status, "BackoffLimitExceeded", "Job has reached the specified backoff limit", now)
            elif deadline is not None and elapsed >= deadline:
                self._delete_all(active)
                active = []
                _fail(status, "DeadlineExceeded", "Job was active longer than specified deadline", now)
            elif (completions is not None and succeeded >= completions) or (
                completions is None and succeeded and not active
            ):
                self._delete_all(active)
                active = []
                _complete(status, now)
            else:
                parallelism = spec.get("parallelism", 1)
                wanted = parallelism if completions is None else min(parallelism, completions - succeeded)
                for _ in range(wanted - len(active)):
                    active.append(self._create_pod(job))
                if deadline is not None:
                    recheck = deadline - elapsed
        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if podstate.ready(p))
        status["succeeded"] = succeeded
        status["failed"] = failed
        for field in ("active", "succeeded", "failed"):
            if not status[field]:
                del status[field]
        if status != (job.get("status") or {}):
            self._api.update_status(key, {**job, "status": status})
        if _finished(status):
            return self._expire(key, job, status, now)
        return recheck

    def _expire(
        self, key: str, job: dict[str, Any], status: dict[str, Any], now: datetime.datetime
    ) -> float | None:
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return None
        finished = times.parse_time(
            next(c["lastTransitionTime"] for c in status["conditions"] if c["type"] in ("Complete", "Failed"))
        )
        remaining = (finished - now).total_seconds() + float(ttl)
        if remaining > 0:
            return remaining
        self._api.delete(key, "Background")
        return None

    def _create_pod(self, job: dict[str, Any]) -> dict[str, Any]:
        metadata = job["metadata"]
        identity = {
            "batch.kubernetes.io/controller-uid": metadata["uid"],
            "batch.kubernetes.io/job-name": metadata["name"],
            "controller-uid": metadata["uid"],
            "job-name": metadata["name"],
        }
        return self._api.create("", "pods", metadata["namespace"], pod_from_template(job, labels=identity))

    def _delete_all(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            self._api.delete(f"{PODS_PREFIX}{pod['metadata']['namespace']}/{pod['metadata']['name']}")


def _finished(status: dict[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _set_condition(
    status: dict[str, Any],
    kind: str,
    value: str,
    reason: str,
    message: str,
    now: datetime.datetime,
    *,
    only_if_present: bool = False,
) -> None:
    conditions = status.setdefault("conditions", [])
    existing = find_condition(conditions, kind)
    if existing is None:
        if only_if_present:
            if not conditions:
                del status["conditions"]
            return
        existing = {"type": kind}
        conditions.append(existing)
    elif existing.get("status") == value:
        return
    moment = times.format_time(now)
    existing.update(
        status=value, reason=reason, message=message, lastProbeTime=moment, lastTransitionTime=moment
    )


def _complete(status: dict[str, Any], now: datetime.datetime) -> None:
    message = "Reached expected number of succeeded pods"
    _set_condition(status, "SuccessCriteriaMet", "True", "CompletionsReached", message, now)
    _set_condition(status, "Complete", "True", "CompletionsReached", message, now)
    status["completionTime"] = times.format_time(now)


def _fail(status: dict[str, Any], reason: str, message: str, now: datetime.datetime) -> None:
    _set_condition(status, "FailureTarget", "True", reason, message, now)
    _set_condition(status, "Failed", "True", reason, message, now)
