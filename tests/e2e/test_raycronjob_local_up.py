"""examples/ray-cronjob.yaml the README's way: `KUBERAY_FEATURE_RAYCRONJOB=true kuberay local up` (simulate
mode; the gate from the environment, `--feature-gates` being the integration tier's), `kubectl apply`, and
RayJobs appear on a real clock. The example runs every five minutes; the test moves its schedule to
`@every 5s` with `kubectl patch`, as a user trying it out would, rather than wait. A gate variable naming no
gate, or holding neither true nor false, stops `kuberay local up` with exit 2 and one line."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from support.eventually import eventually
from support.local_instance import EXAMPLES, KUBECTL_POLL, KUBERAY, LocalInstance

NAME = "every-five-minutes"


def minutes(moment: datetime) -> int:
    return int(moment.timestamp()) // 60


def test_the_cronjob_example_makes_rayjobs_with_the_gate_on(tmp_path: Path) -> None:
    with LocalInstance(tmp_path / "cron", "--port", "0", env={"KUBERAY_FEATURE_RAYCRONJOB": "true"}) as local:
        ns = local.namespace("cron")
        local.kubectl("apply", "-n", ns, "-f", str(EXAMPLES / "ray-cronjob.yaml"))
        local.kubectl("patch", "-n", ns, "raycronjob", NAME, "--type=merge",
                      "-p", '{"spec": {"schedule": "@every 5s"}}')  # fmt: skip
        created = datetime.fromisoformat(local.get("raycronjob", NAME, ns)["metadata"]["creationTimestamp"])

        def scheduled_twice() -> datetime | None:
            last = local.get("raycronjob", NAME, ns).get("status", {}).get("lastScheduleTime")
            moment = datetime.fromisoformat(last) if last else None
            return moment if moment is not None and moment >= created + timedelta(seconds=10) else None

        last = eventually(scheduled_twice, 90, "two ticks of the RayCronJob", every=KUBECTL_POLL)
        out = local.kubectl("get", "rayjobs", "-n", ns, "-l", f"ray.io/cronjob-name={NAME}", "-o", "json")
        jobs: list[dict[str, Any]] = json.loads(out)["items"]
        # Ticks come 5 s apart (from the creation time, or from a */5 tick that came before the patch); ticks
        # within one minute share a RayJob name, and the later ones find it made (AlreadyExists), as upstream.
        stamps = sorted(
            datetime.fromisoformat(job["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"])
            for job in jobs
        )
        assert created < stamps[0] <= last
        ticks = [
            stamps[0] + timedelta(seconds=5 * k)
            for k in range(int((last - stamps[0]).total_seconds()) // 5 + 1)
        ]
        assert {f"{NAME}-{minutes(tick)}" for tick in ticks} <= {job["metadata"]["name"] for job in jobs}
        for job, stamp in zip(sorted(jobs, key=lambda j: j["metadata"]["name"]), stamps, strict=True):
            assert (stamp - stamps[0]).total_seconds() % 5 == 0
            assert job["metadata"]["name"] == f"{NAME}-{minutes(stamp)}"
            assert job["metadata"]["ownerReferences"][0]["name"] == NAME
        assert "@every 5s" in local.kubectl("get", "raycronjob", NAME, "-n", ns)
        warnings = local.kubectl("get", "events", "-n", ns, "--field-selector", "reason=NoController")
        assert "NoController" not in warnings


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("KUBERAY_FEATURE_NOSUCHGATE", "true", "unrecognized feature gate: NOSUCHGATE"),
        ("KUBERAY_FEATURE_RAYCRONJOB", "maybe", 'strconv.ParseBool: parsing "maybe": invalid syntax'),
    ],
)
def test_a_bad_gate_variable_stops_local_up_with_one_line(tmp_path: Path, variable: str, value: str, reason: str) -> None:  # fmt: skip
    result = subprocess.run(
        [KUBERAY, "local", "up", "--port", "0", "--data-dir", str(tmp_path / "bad")],
        env={**os.environ, variable: value}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    [line] = (result.stdout + result.stderr).splitlines()
    assert variable in line and reason in line
