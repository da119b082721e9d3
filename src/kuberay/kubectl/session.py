"""`kubectl ray session`: forwards the Ray head's ports to localhost through `kubectl port-forward`.

As upstream, the forward is the real `kubectl port-forward service/<head service>` run as a child process,
so it works on any cluster kubectl reaches, and it is started again 3 s after each failure: kubectl resolves
the service to a pod once, so when the head pod is replaced the old forward fails and the next one finds
the new head. Ports: a RayCluster's dashboard (8265) and client (10001), a RayJob's dashboard, a
RayService's dashboard and Serve (8000). `forward_dashboard` is the one-off kind for other commands: the
dashboard on a free local port, for as long as the caller holds the process; `DashboardForward` is one a
command can start again when it drops (`job submit`, whose log tail outlives many a forward).

A target is `NAME` (a RayCluster), `TYPE/NAME`, or beside it the two words `TYPE NAME` (`job NAME`,
`service NAME`, `cluster NAME`, and the `ray...`/plural spellings), which `joined` turns into the first form.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import httpx

from kuberay.kubectl.kube import Kube, KubeFlags, PluginError, TargetError, describe
from kuberay.rayresources import RAYCLUSTER, RAYJOB, RAYSERVICE
from kuberay.runtime import errors

RECONNECT_DELAY = 3.0
PORT_FORWARD_TIMEOUT = 60.0
PROBE_EVERY = 2.0
DASHBOARD = ("Ray Dashboard", 8265)
CLIENT = ("Ray Interactive Client", 10001)
SERVE = ("Ray Serve", 8000)
PORTS = {"raycluster": [DASHBOARD, CLIENT], "rayjob": [DASHBOARD], "rayservice": [DASHBOARD, SERVE]}
RESOURCES = {"raycluster": RAYCLUSTER, "rayjob": RAYJOB, "rayservice": RAYSERVICE}
# Where each kind's status names the head service.
SERVICE_PATH = {
    "raycluster": ("head", "serviceName"),
    "rayjob": ("rayClusterStatus", "head", "serviceName"),
    "rayservice": ("activeServiceStatus", "rayClusterStatus", "head", "serviceName"),
}


# The first word of the two-word form, and the kind it names.
TYPE_WORDS = {
    word: kind
    for kind, words in (("raycluster", ("cluster", "raycluster")), ("rayjob", ("job", "rayjob")),
                        ("rayservice", ("service", "rayservice")))
    for singular in words
    for word in (singular, singular + "s")
}  # fmt: skip


def joined(args: Sequence[str]) -> str:
    """`TYPE NAME` as `TYPE/NAME`; one argument as it is."""
    if len(args) == 1:
        return args[0]
    if len(args) != 2:
        raise TargetError(f"accepts NAME, TYPE/NAME or TYPE NAME, received {len(args)} arguments")
    kind = TYPE_WORDS.get(args[0].lower())
    if kind is None:
        raise TargetError(f"unsupported resource type: {args[0]}")
    return f"{kind}/{args[1]}"


def parse_target(arg: str) -> tuple[str, str]:
    """(kind, name); the kind prefix is case-sensitive, as upstream's."""
    parts = arg.split("/")
    if len(parts) == 1:
        return "raycluster", parts[0]
    if len(parts) != 2 or not parts[1]:
        raise TargetError(f"invalid resource type/name: {arg}")
    if parts[0] not in PORTS:
        raise TargetError(f"unsupported resource type: {parts[0]}")
    return parts[0], parts[1]


async def head_service(kube: Kube, kind: str, name: str) -> str:
    resource = RESOURCES[kind]
    try:
        obj = await kube.client.get(resource, name, kube.namespace)
    except errors.KubeError as e:
        raise PluginError(f"unable to find {resource.kind} {name}: {describe(e, resource)}") from e
    value: Any = obj.get("status") or {}
    for key in SERVICE_PATH[kind]:
        value = (value or {}).get(key) if isinstance(value, dict) else None
    return str(value or "")


async def forward_target(kube: Kube, flags: KubeFlags, kind: str, name: str) -> tuple[str, list[str]]:
    """The head service of the target and the `kubectl port-forward` command line to it."""
    service = await head_service(kube, kind, name)
    return service, kubectl_args(flags, flags.context or kube.context, kube.namespace, service, PORTS[kind])


def kubectl(flags: KubeFlags, context: str) -> list[str]:
    """The real kubectl, pointed at the same kubeconfig and context as this command."""
    args = ["kubectl"]
    if flags.kubeconfig:
        args += ["--kubeconfig", flags.kubeconfig]
    if context:
        args += ["--context", context]
    return args


