"""The RayJob reconciler: gather the facts, let the state machine decide, perform, write status.

One pass (`reconcile(key)`):
1. Read the RayJob from the cache (gone: forget its poll and metric series). Read its RayCluster, the
   cluster's head Service and pods, the submitter Job or head pod from the caches, and the poller's latest
   answer for this attempt's job. Nothing here waits on Ray: the dashboard is only read through the poller.
2. `state.step` decides. Events it names are recorded first.
3. Perform its actions in order; the first failure fails the pass (back-off, no status write), after the
   Event upstream records for that failure.
4. If the decision says so, write the whole status through `/status` with the RayJob's resourceVersion (a
   conflict fails the pass and the next one re-reads), then record the execution-duration metric.

Reading the poller's answer ("Observe"), each action (its `Action` name) and the status write ("UpdateStatus")
are named steps (`kuberay.runtime.steps`), so a failure says which one failed.

The only dashboard call made inside a reconcile is StopJob while a RayJob is being deleted, bounded by the
client's short timeout, as upstream does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import yaml

from kuberay.api import constants
from kuberay.api.features import Feature
from kuberay.api.raycluster import RayCluster
from kuberay.api.rayjob import JobDeploymentStatus, JobSubmissionMode, RayJob, RayJobStatusDict
from kuberay.builders import service
from kuberay.builders import submitter as submitter_builder
from kuberay.controllers import writes
from kuberay.controllers.dashboards import DashboardAccess, auth_token, dashboard_address, head_service_name
from kuberay.controllers.podproblems import startup_problem
from kuberay.controllers.rayjob import cluster as rayjob_cluster
from kuberay.controllers.rayjob import submitter as submitter_facts
from kuberay.controllers.rayjob.decision import (
    Action,
    ClusterFacts,
    Decision,
    Facts,
    Observation,
    Settings,
    SubmitterFacts,
)
from kuberay.controllers.rayjob.metrics import RayJobMetrics
from kuberay.controllers.rayjob.poller import JobStatusPoller, PollTarget
from kuberay.controllers.rayjob.state import step
from kuberay.rayclient.dashboard import DashboardClient, DashboardError, JobSubmitRequest
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.controller import Result, TemporaryError
from kuberay.runtime.events import NORMAL, WARNING, Recorder
from kuberay.runtime.frozen import thaw
from kuberay.runtime.resources import JOB, ObjectKey
from kuberay.runtime.steps import step as named_step
from kuberay.schedulers.interface import BatchScheduler, BatchSchedulingError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Caches:
    rayjobs: Store
    clusters: Store
    pods: Store
    services: Store
    jobs: Store


@dataclass(frozen=True)
class Options:
    settings: Settings
    cluster_domain: str = constants.DEFAULT_CLUSTER_DOMAIN
    login_shell: bool = False
    cluster_ip_head_service: bool = False


class RayJobReconciler:
    def __init__(
        self,
        client: Client,
        caches: Caches,
        poller: JobStatusPoller,
        dashboard: DashboardAccess,
        options: Options,
        clock: Clock,
        recorder: Recorder | None = None,
        metrics: RayJobMetrics | None = None,
        rng: random.Random | None = None,
        scheduler: BatchScheduler | None = None,
    ) -> None:
        self.client = client
        self.caches = caches
        self.poller = poller
        self.dashboard = dashboard
        self.options = options
        self.clock = clock
        self.recorder = recorder
        self.metrics = metrics
        self.rng = rng or random.Random()
        self.scheduler = scheduler or BatchScheduler()

    async def reconcile(self, key: ObjectKey) -> Result:
        cached = self.caches.rayjobs.get(key)
        if cached is None:
            self.poller.forget(key)
            if self.metrics is not None:
                self.metrics.forget(key.name, key.namespace)
            return Result()
        obj: dict[str, Any] = thaw(cached)
        job = RayJob.parse(obj)
        pass_ = _Pass(self, key, obj, job)
        return await pass_.run()

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str, action: str) -> None:
        if self.recorder is not None:
            self.recorder.record(obj, type, reason, message, action)


class _Pass:
    """One reconcile of one RayJob: its facts, its decision, and the performing of it."""

    def __init__(self, owner: RayJobReconciler, key: ObjectKey, obj: dict[str, Any], job: RayJob) -> None:
        self.reconciler = owner
        self.key = key
        self.obj = obj
        self.job = job
        # The status as read (the decision's is the one written).
        self.status = cast(RayJobStatusDict, obj.get("status") or {})
        self.cluster_name: str = self.status.get("rayClusterName") or ""
        cached_cluster = (
            owner.caches.clusters.get(ObjectKey(key.namespace, self.cluster_name))
            if self.cluster_name
            else None
        )
        self.cluster: dict[str, Any] | None = thaw(cached_cluster) if cached_cluster is not None else None
        self.target: PollTarget | None = None
        self.target_error: DashboardError | None = None

    async def run(self) -> Result:
        now = self.reconciler.clock.now()
        cluster, submitter = self._cluster_facts(), self._submitter_facts()
        with named_step("Observe"):
            observation = await self._observation()
        facts = Facts(now, cluster=cluster, submitter=submitter, observation=observation)
        decision = step(self.job, facts, self.reconciler.options.settings, self.reconciler.rng)
        for note in decision.events:
            self.reconciler.event(self.obj, note.type, note.reason, note.message, note.action)
        for action in decision.actions:
            with named_step(action.value):
                await self._perform(action, decision)
        if decision.error is not None:
            raise TemporaryError(decision.error)
        if decision.write:
            with named_step("UpdateStatus"):
                await self._write_status(decision.status)
            before = self.status.get("jobDeploymentStatus") or "New"
            after = decision.status.get("jobDeploymentStatus") or "New"
            if before != after:
                log.info(
                    "RayJob %s: %s -> %s (jobStatus %r, reason %r)",
                    self.key,
                    before,
                    after,
                    decision.status.get("jobStatus") or "",
                    decision.status.get("reason") or "",
                )
            if self.reconciler.metrics is not None:
                self.reconciler.metrics.observe_transition(self.obj, self.status, decision.status, now)
        if decision.requeue_after is None:
            return Result()
        return Result(requeue_after=decision.requeue_after)

    # --- facts --------------------------------------------------------------------------------------------

    def _cluster_facts(self) -> ClusterFacts:
        cluster = self.cluster
        if cluster is None:
            return ClusterFacts(exists=False)
        status = cluster.get("status") or {}
        caches = self.reconciler.caches
        svc = caches.services.get(ObjectKey(self.key.namespace, head_service_name(cluster)))
        address = dashboard_address(svc, self.reconciler.options.cluster_domain)
        pods = caches.pods.list(self.key.namespace, {constants.RAY_CLUSTER_LABEL: self.cluster_name})
        return ClusterFacts(
            exists=True,
            deleting=bool(cluster["metadata"].get("deletionTimestamp")),
            status=status,
            dashboard_address=address,
            workers_suspended=rayjob_cluster.workers_suspended(cluster),
            problem=startup_problem(pods),
            live_heads=frozenset(
                pod["metadata"]["name"]
                for pod in pods
                if (pod["metadata"].get("labels") or {}).get(constants.RAY_NODE_TYPE_LABEL)
                == constants.HEAD_NODE
                and not pod["metadata"].get("deletionTimestamp")
            ),
        )

    def _submitter_facts(self) -> SubmitterFacts:
        mode = self.job.spec.submission_mode
        if mode == JobSubmissionMode.K8S_JOB_MODE:
            return submitter_facts.from_job(self.reconciler.caches.jobs.get(self.key))
        if mode == JobSubmissionMode.SIDECAR_MODE and self.cluster is not None:
            heads = self.reconciler.caches.pods.list(
                self.key.namespace,
                {
                    constants.RAY_CLUSTER_LABEL: self.cluster_name,
                    constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE,
                },
            )
            try:
                return submitter_facts.from_head_pods(
                    heads,
                    restart_gate=self.reconciler.options.settings.gates.enabled(
                        Feature.SIDECAR_SUBMITTER_RESTART
                    ),
                )
            except submitter_facts.SubmitterInspectionError as e:
                raise TemporaryError(str(e)) from e
        return SubmitterFacts()

    async def _observation(self) -> Observation | None:
        status = self.status
        if status.get("jobDeploymentStatus") != JobDeploymentStatus.RUNNING or not status.get("dashboardURL"):
            return None
        if not status.get("jobId"):
            return None
        try:
            self.target = await self._poll_target(status)
        except DashboardError as e:
            self.target_error = e
            return Observation(error=e)
        return self.reconciler.poller.latest(self.key, self.target)

    async def _poll_target(self, status: RayJobStatusDict) -> PollTarget:
        job = self.job
        base_url = self.reconciler.dashboard.base_url(
            self.key.namespace, status["dashboardURL"], self.cluster
        )
        submit = None
        if job.spec.submission_mode == JobSubmissionMode.HTTP_MODE:
            submit = submission_request(job, status["jobId"])
        return PollTarget(base_url, status["jobId"], await self._auth_token(), submit)

    async def _auth_token(self) -> str | None:
        return await auth_token(self.reconciler.client, self.cluster)

    # --- actions ------------------------------------------------------------------------------------------

    async def _perform(self, action: Action, decision: Decision) -> None:
        handler = {
            Action.ADD_FINALIZER: self._add_finalizer,
            Action.REMOVE_FINALIZER: self._remove_finalizer,
            Action.STOP_JOB: self._stop_job,
            Action.CREATE_CLUSTER: self._create_cluster,
            Action.CREATE_SUBMITTER: self._create_submitter,
            Action.RECONCILE_HEAD_SERVICE: self._reconcile_head_service,
            Action.POLL: self._poll,
            Action.STOP_POLLING: self._stop_polling,
            Action.DELETE_CLUSTER: self._delete_cluster,
            Action.DELETE_SUBMITTER: self._delete_submitter,
            Action.SUSPEND_WORKERS: self._suspend_workers,
            Action.DELETE_SELF: self._delete_self,
            Action.BATCH_SCHEDULE: self._batch_schedule,
            Action.CLEANUP_BATCH_SCHEDULER: self._cleanup_batch_scheduler,
        }[action]
        await handler(decision)

    async def _add_finalizer(self, decision: Decision) -> None:
        metadata = self.obj["metadata"]
        metadata["finalizers"] = [*(metadata.get("finalizers") or []), constants.RAY_JOB_STOP_JOB_FINALIZER]
        updated = await self.reconciler.client.update(RAYJOB, self.obj)
        metadata["resourceVersion"] = updated["metadata"]["resourceVersion"]

    async def _remove_finalizer(self, decision: Decision) -> None:
        metadata = self.obj["metadata"]
        finalizers = [
            f for f in metadata.get("finalizers") or [] if f != constants.RAY_JOB_STOP_JOB_FINALIZER
        ]
        if finalizers == (metadata.get("finalizers") or []):
            return
        metadata["finalizers"] = finalizers
        with contextlib.suppress(errors.NotFoundError):
            await self.reconciler.client.update(RAYJOB, self.obj)

    async def _stop_job(self, decision: Decision) -> None:
        status = self.status
        if not status.get("dashboardURL") or not status.get("jobId"):
            return  # nothing was ever submitted to a dashboard
        try:
            base_url = self.reconciler.dashboard.base_url(
                self.key.namespace, status["dashboardURL"], self.cluster
            )
            client = DashboardClient(self.reconciler.dashboard.http, base_url, token=await self._auth_token())
            await client.stop_job(status["jobId"])
        except DashboardError as e:
            log.warning("failed to stop Ray job %s of RayJob %s: %s", status.get("jobId"), self.key, e)

    async def _recorded(
        self,
        write: Callable[[], Awaitable[object]],
        action: str,
        done: tuple[str, str],
        failed: tuple[str, str],
        *,
        already: type[errors.KubeError] | None = None,
        failures: tuple[type[Exception], ...] = (errors.KubeError,),
        temporary: str = "",
    ) -> None:
        """`writes.recorded` for the RayJob; a failure is re-raised as a TemporaryError with `temporary`
        when given."""
        try:
            await writes.recorded(
                write, self._event, action, done, failed, already=already, failures=failures
            )
        except failures as e:
            if temporary:
                raise TemporaryError(f"{temporary}: {e}") from e
            raise

    def _event(self, type: str, reason: str, message: str, action: str) -> None:
        self.reconciler.event(self.obj, type, reason, message, action)

    async def _create_cluster(self, decision: Decision) -> None:
        name = decision.status.get("rayClusterName") or ""
        ns = self.key.namespace

        async def create() -> None:
            body = rayjob_cluster.build_cluster(
                self.job,
                name,
                self.reconciler.options.settings.gates,
                login_shell=self.reconciler.options.login_shell,
            )
            if self.job.spec.submission_mode == JobSubmissionMode.K8S_JOB_MODE:
                # Only in K8sJobMode (upstream's rule): the submitter joins the cluster's gang.
                self.reconciler.scheduler.add_metadata_to_child_resource(self.obj, body, "")
            await self.reconciler.client.create(RAYCLUSTER, body)

        await self._recorded(
            create,
            "Create",
            ("CreatedRayCluster", f"Created RayCluster {ns}/{name}"),
            ("FailedToCreateRayCluster", f"Failed to create RayCluster {ns}/{name}: {{error}}"),
            already=errors.AlreadyExistsError,
            failures=(errors.KubeError, submitter_builder.SubmitterError, ValueError),
            temporary=f"failed to create RayCluster {ns}/{name}",
        )

    def _cluster_model(self) -> RayCluster:
        if self.cluster is None:
            raise TemporaryError(
                f"RayCluster {self.key.namespace}/{self.cluster_name} is not in the cache yet"
            )
        return RayCluster.parse(self.cluster)

    async def _create_submitter(self, decision: Decision) -> None:
        ns, name = self.key
        job = RayJob.parse({**self.obj, "status": decision.status})

        async def create() -> None:
            body = submitter_builder.build_submitter_job(
                job,
                self._cluster_model(),
                self.reconciler.options.settings.gates,
                login_shell=self.reconciler.options.login_shell,
            )
            self.reconciler.scheduler.add_metadata_to_child_resource(
                self.obj, body["spec"]["template"], constants.SUBMITTER_GROUP_NAME
            )
            await self.reconciler.client.create(JOB, body)

        await self._recorded(
            create,
            "Create",
            ("CreatedRayJobSubmitter", f"Created Kubernetes Job {ns}/{name}"),
            ("FailedToCreateRayJobSubmitter", f"Failed to create new Kubernetes Job {ns}/{name}: {{error}}"),
            already=errors.AlreadyExistsError,
            failures=(errors.KubeError, submitter_builder.SubmitterError),
            temporary=f"failed to create the submitter Job {ns}/{name}",
        )

    async def _reconcile_head_service(self, decision: Decision) -> None:
        desired = service.build_head_service_for_owner(
            self.job,
            self._cluster_model(),
            cluster_ip_service=self.reconciler.options.cluster_ip_head_service,
        )
        await writes.reconcile_service(
            self.reconciler.client, self.reconciler.caches.services, desired, self._event
        )

    async def _poll(self, decision: Decision) -> None:
        if self.target is not None:
            self.reconciler.poller.watch(self.key, self.target)

    async def _stop_polling(self, decision: Decision) -> None:
        self.reconciler.poller.forget(self.key)

    async def _delete_cluster(self, decision: Decision) -> None:
        ns, name = self.key.namespace, self.cluster_name
        await self._recorded(
            lambda: self.reconciler.client.delete(RAYCLUSTER, name, ns),
            "Delete",
            ("DeletedRayCluster", f"Deleted cluster {ns}/{name}"),
            ("FailedToDeleteRayCluster", f"Failed to delete cluster {ns}/{name}: {{error}}"),
            already=errors.NotFoundError,
        )

    async def _delete_submitter(self, decision: Decision) -> None:
        ns, name = self.key
        await self._recorded(
            lambda: self.reconciler.client.delete(JOB, name, ns, propagation_policy="Background"),
            "Delete",
            ("DeletedRayJobSubmitter", f"Deleted submitter K8s Job {ns}/{name}"),
            ("FailedToDeleteRayJobSubmitter", f"Failed to delete submitter K8s Job {ns}/{name}: {{error}}"),
            already=errors.NotFoundError,
        )

    async def _suspend_workers(self, decision: Decision) -> None:
        ns, name = self.key.namespace, self.cluster_name

        async def suspend() -> None:
            cluster = await self.reconciler.client.get(RAYCLUSTER, name, ns)
            for group in (cluster.get("spec") or {}).get("workerGroupSpecs") or []:
                group["suspend"] = True
            await self.reconciler.client.update(RAYCLUSTER, cluster)

        await self._recorded(
            suspend,
            "Update",
            (
                "UpdatedRayCluster",
                f"Set the `suspend` field to true for all worker groups in cluster {ns}/{name}",
            ),
            (
                "FailedToUpdateRayCluster",
                f"Failed to suspend worker groups in cluster {ns}/{name}: {{error}}",
            ),
        )

    async def _batch_schedule(self, decision: Decision) -> None:
        try:
            await self.reconciler.scheduler.do_batch_scheduling_on_submission(self.obj)
        except (BatchSchedulingError, errors.KubeError) as e:
            raise TemporaryError(str(e)) from e

    async def _cleanup_batch_scheduler(self, decision: Decision) -> None:
        """upstream `cleanupBatchSchedulerResources`, with its Events; a failure fails the pass unless the
        job has finished (then it is only logged, as upstream's deferred call does)."""
        ns, name = self.key
        try:
            cleaned = await self.reconciler.scheduler.cleanup_on_completion(self.obj)
        except (BatchSchedulingError, errors.KubeError) as e:
            self._event(
                WARNING,
                "FailedToCleanupBatchScheduler",
                f"Failed to cleanup batch scheduler resources for RayJob {ns}/{name}: {e}",
                "Cleanup",
            )
            if decision.status.get("jobDeploymentStatus") in (
                JobDeploymentStatus.COMPLETE,
                JobDeploymentStatus.FAILED,
            ):
                log.error("Failed to cleanup batch scheduler resources for RayJob %s: %s", self.key, e)
                return
            raise TemporaryError(f"failed to cleanup batch scheduler resources: {e}") from e
        if cleaned:
            self._event(
                NORMAL,
                "BatchSchedulerCleanedUp",
                f"Cleaned up batch scheduler resources for RayJob {ns}/{name}",
                "Cleanup",
            )

    async def _delete_self(self, decision: Decision) -> None:
        with contextlib.suppress(errors.NotFoundError):
            await self.reconciler.client.delete(RAYJOB, self.key.name, self.key.namespace)

    async def _write_status(self, status: RayJobStatusDict) -> None:
        body = {**self.obj, "status": status}
        await self.reconciler.client.update_status(RAYJOB, body)


def submission_request(job: RayJob, job_id: str) -> JobSubmitRequest:
    """The HTTPMode `POST /api/jobs/` body (upstream `ConvertRayJobToReq`); a bad runtime env or resources
    string is a DashboardError, as upstream's submission error is."""
    spec = job.spec
    runtime_env = None
    if spec.runtime_env_yaml:
        try:
            runtime_env = yaml.safe_load(spec.runtime_env_yaml)
        except yaml.YAMLError as e:
            raise DashboardError(f"failed to unmarshal runtimeEnvYAML: {e}") from e
    resources = None
    if spec.entrypoint_resources:
        try:
            parsed = json.loads(spec.entrypoint_resources)
            resources = {name: float(value) for name, value in parsed.items()}
        except (ValueError, TypeError, AttributeError) as e:
            raise DashboardError(
                f"json: cannot unmarshal entrypointResources {spec.entrypoint_resources!r}: {e}"
            ) from e
    return JobSubmitRequest(
        entrypoint=spec.entrypoint or "",
        submission_id=job_id,
        runtime_env=runtime_env or None,
        metadata=spec.metadata or None,
        entrypoint_resources=resources,
        entrypoint_num_cpus=spec.entrypoint_num_cpus or 0.0,
        entrypoint_num_gpus=spec.entrypoint_num_gpus or 0.0,
    )
