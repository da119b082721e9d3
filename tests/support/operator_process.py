"""The real `kuberay-operator` command as a subprocess for tests: start, stop (SIGTERM), kill (SIGKILL).

Leader election off, metrics on a free port, the alpha gates the upstream samples need, `--enable-metrics`;
extra flags and environment variables per instance.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from kuberay.local.ports import free_port
from support import stopping
from support.eventually import eventually

ALPHA_GATES = (
    "RayClusterNetworkPolicy=true,GCSFaultToleranceEmbeddedStorage=true,"
    "RayClusterHistoryServer=true,RayClusterMTLS=true"
)


class OperatorProcess:
    """`python -m kuberay.operator.main` with test flags; `restart` kills it hard and starts another."""

    def __init__(self, kubeconfig: Path, log: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.kubeconfig, self.log, self.extra = kubeconfig, log, extra
        self.env = {**os.environ, **(env or {})}
        self.metrics_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorProcess:
        argv = [
            sys.executable, "-m", "kuberay.operator.main",
            f"--kubeconfig={self.kubeconfig}",
            f"--metrics-addr=127.0.0.1:{self.metrics_port}",
            "--health-probe-bind-address=0",
            "--enable-leader-election=false",
            "--reconcile-concurrency=4",
            f"--feature-gates={ALPHA_GATES}",
            "--enable-metrics",
            *self.extra,
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        return self

    def wait_listening(self, port: int, timeout: float = 60) -> None:
        """Until the operator accepts connections on `port` (its webhook server, say); fails at once if it
        exited, with its log."""

        def opened() -> bool:
            assert self.process is not None and self.process.poll() is None, self.log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                return False
            return True

        eventually(
            opened, timeout, lambda: f"port {port} open:\n{self.log.read_text()}", every=0.2, blocking=True
        )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        stopping.stop(self.process)