def kubectl_args(
    flags: KubeFlags,
    context: str,
    namespace: str,
    service: str,
    ports: list[tuple[str, int]],
    local_port: int | None = None,
) -> list[str]:
    """`kubectl port-forward` of the service's ports to the same local ports (`local_port=0`: free ones)."""
    args = [*kubectl(flags, context), "port-forward", "-n", namespace, f"service/{service}"]
    return args + [f"{'' if local_port == 0 else port}:{port}" for _, port in ports]


def forward(args: list[str], verbose: bool) -> None:
    """Runs kubectl's port-forward until it exits 0 (or the user interrupts), restarting it on failure."""
    while True:
        if verbose:
            print(f"Running: {' '.join(args)}", flush=True)
        code = subprocess.call(args)
        if code == 0:
            return
        print(f"failed to port-forward: exit status {code}. Retrying in 3s ...\n", flush=True)
        time.sleep(RECONNECT_DELAY)


async def forward_dashboard(
    flags: KubeFlags, kube: Kube, service: str, timeout: float = PORT_FORWARD_TIMEOUT
) -> tuple[asyncio.subprocess.Process, str]:
    """The head Service's dashboard port forwarded in the background (see `forward_in_background`)."""
    return await forward_in_background(
        flags, flags.context or kube.context, kube.namespace, service, DASHBOARD[1], timeout=timeout
    )


async def forward_in_background(
    flags: KubeFlags,
    context: str,
    namespace: str,
    service: str,
    port: int,
    probe: str = "/",
    progress: bool = True,
    timeout: float = PORT_FORWARD_TIMEOUT,
) -> tuple[asyncio.subprocess.Process, str]:
    """`kubectl port-forward service/<svc> :<port>` as a child, its local port read from kubectl's first
    line, and `probe` polled until it answers 2xx (each for up to `timeout` seconds); returns the child and
    the local base URL. `progress`: say so on stdout while waiting (as upstream's `job submit` does)."""
    args = kubectl_args(flags, context, namespace, service, [("", port)], local_port=0)
    process = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), timeout)).decode()
    except TimeoutError:
        line = ""
    if not line.startswith("Forwarding from "):
        await stop(process)
        raise PluginError("Timed out waiting for port forwarding")
    address = f"http://localhost:{line.split(' -> ')[0].rsplit(':', 1)[1]}"
    _keep_draining(process)
    if progress:
        print("Waiting for port forwarding...", end="", flush=True)
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=5.0) as http:
        while time.monotonic() <= deadline:
            await asyncio.sleep(PROBE_EVERY)
            try:
                if 200 <= (await http.get(address + probe)).status_code < 300:
                    if progress:
                        print(flush=True)
                    return process, address
            except httpx.HTTPError as e:
                print(f"Error occurred when waiting for port forwarding: {e}", flush=True)
    await stop(process)
    raise PluginError("Timed out waiting for port forwarding")


class DashboardForward:
    """The head Service's dashboard forwarded (`forward_dashboard`), with `ended` to await its end by
    itself and `start` to make it again, on a new free local port, after it dropped."""

    def __init__(self, flags: KubeFlags, kube: Kube, service: str) -> None:
        self.flags, self.kube, self.service = flags, kube, service
        self.address = ""
        self._process: asyncio.subprocess.Process | None = None
        self._ended: asyncio.Task[int] | None = None

    async def start(self) -> str:
        """Forwards the dashboard (one try, `PluginError` when it does not answer) and returns its URL."""
        await self.stop()
        self._process, self.address = await forward_dashboard(self.flags, self.kube, self.service)
        self._ended = asyncio.create_task(self._process.wait())
        return self.address

    @property
    def ended(self) -> asyncio.Task[int]:
        """Done, with kubectl's exit status, once the running forward's kubectl has exited."""
        if self._ended is None:
            raise RuntimeError("the dashboard forward was not started")
        return self._ended

    async def stop(self) -> None:
        if self._process is not None:
            await stop(self._process)
        if self._ended is not None:
            # With kubectl gone it ends by itself at its pipe's end; waited for rather than cancelled.
            await asyncio.wait({self._ended})
        self._process = self._ended = None


# The drains of the forwards running in the background, held until each ends (a task only the event loop
# refers to may be collected while it waits).
_DRAINS: set[asyncio.Task[None]] = set()


def _keep_draining(process: asyncio.subprocess.Process) -> None:
    """Reads kubectl's output for the forward's whole life: it writes a line per forwarded connection, and
    left unread the pipe and asyncio's buffer fill (~6,600 connections) and kubectl blocks on it, stalling every
    connection through the forward."""
    assert process.stdout is not None
    stdout = process.stdout

    async def drain() -> None:
        while await stdout.read(65536):
            pass

    task = asyncio.create_task(drain())
    _DRAINS.add(task)
    task.add_done_callback(_DRAINS.discard)


async def stop(process: asyncio.subprocess.Process) -> None:
    """Ends a forward; one that already exited (kubectl gives up when the pod goes) is only reaped."""
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    await process.wait()
