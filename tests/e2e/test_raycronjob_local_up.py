"""examples/ray-cronjob.yaml the README's way: `kuberay local up --feature-gates RayCronJob=true` (simulate
mode), `kubectl apply`, and RayJobs appear. The example runs every five minutes; the test moves its schedule
to `@every 5s` with `kubectl patch`, as a user trying it out would, rather than wait."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from local_instance import EXAMPLES, LocalInstance, until

NAME = "every-five-minutes"


def test_the_cronjob_example_makes_rayjobs_with_the_gate_on(tmp_path: Path) -> None:
    with LocalInstance(tmp_path / "cron", "--port", "0", "--feature-gates", "RayCronJob=true") as local:
        ns = local.namespace("cron")
        local.kubectl("apply", "-n", ns, "-f", str(EXAMPLES / "ray-cronjob.yaml"))
        local.kubectl("patch", "-n", ns, "raycronjob", NAME, "--type=merge",
                      "-p", '{"spec": {"schedule": "@every 5s"}}')  # fmt: skip

        def made() -> list[dict[str, Any]] | None:
            out = local.kubectl("get", "rayjobs", "-n", ns, "-l", f"ray.io/cronjob-name={NAME}", "-o", "json")
            items: list[dict[str, Any]] = json.loads(out)["items"]
            return items or None

        job, *_ = until(made, 90, "a RayJob of the RayCronJob")
        assert job["metadata"]["ownerReferences"][0]["name"] == NAME
        assert "@every 5s" in local.kubectl("get", "raycronjob", NAME, "-n", ns)
        warnings = local.kubectl("get", "events", "-n", ns, "--field-selector", "reason=NoController")
        assert "NoController" not in warnings
