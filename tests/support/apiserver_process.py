"""The real `kuberay-apiserver` command as a subprocess for tests: loopback, free ports (it announces them
on stdout), its output in a log file; `stop` is SIGTERM."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx

from support import stopping
from support.eventually import eventually

COMMAND = Path(sys.executable).parent / "kuberay-apiserver"
_LISTENING = re.compile(rb"listening (http|grpc) ([\d.]+):(\d+)")


class ApiServerProcess:
    def __init__(self, kubeconfig: Path, log: Path, *extra: str) -> None:
        self.kubeconfig, self.log, self.extra = kubeconfig, log, extra
        self.process: subprocess.Popen[bytes] | None = None
        self.ports: dict[str, int] = {}

    def start(self, timeout: float = 60.0) -> ApiServerProcess:
        argv = [str(COMMAND), f"-kubeconfig={self.kubeconfig}", "-httpPortFlag=127.0.0.1:0",
                "-rpcPortFlag=127.0.0.1:0", *self.extra]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        process = self.process

        def listening() -> bool:
            assert process.poll() is None, f"kuberay-apiserver exited:\n{self.log.read_text()}"
            self.ports.update(
                {kind.decode(): int(port) for kind, _, port in _LISTENING.findall(self.log.read_bytes())}
            )
            return len(self.ports) >= 2

        try:
            eventually(
                listening,
                timeout,
                lambda: f"kuberay-apiserver listening:\n{self.log.read_text()}",
                blocking=True,
            )
        except AssertionError:
            self.stop()
            raise
        httpx.get(f"{self.url}/healthz", timeout=10).raise_for_status()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports['http']}"

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.ports['grpc']}"

    def stop(self) -> None:
        stopping.stop(self.process)
