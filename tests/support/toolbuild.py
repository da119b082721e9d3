"""The real parts the suite runs beside kuberay and builds once per machine from their Go modules: Helm
(`scripts/tools/helm`), the Kubernetes control plane (`scripts/realkube build`), cert-manager
(`scripts/tools/cert-manager/build`), Kueue (`scripts/tools/kueue/build`), the scheduler-plugins gang
scheduler (`scripts/tools/scheduler-plugins/build`) and a client-go test program
(`scripts/tools/streamclient/build`), each into the shared cache (see scripts/tools/gobuild.sh).

A build runs in a session of its own, with its output in files rather than pipes: a test stopped while it
waits (its timeout, an interrupted run) leaves the build going, and the build still lands in the cache for
the next caller, where a killed build would leave nothing and the next caller would start again from zero.

`cold()` says which are not built yet. tests/support/scheduling.py asks that once per run: the tests that need a
cold tool go last and get `BUILD_TIMEOUT` added to their bound, and the build starts at collection, so it
runs while the rest of the suite does, on the CPU the suite leaves idle (`SCHED_IDLE`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# name -> its script: `SCRIPT build` builds it when missing and prints where it is, `SCRIPT built` only says
# where it is (exit 1 when it is not built).
TOOLS: dict[str, Path] = {
    "helm": REPO / "scripts" / "tools" / "helm",
    "realkube": REPO / "scripts" / "realkube",
    # The cert-manager controller and its CRDs; the key is the fixture that needs it (a name, no hyphen).
    "cert_manager": REPO / "scripts" / "tools" / "cert-manager" / "build",
    # The Kueue manager and its manifests (tests/support/kueue.py); the key is its fixture's name too.
    "kueue": REPO / "scripts" / "tools" / "kueue" / "build",
    # The scheduler-plugins gang scheduler and PodGroup controller (tests/support/scheduler_plugins.py).
    "scheduler_plugins": REPO / "scripts" / "tools" / "scheduler-plugins" / "build",
    # A client-go program doing exec and port-forward over SPDY and WebSockets (tests/conformance/
    # test_clientgo_streams.py); its fixture's name too.
    "streamclient": REPO / "scripts" / "tools" / "streamclient" / "build",
    # The containers backend: the control plane, the real node and the images (scripts/containerkube).
    "containerkube": REPO / "scripts" / "containerkube",
}
# What a tool's build makes beside it, each with its own `SCRIPT built`: the images come with containerkube.
PARTS: dict[str, Path] = {"images": REPO / "scripts" / "tools" / "images"}
# Compiling the three Kubernetes binaries and etcd took ~26 min on 2 idle cores (Helm: minutes); on cores the
# rest of the suite shares, longer. A bound, not a measurement.
BUILD_TIMEOUT = 3600.0
# Builds started and not waited for: held, so that none is reaped (and warned about) while the run goes on.
_STARTED: list[subprocess.Popen[bytes]] = []


def built(tool: str) -> Path | None:
    """Where the tool (or a part of one, `PARTS`) is, if it is built; builds nothing."""
    script = TOOLS[tool] if tool in TOOLS else PARTS[tool]
    found = subprocess.run(["bash", str(script), "built"], capture_output=True, text=True, check=False)
    return Path(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip() else None


def cold() -> list[str]:
    return [tool for tool in TOOLS if built(tool) is None]


def _idle_priority() -> None:
    """The build (every process it starts inherits this) runs only on CPU the suite leaves idle: on a cold
    machine the compilers beside the real-Ray tests, even niced, starved them past their bounds (a full
    run: two RayClusters not ready in 300 s, the autoscaler's driver not done in 400 s). Once the rest of
    the suite is done, the build has the machine."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def start(tool: str) -> tuple[subprocess.Popen[bytes], Path]:
    """Starts the tool's build script in a session of its own (it waits for the build another caller runs,
    or runs it); returns it and the stem of its output files, `STEM.out` and `STEM.err`."""
    stem = Path(tempfile.mkdtemp(prefix=f"kuberay-build-{tool}-")) / "build"
    with open(f"{stem}.out", "wb") as out, open(f"{stem}.err", "wb") as err:
        process = subprocess.Popen(
            ["bash", str(TOOLS[tool]), "build"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=_idle_priority,
        )
    _STARTED.append(process)
    return process, stem


def ensure(tool: str, timeout: float = BUILD_TIMEOUT) -> tuple[Path, float]:
    """The tool's path, building it when missing; and the seconds that took."""
    started = time.monotonic()
    build, stem = start(tool)  # returns at once when the tool is built
    try:
        returncode = build.wait(timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"building {tool} took over {timeout:.0f} s; it goes on ({stem}.err)") from None
    if returncode != 0:
        errors = Path(f"{stem}.err").read_text()
        raise RuntimeError(f"building {tool} failed ({returncode}):\n{errors[-4000:]}")
    path = Path(Path(f"{stem}.out").read_text().strip())
    shutil.rmtree(stem.parent)
    return path, time.monotonic() - started
