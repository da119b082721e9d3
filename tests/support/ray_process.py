"""A real Ray head (ray from PyPI) for tests: `ray start --head --block` in its own process group.

Stopping kills that process group (SIGTERM, then SIGKILL after a grace period). `ray stop` is never used:
it kills every Ray process on the host, including other clusters'.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from kuberay.local.ports import free_port
from support.eventually import eventually


class RayHead:
    def __init__(self, temp_dir: Path, dashboard_host: str = "127.0.0.1") -> None:
        """`dashboard_host`: where the dashboard listens (another address of this machine for a control plane
        that will not proxy to a loopback one, the real kube-apiserver)."""
        self.temp_dir = temp_dir
        self.dashboard_host = dashboard_host
        self.gcs_port = free_port()
        self.dashboard_port = free_port()
        self.agent_port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def dashboard_url(self) -> str:
        return f"http://{self.dashboard_host}:{self.dashboard_port}"

    def start(self, timeout: float = 120.0) -> None:
        ray = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
        command = [
            ray, "start", "--head", "--block", "--disable-usage-stats", "--include-dashboard=true",
            f"--port={self.gcs_port}", f"--dashboard-host={self.dashboard_host}", f"--dashboard-port={self.dashboard_port}",
            f"--ray-client-server-port={free_port()}", f"--dashboard-agent-listen-port={self.agent_port}",
            "--num-cpus=2", "--object-store-memory=100000000", f"--temp-dir={self.temp_dir}",
        ]  # fmt: skip
        log = self.temp_dir.parent / "ray-head.log"
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        with log.open("wb") as out:
            self._process = subprocess.Popen(command, env=env, start_new_session=True, stdout=out, stderr=out)
        process = self._process

        def answering() -> bool:
            assert process.poll() is None, f"ray start exited with {process.returncode}; see {log}"
            # The dashboard, and the head's agent: a job submission waits only 10 s for the agent (Ray's
            # WAIT_AVAILABLE_AGENT_TIMEOUT), which a fresh head on a loaded machine can take longer to start.
            return self._answers(f"{self.dashboard_url}/api/version") and self._answers(
                f"http://127.0.0.1:{self.agent_port}/api/local_raylet_healthz"
            )

        try:
            eventually(
                answering,
                timeout,
                f"the Ray dashboard and its agent answering (see {log})",
                every=0.3,
                blocking=True,
            )
        except AssertionError:
            self.stop()
            raise

    @staticmethod
    def _answers(url: str) -> bool:
        try:
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, grace: float = 15.0) -> None:
        if self._process is None:
            return
        try:
            os.killpg(self._process.pid, signal.SIGTERM)
            self._process.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
        except ProcessLookupError:
            pass
        self._process = None
