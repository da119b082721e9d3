"""`kuberay local up`: localkube and the operator on this machine, as two child processes.

The only place where kuberay and localkube meet, and only as processes talking HTTP: localkube is started
with `python -m localkube serve`, the ray.io CRDs are applied through the API like any client would, then
`kuberay-operator` is started against localkube's kubeconfig, reaching every Ray dashboard through the API
server's service proxy (the host cannot resolve Service names). "ready" is announced only once the API
server answers and the operator's /readyz does (its caches have synced). The data directory is locked for
the launcher's lifetime (`instance`). Ctrl-C, SIGTERM (`kuberay local down`) or either child dying stops
both: the operator first, then localkube (which first stops its pods' processes), each with SIGTERM and,
after a grace period, SIGKILL. The children also get SIGTERM from the kernel if the launcher itself dies.
With `monitoring` (`--monitoring`) a Prometheus (`kuberay.local.monitoring`) scrapes the operator, whose
`--enable-metrics` it turns on, and the Ray pods; it is started once the operator is ready and stopped first.
With `history` (`--history`) the History Server (`python -m kuberay.history.server`) runs on a free port of
127.0.0.1 over the local directory `DIR/history`, where collectors given `STORAGE_BACKEND=local` and
`STORAGE_LOCAL_DIR=DIR/history` write; its URL is printed and in `kuberay local status`; the operator gets
the gate RayClusterHistoryServer, whose collector sidecar (image `kuberay-history-collector:latest`, no
command) process mode runs through localkube's `--image-entrypoint`, as it runs `kuberay:latest`.
With `operator=False` (`--no-operator`) only localkube runs, with the CRDs installed, for an operator
installed into it (`helm install`, `kubectl apply -k deploy/`); "ready" then means the API server answers.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from kuberay.api import crd
from kuberay.local import monitoring
from kuberay.local.errors import LocalModeError
from kuberay.local.instance import InstanceError, InstanceLock, InstanceState
from kuberay.local.ports import free_port, port_free
from kuberay.operator import logs, settings
from kuberay.runtime.client import Client, PatchType, load_config
from kuberay.runtime.errors import KubeError
from kuberay.runtime.resources import CUSTOM_RESOURCE_DEFINITION, NAMESPACE
from kuberay.runtime.serving import parse_bind_address

log = logging.getLogger("local")

OPERATOR_GRACE_SECONDS = 10.0
# localkube stops its pods' processes first (each with up to 10 s of grace, in parallel), then itself.
LOCALKUBE_GRACE_SECONDS = 30.0
# Generous: on a loaded machine the operator's imports alone take several seconds.
READY_TIMEOUT = 120.0
PROGRESS_EVERY = 5.0
FIELD_MANAGER = "kuberay-local"
LOG_FORMATS = ("console", "json")
PR_SET_PDEATHSIG = 1
# The entrypoints of the project's images (Containerfile), so that process mode runs their containers when
# they give no command: the operator's, and the History Server collector sidecar the operator injects.
IMAGE_ENTRYPOINTS = {
    "kuberay:latest": "kuberay-operator",
    "kuberay-history-collector:latest": "kuberay-history-collector",
}


class LocalError(LocalModeError):
    """The local cluster could not be started; the message says what failed and where its log is."""


@dataclass(frozen=True)
class LocalOptions:
    data_dir: Path
    port: int = 6443
    node_mode: str = "simulate"
    feature_gates: str = ""
    # The schedulerNames localkube's scheduler stands in for (its `--schedulers`).
    schedulers: str = "default-scheduler"
    log_format: str = "console"
    # A Prometheus scraping the operator and the Ray pods (kuberay.local.monitoring).
    monitoring: bool = False
    # The History Server over DIR/history (kuberay.history.server).
    history: bool = False
    # False: localkube alone (with the CRDs), for an operator installed into it as into any cluster.
    operator: bool = True
    # Passed to kuberay-operator after the launcher's own flags, so they override them.
    operator_args: tuple[str, ...] = ()


def operator_flags(options: LocalOptions, kubeconfig: Path) -> list[str]:
    """The operator's flags: leader election off, free ports for its endpoints, the service proxy to the Ray
    dashboards; then the user's, which win (the last occurrence of a flag counts)."""
    flags = [
        f"--kubeconfig={kubeconfig}", "--enable-leader-election=false", f"--metrics-addr=127.0.0.1:{free_port()}",
        f"--health-probe-bind-address=127.0.0.1:{free_port()}", "--use-kubernetes-proxy=true",
        f"--log-stdout-encoder={options.log_format}",
    ]  # fmt: skip
    gates = [g for g in options.feature_gates.split(",") if g]
    if options.history:  # the collector sidecar of historyServerOptions
        gates.append("RayClusterHistoryServer=true")
    if gates:
        flags.append(f"--feature-gates={','.join(gates)}")
    if options.monitoring:
        flags.append("--enable-metrics")
    return flags + list(options.operator_args)


