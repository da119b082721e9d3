"""Helpers shared by the conformance tests: running the real kubectl against a localkube."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from localkube_process import LocalKubeProcess

TESTDATA = Path(__file__).parent / "testdata"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def run_kubectl(server: LocalKubeProcess, *args: str, input: str | None = None, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """kubectl with the server's admin kubeconfig; raises with its output when it fails and `check`."""
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(server.kubeconfig), *args],
        input=input, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(
            f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return done
