"""The RayJob of a tick: its name, label, annotation, owner and spec."""

from __future__ import annotations

from datetime import UTC, datetime

from kuberay.api.raycronjob import RayCronJob
from kuberay.controllers.raycronjob import child


def test_the_rayjob_of_a_tick() -> None:
    template = {"entrypoint": "python -c 'print(1)'", "shutdownAfterJobFinishes": True,
                "rayClusterSpec": {"headGroupSpec": {"template": {"spec": {"containers": []}}}}}  # fmt: skip
    cron = RayCronJob.parse({
        "apiVersion": "ray.io/v1", "kind": "RayCronJob",
        "metadata": {"name": "nightly", "namespace": "ns", "uid": "u-1", "labels": {"team": "a"}},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": template},
    })  # fmt: skip
    tick = datetime(2024, 1, 1, 0, 5, tzinfo=UTC)  # 1704067200 s is 2024-01-01T00:00Z: minute 28401120
    job = child.build_rayjob(cron, tick)
    assert job["metadata"] == {
        "name": "nightly-28401125",
        "namespace": "ns",
        "labels": {"ray.io/cronjob-name": "nightly"},
        "annotations": {"ray.io/cronjob-scheduled-timestamp": "2024-01-01T00:05:00Z"},
        "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCronJob", "name": "nightly", "uid": "u-1",
                             "controller": True, "blockOwnerDeletion": True}],
    }  # fmt: skip
    assert job["spec"] == template
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")


def test_ticks_in_one_minute_share_a_name() -> None:
    first = datetime(2024, 1, 1, 0, 5, 0, tzinfo=UTC)
    assert (
        child.name("c", first)
        == child.name("c", first.replace(second=59))
        != child.name("c", first.replace(minute=6))
    )
