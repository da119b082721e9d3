"""Container probes (startup, liveness, readiness) and lifecycle hooks, with exec, httpGet and tcpSocket
handlers (`handle`; `run_hook` runs a postStart or preStop hook once).

A `Prober` is the state of one probe of one run of a container. The kubelet's owner calls `tick(now)` on
every reconcile: it collects a finished attempt, and starts the next one when it is due, as an asyncio
task so that no reconcile ever waits on a probe. Timing follows the kubelet: the first attempt
`initialDelaySeconds` after the container started, then one every `periodSeconds`, each given
`timeoutSeconds` (a timeout is a failure); `successThreshold` consecutive successes make the result
success, `failureThreshold` consecutive failures make it failure.

`tick_run` steps the probes of one run as the kubelet does: only the startup probe until it passes, then
liveness and readiness; it names the probe whose failure means the container is to be restarted.

Results: a readiness probe starts as failure (not ready until it passes), a liveness probe as success,
a startup probe as unknown (None) until it passes or fails. A probe's handler runs in the pod's sandbox:
exec commands through its argv prefix and with the container's environment, httpGet and tcpSocket against
the pod's address unless the probe names a host (and, for a pod on the host's network, against the host's
loopback when the pod's address refuses the connection). HTTP statuses 200-399 succeed, as in the kubelet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbeContext:
    """Where a container's probes run: the pod's address, the sandbox's argv prefix, the environment."""

    pod_ip: str
    exec_prefix: tuple[str, ...]
    env: Mapping[str, str]
    ports: Mapping[str, int]  # the container's named ports
    shares_host_network: bool = False


class Prober:
    def __init__(self, kind: str, spec: Mapping[str, Any], context: ProbeContext, started: float) -> None:
        self.kind = kind
        self.spec = spec
        self._context = context
        self._period = float(spec.get("periodSeconds") or 10)
        self._timeout = float(spec.get("timeoutSeconds") or 1)
        self._success_threshold = int(spec.get("successThreshold") or 1)
        self._failure_threshold = int(spec.get("failureThreshold") or 3)
        self.next_at = started + float(spec.get("initialDelaySeconds") or 0)
        self.result: bool | None = {"readiness": False, "liveness": True}.get(kind)
        self.message = ""
        self._successes = 0
        self._failures = 0
        self._task: asyncio.Task[tuple[bool, str]] | None = None

    def tick(self, now: float) -> bool:
        """Collects a finished attempt and starts a due one; True when the result changed."""
        changed = False
        if self._task is not None and self._task.done():
            ok, self.message = self._task.result()
            self._task = None
            changed = self._record(ok)
        if self._task is None and now >= self.next_at:
            self._task = asyncio.get_running_loop().create_task(self._attempt())
            self.next_at = now + self._period
        return changed

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def _record(self, ok: bool) -> bool:
        before = self.result
        if ok:
            self._successes, self._failures = self._successes + 1, 0
            if self._successes >= self._success_threshold:
                self.result = True
        else:
            self._successes, self._failures = 0, self._failures + 1
            if self._failures >= self._failure_threshold:
                self.result = False
        return self.result != before

    async def _attempt(self) -> tuple[bool, str]:
        try:
            return await asyncio.wait_for(handle(self.spec, self._context), self._timeout)
        except TimeoutError:
            return False, f"{self.kind} probe timed out after {self._timeout:g}s"
        except Exception as err:  # any failure to reach the container is a probe failure
            return False, f"{self.kind} probe failed: {err}"


async def handle(spec: Mapping[str, Any], context: ProbeContext) -> tuple[bool, str]:
    """Runs the handler a probe or lifecycle hook names (exec, httpGet or tcpSocket) once; success and a
    message. A handler this node does not run (grpc) succeeds."""
    if "exec" in spec:
        return await _exec(spec["exec"], context)
    if "httpGet" in spec:
        return await _http(spec["httpGet"], context)
    if "tcpSocket" in spec:
        return await _tcp(spec["tcpSocket"], context)
    return True, ""


async def run_hook(
    kind: str, spec: Mapping[str, Any], context: ProbeContext, timeout: float
) -> tuple[bool, str]:
    """A lifecycle hook (postStart, preStop) run once within `timeout`; success and the kubelet's message."""
    try:
        ok, message = await asyncio.wait_for(handle(spec, context), timeout)
    except TimeoutError:
        return False, f"{kind} hook timed out after {timeout:g}s"
    except Exception as err:  # a hook that cannot reach the container fails
        return False, f"{kind} hook failed: {err}"
    return ok, message


def _port(value: int | str, context: ProbeContext) -> int:
    if isinstance(value, int) or str(value).isdigit():
        return int(value)
    if value in context.ports:
        return context.ports[value]
    raise ValueError(f"no container port named {value!r}")


async def _exec(spec: Mapping[str, Any], context: ProbeContext) -> tuple[bool, str]:
    command: Sequence[str] = spec.get("command") or []
    process = await asyncio.create_subprocess_exec(
        *context.exec_prefix,
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=dict(context.env),
        start_new_session=True,
    )
    try:
        out, _ = await process.communicate()
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        raise
    return process.returncode == 0, out.decode(errors="replace")[-1024:]


def _hosts(spec: Mapping[str, Any], context: ProbeContext) -> list[str]:
    """Where a network handler dials: its host, else the pod's address and, when the pod shares the host's
    network, the host's loopback too (a process there that binds all interfaces or only 127.0.0.1 never
    listens on the pod's own loopback address)."""
    if spec.get("host"):
        return [str(spec["host"])]
    return [context.pod_ip, *(["127.0.0.1"] if context.shares_host_network else [])]


async def _http(spec: Mapping[str, Any], context: ProbeContext) -> tuple[bool, str]:
    scheme = str(spec.get("scheme") or "HTTP").lower()
    path = spec.get("path") or "/"
    path = path if path.startswith("/") else "/" + path
    headers = {h["name"]: h["value"] for h in spec.get("httpHeaders") or []}
    headers.setdefault("User-Agent", "kube-probe/1.32")
    port = _port(spec["port"], context)
    hosts = _hosts(spec, context)
    async with httpx.AsyncClient(verify=False, trust_env=False) as client:  # the kubelet skips TLS checks
        for host in hosts[:-1]:
            with contextlib.suppress(httpx.ConnectError):
                response = await client.get(f"{scheme}://{host}:{port}{path}", headers=headers)
                break
        else:
            response = await client.get(f"{scheme}://{hosts[-1]}:{port}{path}", headers=headers)
    ok = 200 <= response.status_code < 400
    return ok, "" if ok else f"HTTP probe failed with statuscode: {response.status_code}"


async def _tcp(spec: Mapping[str, Any], context: ProbeContext) -> tuple[bool, str]:
    port = _port(spec["port"], context)
    hosts = _hosts(spec, context)
    for host in hosts[:-1]:
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection(host, port)
            break
    else:
        _, writer = await asyncio.open_connection(hosts[-1], port)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True, ""


def tick_run(probes: Mapping[str, Prober], now: float) -> Prober | None:
    """Steps a run's probes (see the module docstring); the startup or liveness probe that failed, if any."""
    startup = probes.get("startup")
    if startup is not None and startup.result is not True:
        startup.tick(now)
        return startup if startup.result is False else None
    liveness = probes.get("liveness")
    if liveness is not None:
        liveness.tick(now)
        if liveness.result is False:
            return liveness
    readiness = probes.get("readiness")
    if readiness is not None:
        readiness.tick(now)
    return None
