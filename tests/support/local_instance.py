"""`kuberay local up` for tests, started the way the README tells a user: the `kuberay` command (or
`bash scripts/up`) in a subprocess, `kuberay local status --output json` until it says ready, `kubectl`
with the printed kubeconfig, `kuberay local down` to stop (`with LocalInstance(...)` does both).

`LocalInstance(data_dir, *args, command=..., env=...)`: `args` go to `kuberay local up` (after `--`, to the
operator); `command` replaces `kuberay local up` (e.g. `bash scripts/up`); `env` is exported before it, as a
user sets the operator's environment variables (e.g. RAYSERVICE_UPGRADE_TIMEOUT_SECONDS). The launcher's
output goes to `data_dir/../<name>.out`, kept for a look after a failure.

`shared_instance(root, name, *args)`: one instance for every pytest-xdist worker of a run, under the run's
directory `root`: the first worker to ask starts it, the others find it ready; `take_down_shared(root)`
(the controller, once every worker is done) takes each one down.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from support import kubectl
from support.eventually import eventually

REPO = Path(__file__).resolve().parents[2]
KUBERAY = str(Path(sys.executable).parent / "kuberay")
EXAMPLES = REPO / "examples"
# On a loaded machine the two processes' imports alone take a while; this is a bound, not a measurement.
READY_TIMEOUT = 240.0
# How often the end-to-end tests poll a check that runs kubectl, a process of ~0.07 core-s each: a shorter
# period costs real-Ray files CPU they need (benchmarks/README.md has the measurement).
KUBECTL_POLL = 2.0


def kuberay(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBERAY, *args], capture_output=True, text=True, timeout=timeout, check=False)


class LocalInstance:
    def __init__(
        self,
        data_dir: Path,
        *args: str,
        command: list[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.env = {**os.environ, **(env or {})}
        self.argv = [*(command or [KUBERAY, "local", "up"]), "--data-dir", str(data_dir), *args]
        self.output = data_dir.parent / f"{data_dir.name}.out"
        self.process: subprocess.Popen[bytes] | None = None
        # The instance's kubeconfig path, from its status once ready: `kubectl` needs it on every call.
        self._kubeconfig: str | None = None
        self.namespaces: list[str] = []  # made by `namespace()`, in order

    def start(self) -> LocalInstance:
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=self.env
            )
        process = self.process

        def ready() -> dict[str, Any]:
            assert process.poll() is None, f"kuberay local up exited with {process.returncode}:\n{self.log()}"
            status = self.status() or {}
            return status if status.get("phase") == "ready" else {}

        status = eventually(
            ready, READY_TIMEOUT, lambda: f"kuberay local up ready:\n{self.log()}", every=0.5, blocking=True
        )
        self._kubeconfig = str(status["kubeconfig"])
        return self

    def __enter__(self) -> LocalInstance:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        # localkube stops every pod's processes first (Ray's GCS may need its SIGKILL after 10 s).
        self.down(timeout=180)
        self.kill()

    def log(self) -> str:
        return self.output.read_text(errors="replace")

    def status(self) -> dict[str, Any] | None:
        """`kuberay local status --output json`, or None when nothing runs (exit 3)."""
        result = kuberay("local", "status", "--data-dir", str(self.data_dir), "--output", "json")
        if result.returncode == 3:
            return None
        assert result.returncode == 0, result.stderr
        status: dict[str, Any] = json.loads(result.stdout)
        return status

    @property
    def kubeconfig(self) -> str:
        if self._kubeconfig is None:
            status = self.status()
            assert status is not None, "not running"
            self._kubeconfig = str(status["kubeconfig"])
        return self._kubeconfig

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        """`kubectl ARGS` with the instance's kubeconfig (support/kubectl.py)."""
        return kubectl.run(self.kubeconfig, *args, input=input, check=check)

    def get(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.kubectl("get", kind, name, "-n", namespace, "-o", "json"))
        return found

    def describe(self, namespaces: list[str]) -> str:
        """What a failed test needs to see of the namespaces it worked in: their Ray objects, each pod's phase
        and containers (with the last lines of each container that is not ready), the latest Events, and
        the warnings of the instance's own logs."""
        lines: list[str] = []
        for namespace in namespaces:
            lines.append(f"== namespace {namespace}")
            lines.extend(self.kubectl("get", "rayclusters,rayjobs,rayservices", "-n", namespace, check=False)
                         .splitlines())  # fmt: skip
            pods = json.loads(self.kubectl("get", "pods", "-n", namespace, "-o", "json", check=False) or "{}")
            for pod in pods.get("items", []):
                lines.extend(self._pod_lines(pod))
            events = self.kubectl("get", "events", "-n", namespace, "--sort-by=.lastTimestamp", check=False)
            lines.append("events, the latest last:")
            lines.extend(events.splitlines()[-15:])
        for name, path in ((self.status() or {}).get("logs") or {}).items():
            text = Path(path).read_text(errors="replace") if Path(path).is_file() else ""
            warnings = [line for line in text.splitlines() if "WARN" in line or "ERROR" in line]
            lines.append(f"== {name} log ({path}): its last warnings")
            lines.extend(warnings[-10:])
        return "\n".join(lines)

    def _pod_lines(self, pod: dict[str, Any]) -> list[str]:
        name, namespace, status = (
            pod["metadata"]["name"],
            pod["metadata"]["namespace"],
            pod.get("status") or {},
        )
        lines = [
            f"pod {name}: {status.get('phase')} on {pod['spec'].get('nodeName')} ip {status.get('podIP')}"
        ]
        for container in status.get("containerStatuses") or []:
            restarts = container.get("restartCount")
            lines.append(f"  {container['name']}: ready={container.get('ready')} restarts={restarts} "
                         f"{json.dumps(container.get('state'))}")  # fmt: skip
            if container.get("ready"):
                continue
            # The run before a restart is the one that says why the container went down.
            for run in ("--previous", "--previous=false") if restarts else ("--previous=false",):
                tail = self.kubectl("logs", "-n", namespace, name, "-c", container["name"], run, "--tail=15",
                                    check=False)  # fmt: skip
                lines.extend(f"    {run} | {line}" for line in tail.splitlines())
        return lines

    def namespace(self, name: str) -> str:
        """Creates the namespace `name`, remembered in `namespaces` (for a fixture to delete it afterwards)."""
        self.kubectl("create", "namespace", name)
        self.namespaces.append(name)
        return name

    def down(self, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """`kuberay local down`, then reaps the launcher."""
        result = kuberay("local", "down", "--data-dir", str(self.data_dir), timeout=timeout)
        if self.process is not None:
            self.process.wait(timeout)
        return result

    def kill(self) -> None:
        """For fixtures' clean-up after a failure: SIGTERM, which the launcher handles as `down` does."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


SHARED_DIR = "shared-instances"
# The instances this worker started, kept for the worker's life: their launchers outlive the fixtures that
# asked for them (the controller takes them down), and dropping the handle early would be a ResourceWarning.
_started: list[LocalInstance] = []


def shared_instance(root: Path, name: str, *args: str) -> LocalInstance:
    """The run's instance `name` (`kuberay local up ARGS`), started by the first caller of any worker."""
    directory = root / SHARED_DIR
    directory.mkdir(exist_ok=True)
    local = LocalInstance(directory / name, *args)
    # Held while starting: a second worker waits for the first one's instance instead of starting its own.
    with (directory / f"{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if local.status() is None:
            _started.append(local.start())
    return local


def take_down_shared(root: Path) -> None:
    """`kuberay local down` for each instance `shared_instance` started under `root`."""
    directory = root / SHARED_DIR
    for data_dir in sorted(directory.iterdir()) if directory.is_dir() else ():
        if data_dir.is_dir():
            LocalInstance(data_dir).down(timeout=180)
