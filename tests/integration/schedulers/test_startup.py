"""`kuberay-operator` with the KubernetesWAS gate refuses to start on an API server that does not serve
scheduling.k8s.io/v1alpha2 (the flag combinations it refuses are tests/unit/api/test_config.py's), and starts
with every alpha gate on (`AllAlpha`) where it is served."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from kuberay.local.ports import free_port

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


def test_all_alpha_gates_with_go_booleans_start_the_operator(gang_localkube: Any, tmp_path: Path) -> None:
    # AllAlpha turns KubernetesWAS on as well (as upstream's operator), so this needs the server that serves
    # scheduling.k8s.io/v1alpha2; the session's one would refuse it as the test above shows.
    probe = free_port()
    argv = [f"--kubeconfig={gang_localkube.kubeconfig}", "--feature-gates", "RayCronJob=1,AllAlpha=true",
            "--enable-leader-election=false", "--metrics-addr=0", f"--health-probe-bind-address=127.0.0.1:{probe}"]  # fmt: skip
    log = tmp_path / "operator.log"
    with log.open("wb") as out:
        process = subprocess.Popen([*OPERATOR, *argv], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not ready(probe):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGTERM)
        status = process.wait(30)
    text = log.read_text()
    assert status == 0, text
    [gates] = [line for line in text.splitlines() if "feature gates: " in line]
    assert "RayCronJob=true (--feature-gates)" in gates
    assert "KubernetesWAS=true (--feature-gates AllAlpha)" in gates
    assert "TopologyLabelDelivery=true (--feature-gates AllAlpha)" in gates
    assert "RayClusterStatusConditions=true (default)" in gates


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False
