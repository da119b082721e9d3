"""The real `kuberay-operator` command as a subprocess for tests: start, stop (SIGTERM), kill (SIGKILL).

Leader election off, metrics on a free port, the alpha gates the upstream samples need, `--enable-metrics`;
extra flags and environment variables per instance.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kuberay.local.ports import free_port
from support import stopping

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

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        stopping.stop(self.process)
