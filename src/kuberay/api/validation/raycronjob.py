"""RayCronJob rules: upstream's `ValidateRayCronJobSpec` (name length, schedule, time zone, and the RayJob
rules on `jobTemplate`). Upstream does not check the name against DNS rules, and neither does this."""

from __future__ import annotations

from kuberay.api import constants as c
from kuberay.api.features import FeatureGates
from kuberay.api.validation import cron, rayjob, wire
from kuberay.api.validation.field import Errors, FieldError
from kuberay.api.validation.wire import JSON
from kubesemantics import goparse


def cronjob(meta: JSON, spec: JSON, gates: FeatureGates) -> Errors:
    if len(wire.text(meta, "name").encode()) > c.MAX_RAY_CRON_JOB_NAME_LENGTH:
        yield FieldError(
            "metadata.name",
            f"RayCronJob name should be no more than {c.MAX_RAY_CRON_JOB_NAME_LENGTH} characters",
        )
    schedule = wire.text(spec, "schedule")
    if "TZ" in schedule:
        yield FieldError("spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    else:
        try:
            cron.check_standard(schedule)
        except cron.CronError as error:
            yield FieldError("spec.schedule", f"invalid cron schedule: {error}")
    if wire.has(spec, "timeZone"):
        zone = wire.text(spec, "timeZone")
        if not zone:
            yield FieldError(
                "spec.timeZone",
                "timeZone must not be empty string, omit the field to use the local time zone of the KubeRay operator",
            )
        else:
            try:
                goparse.load_location(zone)
            except goparse.GoParseError as error:
                yield FieldError("spec.timeZone", f"invalid time zone: {error}")
    # Upstream validates the template as a RayJob with empty metadata: no name, no annotations.
    for failure in rayjob.job_spec(wire.obj(spec, "jobTemplate"), {}, gates, "spec.jobTemplate"):
        yield failure.prefixed("invalid RayJob template: ")
