"""`kuberay-operator` with the KubernetesWAS gate refuses to start on an API server that does not serve
scheduling.k8s.io/v1alpha2 (the flag combinations it refuses are tests/unit/api/test_config.py's)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

OPERATOR = [sys.executable, "-m", "kuberay.operator.main", "--log-stdout-encoder=console"]


def test_kubernetes_was_needs_the_served_api(localkube: Any) -> None:
    # The session's localkube serves no scheduling.k8s.io/v1alpha2.
    argv = [f"--kubeconfig={localkube.kubeconfig}", "--feature-gates=KubernetesWAS=true",
            "--enable-leader-election=false", "--metrics-addr=0", "--health-probe-bind-address=0"]  # fmt: skip
    done = subprocess.run([*OPERATOR, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert (
        "no served scheduling.k8s.io API version available for kubernetes-was-v1alpha2"
        in done.stdout + done.stderr
    )