def up(options: LocalOptions) -> int:
    """Runs until interrupted; returns the exit status for the command line."""
    logs.configure(stdout_encoder=options.log_format, level="info")
    data_dir = options.data_dir.resolve()
    kubeconfig = data_dir / "localkube" / "kubeconfig"
    flags = operator_flags(options, kubeconfig)
    try:
        operator_settings = settings.parse(flags)
    except settings.SettingsError as e:
        log.error("invalid operator settings: %s", e)
        return 2
    if not options.operator and (options.operator_args or options.feature_gates or options.monitoring):
        log.error(
            "--no-operator starts no operator: --feature-gates, --monitoring (which scrapes it) and "
            "arguments after -- have no use with it"
        )
        return 2
    try:
        prometheus = monitoring.prometheus_binary() if options.monitoring else None
    except monitoring.MonitoringError as e:
        log.error("%s", e)
        return 1
    lock = InstanceLock(data_dir)
    try:
        lock.acquire()
    except InstanceError as e:
        log.error("%s", e)
        return 1
    stopping = _StopFlag()
    children: list[subprocess.Popen[bytes]] = []
    state = InstanceState(
        pid=os.getpid(), phase="starting", node_mode=options.node_mode, data_dir=str(data_dir),
        kubeconfig=str(kubeconfig), logs={"localkube": str(data_dir / "localkube.log")},
    )  # fmt: skip
    if options.operator:
        state = replace(
            state, operator_metrics=operator_settings.config.metrics_addr,
            operator_health_probe=operator_settings.config.probe_addr,
            logs={**state.logs, "operator": str(data_dir / "operator.log")},
        )  # fmt: skip
    try:
        if options.port and not port_free(options.port):
            raise LocalError(
                f"port {options.port} is in use (another localkube?); choose one with --port, "
                "or --port 0 for a free one"
            )
        kubeconfig.unlink(missing_ok=True)
        localkube = _spawn(
            [sys.executable, "-m", "localkube", "serve", "--data-dir", str(kubeconfig.parent),
             "--port", str(options.port), "--node-mode", options.node_mode, "--schedulers", options.schedulers,
             *(f"--image-entrypoint={image}={command}" for image, command in IMAGE_ENTRYPOINTS.items())],
            Path(state.logs["localkube"]),
        )  # fmt: skip
        children.append(localkube)
        state = replace(state, children={"localkube": localkube.pid})
        lock.write(state)
        api_server = asyncio.run(_install_crds_when_ready(localkube, kubeconfig, state, stopping))
        state = replace(state, api_server=api_server)
        supervised = {"localkube": localkube}
        if options.operator:
            operator = _spawn(
                [sys.executable, "-m", "kuberay.operator", *flags], Path(state.logs["operator"])
            )
            children.append(operator)
            supervised["operator"] = operator
            state = replace(state, children={**state.children, "operator": operator.pid})
            lock.write(state)
            asyncio.run(_operator_ready(operator, state, stopping))
        if prometheus is not None:
            state = _start_prometheus(prometheus, data_dir, kubeconfig, state, children, stopping)
            lock.write(state)
        if options.history:
            state = _start_history_server(data_dir, state, children, stopping)
            supervised["history-server"] = children[-1]
            lock.write(state)
        state = replace(state, phase="ready")
        lock.write(state)
        log.info("%s", _ready_message(state))
        if state.prometheus:
            log.info("Prometheus (scraping the operator and the Ray pods): %s", state.prometheus)
        if state.history_server:
            log.info(
                "History Server: %s (storage: the directory %s)", state.history_server, state.history_dir
            )
        return _supervise(supervised, state, stopping)
    except LocalError as e:
        log.error("%s", e)
        return 1
    finally:
        if children:
            lock.write(replace(state, phase="stopping"))
            log.info("stopping")
        for child in reversed(children):
            _stop(child, LOCALKUBE_GRACE_SECONDS if child is children[0] else OPERATOR_GRACE_SECONDS)
        lock.release()


