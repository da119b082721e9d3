"""`kubectl` as the tests run it: against one kubeconfig, with this environment's bin first on the PATH, where
kubectl finds the `kubectl-ray` plugin (`run(kubeconfig, "ray", ...)`) as it would for a user who installed
kuberay."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run(
    kubeconfig: str | Path, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
) -> str:
    """kubectl's stdout; `check` turns a non-zero exit into an AssertionError carrying its stderr."""
    # KUBECONFIG, not --kubeconfig: kubectl refuses flags before a plugin's name (`kubectl ray`).
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PATH": path}
    result = subprocess.run(
        ["kubectl", *args], capture_output=True, text=True, env=env, input=input, timeout=timeout, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result.stdout
