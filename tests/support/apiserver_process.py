"""The real `kuberay-apiserver` command as a subprocess for tests: loopback, free ports (it announces them
on stdout), its output in a log file; `stop` is SIGTERM."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import httpx

from support import stopping

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
        deadline = time.monotonic() + timeout
        while len(self.ports) < 2:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"kuberay-apiserver did not start:\n{self.log.read_text()}")
            for kind, _, port in _LISTENING.findall(self.log.read_bytes()):
                self.ports[kind.decode()] = int(port)
            time.sleep(0.1)
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
