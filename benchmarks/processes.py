"""Operators run by the benchmarks: started in a process group of their own, waited for, stopped.

An operator runs in its own session (`start_new_session=True`) so that whatever it starts goes with it:
`stop_group` signals the whole group, SIGTERM first and SIGKILL after `timeout` seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import httpx


def wait_ready(process: subprocess.Popen[bytes], url: str, timeout: float) -> bool:
    """True once `url` answers 200; False when the process exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            return False
        time.sleep(0.2)
    return False


def stop_group(process: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> None:
    """Stops the process group led by `process` (started with `start_new_session=True`), if it still runs."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
