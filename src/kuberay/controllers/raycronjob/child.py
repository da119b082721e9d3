"""The RayJob a RayCronJob makes at a tick (upstream `constructRayJob`); pure.

Invariants:
- The name is `<cron>-<minutes since the Unix epoch of the tick>`: one name per tick, so creating the RayJob
  of a tick twice fails with AlreadyExists instead of running it twice (as batch/v1 CronJob names its Jobs).
  Two ticks within one minute (`@every 30s`) share a name, and the second is skipped, as upstream.
- Its only label is `ray.io/cronjob-name`, its only annotation `ray.io/cronjob-scheduled-timestamp` (the tick,
  UTC, RFC 3339): the template is a bare RayJobSpec, with no metadata of its own to copy.
- Its spec is the template, unchanged; the RayCronJob is its controller, so deleting the RayCronJob deletes
  its RayJobs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kuberay.api import constants
from kuberay.api.raycronjob import RayCronJob
from kuberay.builders import ownership
from kubesemantics import times


def name(cron_name: str, tick: datetime) -> str:
    return f"{cron_name}-{int(tick.timestamp()) // 60}"


def build_rayjob(cron: RayCronJob, tick: datetime) -> dict[str, Any]:
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "RayJob",
        "metadata": {
            "name": name(cron.name, tick),
            "namespace": cron.namespace,
            "labels": {constants.RAY_CRON_JOB_NAME_LABEL: cron.name},
            "annotations": {constants.RAY_CRON_JOB_TIMESTAMP_ANNOTATION: times.format_time(tick)},
            "ownerReferences": ownership.controlled_by(cron),
        },
        "spec": cron.spec.job_template.dump(),
    }
