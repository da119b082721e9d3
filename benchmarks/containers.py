"""The production path's times on real containers (issue 47): the containers backend's start (the control
plane, the node, the images imported), then `helm install` of helm-chart/kuberay-operator until its pod is
Ready, then examples/ray-cluster.minimal.yaml until the RayCluster is `ready` and both Ray nodes are alive.
Prints each step's seconds and the images' sizes and build times (scripts/tools/images' `sizes.txt` and
`timings.txt`); nothing is asserted. Root only, as the backend is.

    .venv/bin/python -m benchmarks.containers [--rounds 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support import toolbuild  # noqa: E402
from support.containerkube import ContainerKube  # noqa: E402
from support.eventually import eventually  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _run(command: list[str], kubeconfig: Path, timeout: float = 900) -> str:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, check=True)
    return done.stdout


def one_round(images: Path, realkube: Path, node: Path, helm: Path) -> dict[str, float]:
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="containers-bench-") as scratch:
        backend = ContainerKube(Path(scratch) / "kube", realkube, node, images)
        started = time.monotonic()
        backend.start()
        times["backend ready (control plane, node, images)"] = time.monotonic() - started
        try:
            backend.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
            kubeconfig = backend.kubeconfig
            started = time.monotonic()
            _run([str(helm), "install", "kuberay-operator", str(REPO / "helm-chart" / "kuberay-operator"),
                  "--namespace", "kuberay-system", "--create-namespace", "--wait", "--timeout", "10m"],
                 kubeconfig)  # fmt: skip
            times["helm install until the operator's pod is Ready"] = time.monotonic() - started
            _run(["kubectl", "apply", "-f", str(REPO / "examples" / "ray-cluster.minimal.yaml")], kubeconfig)

            def ready() -> bool:
                state = _run(
                    ["kubectl", "get", "raycluster", "minimal", "-o", "jsonpath={.status.state}"], kubeconfig
                )
                return state == "ready"

            eventually(ready, 900, "the RayCluster ready", every=0.5, blocking=True)
            times["helm install until the first RayCluster ready"] = time.monotonic() - started
        finally:
            backend.stop()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    node, built = toolbuild.ensure("containerkube")
    realkube, helm_binary = toolbuild.built("realkube"), toolbuild.ensure("helm")[0]
    assert realkube is not None
    images = toolbuild.built("images")
    assert images is not None
    print(f"tools ready in {built:.1f} s; load average {os.getloadavg()[0]:.2f}")
    for name in ("sizes.txt", "timings.txt"):
        print(f"-- {name} ({images})\n{(images / name).read_text()}", end="")
    for number in range(args.rounds):
        for step, seconds in one_round(images, realkube, node, helm_binary).items():
            print(f"round {number + 1}: {step}: {seconds:.1f} s")
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
