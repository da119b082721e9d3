"""The ray.io/v1 RayCronJob (feature gate `RayCronJob`): a cron schedule that creates a RayJob from
`jobTemplate` (a full `RayJobSpec`) at each tick.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from kuberay.api.base import KubeModel, OpenAPI, Time
from kuberay.api.meta import KubeObject
from kuberay.api.rayjob import RayJobSpec


class RayCronJobSpec(KubeModel):
    job_template: RayJobSpec = Field(alias="jobTemplate")
    schedule: str  # standard 5-field cron, or an `@` descriptor
    time_zone: Annotated[str, OpenAPI({"minLength": 1})] | None = Field(default=None, alias="timeZone")
    suspend: bool | None = None


class RayCronJobStatus(KubeModel):
    last_schedule_time: Time | None = Field(default=None, alias="lastScheduleTime")


class RayCronJob(KubeObject):
    PLURAL: ClassVar[str] = "raycronjobs"

    kind: str = "RayCronJob"
    spec: RayCronJobSpec
    status: RayCronJobStatus | None = None
