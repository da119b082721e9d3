"""`kubectl ray` on real Ray (process mode, the session's `kuberay local up`): `job submit` uploads a working
directory and runs a script that imports from it, `get job` shows it succeeded, `log job NAME` saves the
driver's output and each node's Ray logs, and `session` makes the dashboard answer on localhost:8265, again
after the head pod is replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from integration.kubectl import tables
from support.eventually import eventually
from support.local_instance import EXAMPLES, KUBECTL_POLL, LocalInstance

pytestmark = pytest.mark.slow

BIN = str(Path(sys.executable).parent)


def plugin_env(local: LocalInstance) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": local.kubeconfig,
    }


def dashboard_answers() -> bool:
    try:
        return httpx.get("http://localhost:8265/api/version", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def test_job_submit_log_and_session_on_real_ray(local_process: LocalInstance, tmp_path: Path) -> None:
    namespace = local_process.namespace("kubectl-ray")
    env = plugin_env(local_process)
    work = tmp_path / "work"
    work.mkdir()
    (work / "greeting.py").write_text("TEXT = 'hello from the working directory'\n")
    (work / "script.py").write_text("import greeting\nprint(greeting.TEXT)\n")
    rayjob = yaml.safe_load((EXAMPLES / "ray-job.interactive-mode.yaml").read_text())
    rayjob["metadata"]["name"] = "submitted"
    manifest = tmp_path / "rayjob.yaml"
    manifest.write_text(yaml.safe_dump(rayjob))

    done = subprocess.run(
        ["kubectl", "ray", "job", "submit", "-n", namespace, "-f", str(manifest), "--working-dir", str(work),
         "--", "python", "script.py"],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "Submitted RayJob submitted." in done.stdout
    assert "hello from the working directory" in done.stdout
    assert "finished with status SUCCEEDED." in done.stdout
    status = local_process.get("rayjob", "submitted", namespace)["status"]
    cluster = status["rayClusterName"]
    [row] = tables.parse(local_process.kubectl("ray", "get", "job", "-n", namespace))
    assert (row["NAME"], row["JOB STATUS"], row["DEPLOYMENT STATUS"], row["RAY CLUSTER NAME"]) == (
        "submitted", "SUCCEEDED", status["jobDeploymentStatus"], cluster)  # fmt: skip
    assert row["START TIME"] == status["startTime"] and row["END TIME"] == status.get("endTime", "")

    # `log job NAME`: the driver's output through the dashboard, beside each node's logs.
    out = tmp_path / "logs"
    out.mkdir()
    done = subprocess.run(["kubectl", "ray", "log", "job", "submitted", "-n", namespace, "--out-dir", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    driver = out / f"job-driver-{status['jobId']}.log"
    assert "hello from the working directory" in driver.read_text()
    pods = [p.name for p in out.iterdir() if p.is_dir()]
    assert pods and all((out / pod / "raylet.out").is_file() for pod in pods), list(out.rglob("*"))
    assert all((out / pod / "stdout.log").is_file() for pod in pods)

    session = subprocess.Popen(["kubectl", "ray", "session", cluster, "-n", namespace], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        eventually(dashboard_answers, 120, "the dashboard on localhost:8265", every=KUBECTL_POLL)
        head = local_process.kubectl("get", "pods", "-n", namespace, "-l", f"ray.io/cluster={cluster},ray.io/node-type=head",
                                     "-o", "jsonpath={.items[0].metadata.name}")  # fmt: skip
        local_process.kubectl("delete", "pod", head, "-n", namespace, "--wait=false")
        eventually(lambda: not dashboard_answers(), 120, "the old head's dashboard gone", every=KUBECTL_POLL)
        eventually(
            dashboard_answers,
            420,
            "the new head's dashboard through the reconnected session",
            every=KUBECTL_POLL,
        )
    finally:
        session.send_signal(signal.SIGINT)
        try:
            output, _ = session.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            session.kill()
            output, _ = session.communicate()
    assert "Ray Dashboard: http://localhost:8265" in output
    assert "failed to port-forward: " in output  # the forward broke with the old head and was started again