def _start_prometheus(
    binary: str,
    data_dir: Path,
    kubeconfig: Path,
    state: InstanceState,
    children: list[subprocess.Popen[bytes]],
    stopping: _StopFlag,
) -> InstanceState:
    """Starts Prometheus (a child, stopped with the others) and waits until it answers /-/ready."""
    directory = data_dir / "prometheus"
    targets = monitoring.write_configuration(directory, state.operator_metrics)
    monitoring.RayPodTargets(kubeconfig, targets).start()
    port = free_port()
    log_path = data_dir / "prometheus.log"
    process = _spawn(monitoring.command(binary, directory, port), log_path)
    children.append(process)
    url = f"http://127.0.0.1:{port}"
    state = replace(
        state, prometheus=url, logs={**state.logs, "prometheus": str(log_path)},
        children={**state.children, "prometheus": process.pid},
    )  # fmt: skip
    _wait_ready("prometheus", process, f"{url}/-/ready", log_path, stopping)
    return state


def _start_history_server(
    data_dir: Path, state: InstanceState, children: list[subprocess.Popen[bytes]], stopping: _StopFlag
) -> InstanceState:
    """Starts the History Server over DIR/history (a child, stopped with the others) and waits until it
    answers /livez."""
    directory = data_dir / "history"
    directory.mkdir(exist_ok=True)
    port = free_port()
    log_path = data_dir / "history-server.log"
    process = _spawn(
        [sys.executable, "-m", "kuberay.history.server", "--host", "127.0.0.1", "--port", str(port),
         "--storage-backend", "local", "--storage-local-dir", str(directory)],
        log_path,
    )  # fmt: skip
    children.append(process)
    url = f"http://127.0.0.1:{port}"
    state = replace(
        state, history_server=url, history_dir=str(directory), logs={**state.logs, "history-server": str(log_path)},
        children={**state.children, "history-server": process.pid},
    )  # fmt: skip
    _wait_ready("history-server", process, f"{url}/livez", log_path, stopping)
    return state


def _wait_ready(
    name: str, process: subprocess.Popen[bytes], ready_url: str, log_path: Path, stopping: _StopFlag
) -> None:
    """Waits until a child answers 200 at `ready_url` (or a stop is requested)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while not stopping.requested:
        if process.poll() is not None:
            raise LocalError(f"{name} exited with status {process.returncode}; its log: {log_path}")
        try:
            if httpx.get(ready_url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise LocalError(f"{name} did not become ready in {READY_TIMEOUT:.0f} s; its log: {log_path}")
        time.sleep(0.5)


def _supervise(
    children: dict[str, subprocess.Popen[bytes]], state: InstanceState, stopping: _StopFlag
) -> int:
    """Waits for a stop request (0) or for a child to exit (1)."""
    while not stopping.requested:
        for name, child in children.items():
            if child.poll() is not None:
                log.error("%s exited with status %d; stopping. Its log: %s",
                          name, child.returncode, state.logs[name])  # fmt: skip
                return 1
        time.sleep(0.2)
    return 0


class _StopFlag:
    """Set by SIGINT or SIGTERM; the launcher polls it, so a signal never interrupts a half-done step."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGINT, self._request)
        signal.signal(signal.SIGTERM, self._request)

    def _request(self, signum: int, frame: object) -> None:
        self.requested = True


