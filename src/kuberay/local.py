"""`kuberay local up`: localkube and the operator on this machine, as two child processes.

The only place where kuberay and localkube meet, and only as processes talking HTTP: localkube is started
with `python -m localkube serve`, the ray.io CRDs are applied through the API like any client would, then
`kuberay-operator` is started against localkube's kubeconfig. Ctrl-C (or SIGTERM, or either child dying)
stops both: the operator first, then localkube (which first stops its pods' processes), each with SIGTERM
and, after a grace period, SIGKILL.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kuberay.api import crd
from kuberay.runtime.client import Client, PatchType, load_config
from kuberay.runtime.errors import KubeError
from kuberay.runtime.resources import CUSTOM_RESOURCE_DEFINITION, NAMESPACE

OPERATOR_GRACE_SECONDS = 10.0
# localkube stops its pods' processes first (each with up to 10 s of grace, in parallel), then itself.
LOCALKUBE_GRACE_SECONDS = 30.0
READY_TIMEOUT = 60.0
FIELD_MANAGER = "kuberay-local"


class LocalError(Exception):
    """The local cluster could not be started; the message says what failed."""


@dataclass(frozen=True)
class LocalOptions:
    data_dir: Path
    port: int = 6443
    node_mode: str = "simulate"
    feature_gates: str = ""
    operator_args: tuple[str, ...] = ()


def up(options: LocalOptions) -> int:
    """Runs until interrupted; returns the exit status for the command line."""
    data_dir = options.data_dir.resolve()
    localkube_dir = data_dir / "localkube"
    kubeconfig = localkube_dir / "kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    children: list[subprocess.Popen[bytes]] = []
    stop_requested = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    try:
        localkube = _spawn(
            [sys.executable, "-m", "localkube", "serve", "--data-dir", str(localkube_dir), "--port", str(options.port),
             "--node-mode", options.node_mode],
            data_dir / "localkube.log",
        )  # fmt: skip
        children.append(localkube)
        asyncio.run(_install_crds_when_ready(localkube, kubeconfig, lambda: stop_requested))
        operator_command = [
            sys.executable, "-m", "kuberay.operator", "--kubeconfig", str(kubeconfig),
            "--enable-leader-election=false", "--metrics-addr", "127.0.0.1:8080",
            "--health-probe-bind-address", "127.0.0.1:8082", *options.operator_args,
        ]  # fmt: skip
        if options.feature_gates:
            operator_command += ["--feature-gates", options.feature_gates]
        operator = _spawn(operator_command, data_dir / "operator.log")
        children.append(operator)
        print(
            f"kuberay is running on localkube ({options.node_mode} mode).\n"
            f"  export KUBECONFIG={kubeconfig}\n"
            f"  kubectl apply -f <a RayCluster, RayJob or RayService manifest>\n"
            f"  logs: {data_dir / 'localkube.log'}, {data_dir / 'operator.log'}\n"
            f"Press Ctrl-C to stop.",
            flush=True,
        )
        while not stop_requested:
            for child in children:
                if child.poll() is not None:
                    name = "localkube" if child is localkube else "the operator"
                    print(f"{name} exited with status {child.returncode}; stopping.", file=sys.stderr)
                    return 1
            time.sleep(0.2)
        return 0
    except LocalError as err:
        print(f"kuberay local up: {err}", file=sys.stderr)
        return 1
    finally:
        for child in reversed(children):
            _stop(child, LOCALKUBE_GRACE_SECONDS if child is children[0] else OPERATOR_GRACE_SECONDS)


def _spawn(command: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        return subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)


async def _install_crds_when_ready(
    process: subprocess.Popen[bytes], kubeconfig: Path, stopping: Callable[[], bool]
) -> None:
    """Waits for localkube to answer, then server-side applies the ray.io CRDs."""
    deadline = time.monotonic() + READY_TIMEOUT
    while not kubeconfig.exists():
        _check_starting(process, stopping, deadline)
        await asyncio.sleep(0.1)
    client = Client.from_config(load_config(str(kubeconfig)), field_manager=FIELD_MANAGER, timeout=5.0)
    try:
        while True:
            _check_starting(process, stopping, deadline)
            try:
                await client.get(NAMESPACE, "default")
                break
            except KubeError:
                await asyncio.sleep(0.1)
        for definition in crd.crds():
            name = definition["metadata"]["name"]
            await client.patch(
                CUSTOM_RESOURCE_DEFINITION, name, definition, patch_type=PatchType.APPLY, force=True
            )
    finally:
        await client.close()


def _check_starting(process: subprocess.Popen[bytes], stopping: Callable[[], bool], deadline: float) -> None:
    if process.poll() is not None:
        raise LocalError(f"localkube exited with status {process.returncode}; see its log")
    if stopping():
        raise LocalError("interrupted while starting")
    if time.monotonic() > deadline:
        raise LocalError(f"localkube was not ready within {READY_TIMEOUT:.0f} s")


def _stop(process: subprocess.Popen[bytes], grace: float) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass
