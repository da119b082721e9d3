from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localkube.node.simulate import Placement, SimulationError, Timing, pod_status, qos_class

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ZERO = Timing()
HERE = Placement("localkube", "10.0.0.1", "10.244.0.5")


def _pod(fault: str | None = None, restart: str = "Always", **spec: Any) -> dict[str, Any]:
    annotations = {"localkube.io/simulate": fault} if fault else {}
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "annotations": annotations},
        "spec": {
            "restartPolicy": restart,
            "containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}],
            **spec,
        },
    }


def _at(pod: dict[str, Any], seconds: float, timing: Timing = ZERO) -> tuple[dict[str, Any], float | None]:
    outcome = pod_status(pod, HERE, T0, T0 + timedelta(seconds=seconds), timing)
    return outcome.status, outcome.recheck_after


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == kind)


def test_stages_follow_the_configured_delays() -> None:
    timing = Timing(pull=2, ready=3)
    status, recheck = _at(_pod(), 1, timing)
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert recheck == 1
    status, recheck = _at(_pod(), 3, timing)
    assert status["phase"] == "Running" and _condition(status, "Ready")["status"] == "False"
    assert recheck == 2
    status, recheck = _at(_pod(), 5, timing)
    assert _condition(status, "Ready")["status"] == "True"
    assert status["containerStatuses"][0]["ready"] is True
    assert status["podIP"] == "10.244.0.5" and status["hostIP"] == "10.0.0.1"
    assert recheck is None


def test_a_jobs_pods_complete_and_other_pods_keep_running() -> None:
    job_pod = _pod(restart="Never")
    job_pod["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "j", "uid": "j1", "controller": True}]
    status, _ = _at(job_pod, 5, Timing(complete=4))
    assert status["phase"] == "Succeeded"
    assert status["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    ray_pod, recheck = _at(_pod(restart="Never"), 5, Timing(complete=4))
    assert ray_pod["phase"] == "Running" and recheck is None


def test_image_pull_back_off() -> None:
    early, _ = _at(_pod("ImagePullBackOff"), 0)
    late, recheck = _at(_pod("ImagePullBackOff"), 30)
    assert early["containerStatuses"][0]["state"]["waiting"]["reason"] == "ErrImagePull"
    waiting = late["containerStatuses"][0]["state"]["waiting"]
    assert late["phase"] == "Pending"
    assert waiting == {
        "reason": "ImagePullBackOff",
        "message": 'Back-off pulling image "rayproject/ray:2.46.0"',
    }
    assert recheck is None


def test_crash_loop_restarts_grow_with_back_off() -> None:
    # Runs start at 0, 11 (after 10 s), 32 (after 20 s), 73 (after 40 s).
    status, recheck = _at(_pod("CrashLoopBackOff"), 5)
    container = status["containerStatuses"][0]
    assert container["restartCount"] == 0
    assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert container["lastState"]["terminated"]["exitCode"] == 1
    assert recheck == 6
    status, _ = _at(_pod("CrashLoopBackOff"), 32.5)
    container = status["containerStatuses"][0]
    assert container["restartCount"] == 2 and "running" in container["state"]
    assert container["lastState"]["terminated"]["startedAt"] == "2026-01-01T00:00:11Z"
    status, _ = _at(_pod("CrashLoopBackOff"), 40)
    assert "back-off 40s" in status["containerStatuses"][0]["state"]["waiting"]["message"]


def test_oom_killed_is_reported_with_exit_code_137() -> None:
    status, _ = _at(_pod("OOMKilled"), 5)
    assert status["containerStatuses"][0]["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert status["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 137
    failed, _ = _at(_pod("OOMKilled", restart="Never"), 5)
    assert failed["phase"] == "Failed"
    assert failed["containerStatuses"][0]["state"]["terminated"]["reason"] == "OOMKilled"


@pytest.mark.parametrize(("code", "phase"), [(0, "Succeeded"), (3, "Failed")])
def test_exit_code_ends_a_pod_that_does_not_restart(code: int, phase: str) -> None:
    status, _ = _at(_pod(f"Exit:{code}", restart="Never"), 2)
    assert status["phase"] == phase
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == code


def test_evicted_and_never_ready() -> None:
    evicted, _ = _at(_pod("Evicted"), 1)
    assert (evicted["phase"], evicted["reason"]) == ("Failed", "Evicted")
    never, _ = _at(_pod("NeverReady"), 100)
    assert never["phase"] == "Running"
    assert _condition(never, "Ready")["reason"] == "ContainersNotReady"


def test_delay_postpones_the_start() -> None:
    status, recheck = _at(_pod("Delay:10"), 4)
    assert status["phase"] == "Pending" and recheck == 6
    assert _at(_pod("Delay:10"), 10)[0]["phase"] == "Running"


def test_unknown_fault_is_refused_with_its_value() -> None:
    with pytest.raises(SimulationError, match="'Sometimes'"):
        _at(_pod("Sometimes"), 0)


def test_qos_class() -> None:
    guaranteed = {"limits": {"cpu": "1", "memory": "1Gi"}}
    assert qos_class(_pod()) == "BestEffort"
    assert qos_class({"spec": {"containers": [{"name": "c", "resources": guaranteed}]}}) == "Guaranteed"
    burstable = {"requests": {"cpu": "1"}}
    assert qos_class({"spec": {"containers": [{"name": "c", "resources": burstable}]}}) == "Burstable"
