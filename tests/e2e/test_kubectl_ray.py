"""`kubectl ray` on real Ray (process mode, the session's `kuberay local up`): `job submit` uploads a working
directory and runs a script that imports from it, `get job` shows it succeeded, `log job NAME` saves the
driver's output and each node's Ray logs, and `session` makes the dashboard answer on localhost:8265, again
after the head pod is replaced. `job submit` whose port-forward is killed mid-tail forwards again, resumes
the tail and exits by the job's end state (kuberay#5147)."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
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


# The job: says it is waiting, blocks until the test writes its word into the FIFO, says it and ends by it.
WAITING_JOB = """import sys
print("job waiting for its word", flush=True)
with open(sys.argv[1]) as fifo:
    word = fifo.read()
print(f"job got its word: {word}", flush=True)
sys.exit(0 if word == "succeed" else 3)
"""


def port_forwards_below(pid: int) -> list[int]:
    """The `kubectl port-forward` processes among `pid`'s descendants, from /proc (kubectl runs its plugin
    by exec, so they are its children; walking all descendants does not depend on that)."""
    found, pending = [], [pid]
    while pending:
        children = []
        for task in Path(f"/proc/{pending.pop()}/task").glob("*"):
            with contextlib.suppress(FileNotFoundError):  # the task ended while being read
                children += [int(child) for child in (task / "children").read_text().split()]
        for child in children:
            with contextlib.suppress(FileNotFoundError):
                if b"port-forward" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
                    found.append(child)
        pending += children
    return found


class Lines:
    """A stream of a child read on a thread: every line kept, and each waited for as it comes."""

    def __init__(self, stream: Iterable[str] | None) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Iterable[str] | None) -> None:
        for line in stream or ():
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float) -> str:
        """The first line not yet waited past that holds `text`."""
        while True:
            try:
                line = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no line with {text!r} within {timeout} s: {self.text()}") from None
            if line is None:
                raise AssertionError(f"the stream ended without a line with {text!r}: {self.text()}")
            if text in line:
                return line

    def text(self) -> str:
        self._thread.join(timeout=60)
        return "".join(self.lines)


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("word", ["succeed", "fail"])
def test_job_submit_rides_out_its_port_forward_killed_mid_tail(
    local_process: LocalInstance, tmp_path: Path, word: str
) -> None:
    namespace = local_process.namespace(f"kubectl-ray-drop-{word}")
    env = plugin_env(local_process)
    work = tmp_path / "work"
    work.mkdir()
    (work / "script.py").write_text(WAITING_JOB)
    fifo = tmp_path / "word"
    os.mkfifo(fifo)
    rayjob = yaml.safe_load((EXAMPLES / "ray-job.interactive-mode.yaml").read_text())
    rayjob["metadata"]["name"] = f"dropped-{word}"
    manifest = tmp_path / "rayjob.yaml"
    manifest.write_text(yaml.safe_dump(rayjob))

    with subprocess.Popen(
        ["kubectl", "ray", "job", "submit", "-n", namespace, "-f", str(manifest), "--working-dir", str(work),
         "--", "python", "script.py", str(fifo)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    ) as submit:  # fmt: skip
        out, err = Lines(submit.stdout), Lines(submit.stderr)
        try:
            out.wait_for("job waiting for its word", 900)  # through the tail: the job runs and is tailed
            [forward] = port_forwards_below(submit.pid)
            os.kill(forward, signal.SIGKILL)
            out.wait_for("Port forwarding re-established on http://localhost:", 300)
            [again] = port_forwards_below(submit.pid)
            assert again != forward

            # The job blocks opening the FIFO until a writer does; on a thread, so that a job gone wrong
            # fails the test rather than hang it.
            released = threading.Thread(target=lambda: fifo.write_text(word), daemon=True)
            released.start()
            released.join(timeout=120)
            assert not released.is_alive(), "the job never opened its FIFO"
            code = submit.wait(timeout=300)
        finally:
            if submit.poll() is None:  # its forward too, which killing the command would leave running
                for pid in port_forwards_below(submit.pid):
                    os.kill(pid, signal.SIGKILL)
                submit.kill()
            stdout, stderr = out.text(), err.text()
    print(stdout, stderr, sep="\n")  # shown for a failure, or with -rP
    assert "Port-forward to Ray dashboard ended: " in stderr, stderr
    # The tail resumed through the new forward (the rest of the log) and skipped what it had printed.
    assert stdout.count("job waiting for its word") == 1, stdout
    assert f"job got its word: {word}" in stdout, stdout
    job_id = local_process.get("rayjob", f"dropped-{word}", namespace)["status"]["jobId"]
    if word == "succeed":
        assert code == 0, (stdout, stderr)
        assert f"Job {job_id} finished with status SUCCEEDED." in stdout
    else:
        assert code == 1, (stdout, stderr)
        assert f"Error: job {job_id} failed: " in stderr, stderr
