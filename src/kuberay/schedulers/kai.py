"""NVIDIA KAI scheduler (`kai-scheduler`, upstream's `KaiScheduler`): no objects of its own (KAI's pod-grouper
makes the PodGroups); pods are scheduled by `kai-scheduler` in the queue of the parent's `kai.scheduler/queue`
label. K8sJobMode RayJobs are refused: their submitter pod comes after the cluster, outside its gang.
"""

from __future__ import annotations

import logging
from typing import Any

from kuberay.api.rayjob import JobSubmissionMode
from kuberay.schedulers.interface import (
    BatchScheduler,
    BatchSchedulingError,
    Obj,
    copy_label,
    kind_of,
    name_of,
    set_scheduler_name,
)

log = logging.getLogger(__name__)

QUEUE_LABEL = "kai.scheduler/queue"


class Kai(BatchScheduler):
    name = "kai-scheduler"

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        mode = (obj.get("spec") or {}).get("submissionMode") or JobSubmissionMode.K8S_JOB_MODE
        if kind_of(obj) == "RayJob" and mode == JobSubmissionMode.K8S_JOB_MODE:
            raise BatchSchedulingError(
                "KAI-Scheduler does not support RayJob with K8sJobMode: the submitter pod is created after "
                "RayCluster is ready, preventing proper gang scheduling"
            )

    def add_metadata_to_child_resource(self, parent: Obj, child: dict[str, Any], group_name: str) -> None:
        set_scheduler_name(child, self.name)
        if not copy_label(parent, child, QUEUE_LABEL):
            log.info(
                "%s %s has no %s label: its pods will stay pending until they are given a queue",
                kind_of(parent),
                name_of(parent),
                QUEUE_LABEL,
            )
