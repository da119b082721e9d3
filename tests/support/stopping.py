"""Stopping a subprocess a test started: SIGTERM, its graceful shutdown given a bound, then SIGKILL; always
reaped. Nothing happens to a process that has already exited."""

from __future__ import annotations

import signal
import subprocess


def stop(process: subprocess.Popen[bytes] | None, grace: float = 20.0) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
