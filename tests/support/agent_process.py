"""`localkube agent` as a subprocess for tests: localkube's node attached to an API server over HTTP.

`AgentProcess(kubeconfig, log, node_name=..., mode=...)` runs `python -m localkube agent`; `start()` returns
at once (the Node appears when the agent has registered it), `stop()` sends SIGTERM, `kill()` SIGKILL.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import stopping


class AgentProcess:
    def __init__(
        self, kubeconfig: Path, log: Path, *extra: str, node_name: str = "agent", mode: str = "simulate"
    ) -> None:
        self.kubeconfig, self.log, self.extra = kubeconfig, log, extra
        self.node_name, self.mode = node_name, mode
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> AgentProcess:
        argv = [
            sys.executable, "-m", "localkube", "agent", "--kubeconfig", str(self.kubeconfig),
            "--node-mode", self.mode, "--node-name", self.node_name,
            "--log-level", os.environ.get("LOCALKUBE_LOG_LEVEL", "info"), *self.extra,
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self, timeout: float = 30.0) -> None:
        stopping.stop(self.process, timeout)