def _ready_message(state: InstanceState) -> str:
    if "operator" in state.logs:
        what, next_step = (
            "kuberay is ready on localkube",
            "kubectl apply -f examples/ray-cluster.minimal.yaml",
        )
        endpoints = (
            f"; operator metrics: {state.operator_metrics}, health probe: {state.operator_health_probe}"
        )
    else:
        what, next_step = (
            "localkube is ready, without an operator",
            "helm install kuberay-operator helm-chart/kuberay-operator",
        )
        endpoints = ""
    return (
        f"{what} ({state.node_mode} mode)\n"
        f"  export KUBECONFIG={state.kubeconfig}\n"
        f"  {next_step}\n"
        f"  API server: {state.api_server}{endpoints}\n"
        f"  logs: {', '.join(state.logs.values())}\n"
        f"Press Ctrl-C (or run `kuberay local down --data-dir {state.data_dir}`) to stop."
    )


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel sends it SIGTERM when the launcher dies, even by SIGKILL,
    so no localkube is left running on a directory whose lock is gone."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _spawn(command: Sequence[str], log_path: Path) -> subprocess.Popen[bytes]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        return subprocess.Popen(
            command, stdout=out, stderr=out, start_new_session=True, preexec_fn=_die_with_parent
        )


class _Waiting:
    """One step of start-up: fails when its process exits, on a stop request or at the deadline, and logs
    progress every few seconds."""

    def __init__(
        self, what: str, process: subprocess.Popen[bytes], log_path: str, stopping: _StopFlag
    ) -> None:
        self.what, self.process, self.log_path, self.stopping = what, process, log_path, stopping
        self.started = self.last_report = time.monotonic()
        log.info("waiting for %s", what)

    def check(self) -> None:
        now = time.monotonic()
        if self.process.poll() is not None:
            raise LocalError(
                f"{self.what}: the process exited with status {self.process.returncode}; see {self.log_path}"
            )
        if self.stopping.requested:
            raise LocalError(f"interrupted while waiting for {self.what}")
        if now - self.started > READY_TIMEOUT:
            raise LocalError(f"{self.what}: no answer within {READY_TIMEOUT:.0f} s; see {self.log_path}")
        if now - self.last_report >= PROGRESS_EVERY:
            self.last_report = now
            log.info("still waiting for %s (%.0f s)", self.what, now - self.started)


async def _install_crds_when_ready(
    process: subprocess.Popen[bytes], kubeconfig: Path, state: InstanceState, stopping: _StopFlag
) -> str:
    """Waits for localkube to answer, server-side applies the ray.io CRDs and returns the API's URL."""
    waiting = _Waiting("the API server", process, state.logs["localkube"], stopping)
    while not kubeconfig.exists():
        waiting.check()
        await asyncio.sleep(0.1)
    config = load_config(str(kubeconfig))
    client = Client.from_config(config, field_manager=FIELD_MANAGER, timeout=5.0)
    try:
        while True:
            waiting.check()
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
    return str(config.cluster.server)


async def _operator_ready(
    process: subprocess.Popen[bytes], state: InstanceState, stopping: _StopFlag
) -> None:
    """Waits until the operator's /readyz answers 200; without a probe endpoint, until it has started."""
    waiting = _Waiting("the operator", process, state.logs["operator"], stopping)
    bind = parse_bind_address(state.operator_health_probe)
    if bind is None:
        log.warning("the operator's health probe is disabled; not waiting for its caches to sync")
        return
    host = "127.0.0.1" if bind[0] in ("0.0.0.0", "::") else bind[0]
    url = f"http://{host}:{bind[1]}/readyz"
    async with httpx.AsyncClient(timeout=2.0) as http:
        while True:
            waiting.check()
            try:
                if (await http.get(url)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)


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
