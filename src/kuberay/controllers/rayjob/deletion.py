"""What happens to a finished RayJob's resources: upstream's three cleanup mechanisms, as a pure decision.

Precedence (upstream's): a clusterSelector job touches nothing; with gate `RayJobDeletionPolicy` and a
`deletionStrategy`, its `deletionRules` (rules mode) or its `onSuccess`/`onFailure` (legacy mode) decide;
otherwise `shutdownAfterJobFinishes` deletes the cluster (or the RayJob itself, under the operator setting
DELETE_RAYJOB_CR_AFTER_JOB_FINISHES) once `ttlSecondsAfterFinished` has passed. Every TTL counts from
`status.endTime`; a wait asks to be called again 2 s after the deadline.

Invariants: at most one policy runs per pass (rules mode picks the most destructive overdue rule, the
earliest in the list among equals); a rule whose effect is already visible is skipped, so passes repeat
nothing; legacy and shutdown modes repeat their deletion on every pass, as upstream does (a deletion of
something already being deleted is harmless).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from kuberay.api.rayjob import DeletionPolicyType, DeletionRule, JobStatus, RayJob

# How long after a TTL's deadline the next pass is asked for (upstream `requeueDelayFor`).
REQUEUE_SLACK_SECONDS = 2.0

# Upstream `selectMostImpactfulRule`.
_IMPACT: dict[str, int] = {"DeleteSelf": 4, "DeleteCluster": 3, "DeleteWorkers": 2, "DeleteNone": 1}


@dataclass(frozen=True)
class ClusterState:
    """What the cleanup needs to know of the job's RayCluster."""

    exists: bool
    deleting: bool = False
    workers_suspended: bool = False  # every worker group has `suspend: true`


@dataclass(frozen=True)
class Cleanup:
    """The policy to run now (if any) and when to look again (None: only on the next event)."""

    policy: DeletionPolicyType | None
    requeue_after: float | None


NOTHING = Cleanup(None, None)


def decide(
    job: RayJob,
    cluster: ClusterState,
    now: datetime,
    end_time: datetime,
    *,
    deletion_policy_gate: bool,
    delete_rayjob_after_job_finishes: bool,
) -> Cleanup:
    """The cleanup of a RayJob in `Complete` or `Failed` whose status says it ended at `end_time`."""
    spec = job.spec
    status = job.status
    if spec.cluster_selector:
        return NOTHING
    strategy = spec.deletion_strategy
    if deletion_policy_gate and strategy is not None:
        if strategy.deletion_rules is not None:
            return _rules(strategy.deletion_rules, job, cluster, now, end_time)
        job_status = (status.job_status if status else None) or ""
        if job_status == JobStatus.SUCCEEDED and strategy.on_success is not None:
            policy = strategy.on_success.policy
        elif job_status == JobStatus.FAILED and strategy.on_failure is not None:
            policy = strategy.on_failure.policy
        else:
            return NOTHING
        if policy is None or policy == "DeleteNone":
            return NOTHING
        return _after_ttl(policy, end_time + timedelta(seconds=spec.ttl_seconds_after_finished), now)
    if spec.shutdown_after_job_finishes:
        policy = "DeleteSelf" if delete_rayjob_after_job_finishes else "DeleteCluster"
        return _after_ttl(policy, end_time + timedelta(seconds=spec.ttl_seconds_after_finished), now)
    return NOTHING


def _after_ttl(policy: DeletionPolicyType, deadline: datetime, now: datetime) -> Cleanup:
    if deadline > now:
        return Cleanup(None, requeue_delay(deadline, now))
    return Cleanup(policy, None)


def requeue_delay(deadline: datetime, now: datetime) -> float:
    return (deadline - now).total_seconds() + REQUEUE_SLACK_SECONDS


def _rules(
    rules: list[DeletionRule], job: RayJob, cluster: ClusterState, now: datetime, end_time: datetime
) -> Cleanup:
    status = job.status
    job_status = (status.job_status if status else None) or ""
    deployment_status = (status.job_deployment_status if status else None) or ""
    overdue: list[DeletionRule] = []
    next_deadline: datetime | None = None
    for rule in rules:
        condition = rule.condition
        matched = (
            condition.job_status == job_status
            if condition.job_status is not None
            else condition.job_deployment_status == deployment_status
        )
        if not matched:
            continue
        deadline = end_time + timedelta(seconds=condition.ttl_seconds)
        if now < deadline:
            if next_deadline is None or deadline < next_deadline:
                next_deadline = deadline
            continue
        if not _already_done(rule.policy, cluster):
            overdue.append(rule)
    policy: DeletionPolicyType | None = None
    if overdue:
        policy = max(overdue, key=lambda rule: _IMPACT[rule.policy]).policy  # max keeps the first of equals
    requeue = requeue_delay(next_deadline, now) if next_deadline is not None else None
    return Cleanup(policy, requeue)


def _already_done(policy: DeletionPolicyType, cluster: ClusterState) -> bool:
    """Upstream `isDeletionActionCompleted`: whether the policy's effect is already visible."""
    if policy == "DeleteNone":
        return True
    if policy == "DeleteSelf":
        return False
    gone = not cluster.exists or cluster.deleting
    if policy == "DeleteCluster":
        return gone
    return gone or cluster.workers_suspended
