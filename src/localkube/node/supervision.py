"""Supervision of container processes: one run of a container as a process group, and the restart rules.

A container is its process group: when its main process exits, what remains of the group is killed, as a
container runtime kills what is left in a container. Stopping a run (liveness or startup failure, pod
deletion, shutdown) sends SIGTERM to the group and to every descendant that left it, then SIGKILL when the
grace period ends, so `ray start --block` and the daemons it forks stop together (never `ray stop`, which
kills every Ray process on the host by name).

Restarts follow restartPolicy (an init container restarts on failure unless the policy is Never) with the
kubelet's back-off: the first restart at once, then `initial` doubling up to `cap`, reset after a run of
twice the cap. Every run's process group is recorded under the pod's directory with its start time, so a
kubelet started after one that died unclean can stop what that one left (`kill_leftovers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localkube.node import logs
from localkube.node.probes import ProbeContext, Prober

log = logging.getLogger(__name__)

# A lifecycle hook to run, given the time it may take; it returns success and a message.
Hook = Callable[[float], Coroutine[Any, Any, tuple[bool, str]]]

# What a run still gets after SIGKILL before its leftovers (zombies nobody reaps) are given up on; also the
# kubelet's minimum grace period.
MINIMUM_GRACE = 2.0


def exit_code(returncode: int) -> int:
    """Popen's return code as the kubelet reports it (a signal N is 128+N)."""
    return 128 - returncode if returncode < 0 else returncode


def descendants(pid: int) -> set[int]:
    """Every live descendant of `pid`, from /proc (a process that started its own session included)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot: with its pid, it names one process for good."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()[19]


def record_process(pod_dir: Path, pid: int) -> None:
    """Notes a container's process group so that a later start can stop it if this one died unclean."""
    pod_dir.mkdir(parents=True, exist_ok=True)
    with (pod_dir / "processes").open("a") as f:
        f.write(f"{pid} {_start_time(pid)}\n")


def kill_leftovers(pods_dir: Path) -> None:
    """Kills the process groups that an earlier kubelet on this directory started and did not stop (it was
    killed itself): containers of pods that this kubelet will start afresh."""
    for record in pods_dir.glob("*/processes"):
        for line in record.read_text().splitlines():
            pid, _, started = line.partition(" ")
            if pid.isdigit() and _start_time(int(pid)) == started:
                log.warning("stopping process group %s left by an earlier run", pid)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(int(pid), signal.SIGKILL)
        record.unlink()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Run:
    """One run of a container: its process (a group leader) and what belongs to this run, with its
    lifecycle hooks: `post_start` runs while the run starts (its probes wait for it), a preStop hook given
    to `begin_stop` runs before SIGTERM, within the grace period (the kubelet's order)."""

    process: subprocess.Popen[bytes]
    started_at: str
    started: float  # monotonic
    probes: dict[str, Prober]
    writer: logs.LogWriter
    context: ProbeContext
    setup: Path | None = None  # the mount plan, which mountns.py removes once the container is set up
    post_start: asyncio.Task[tuple[bool, str]] | None = None
    pre_stop: asyncio.Task[tuple[bool, str]] | None = None
    stop_deadline: float | None = None
    terminated: bool = False  # SIGTERM sent
    strays: set[int] = field(default_factory=set)  # descendants outside the group, seen at SIGTERM

    @property
    def container_id(self) -> str:
        return f"process://{self.process.pid}"

    def set_up(self) -> bool:
        """Whether the container's namespaces are ready (its volumes mounted): hooks and probes may run."""
        if self.setup is not None and not self.setup.exists():
            self.setup = None
        return self.setup is None

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)
        for pid in self.strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def begin_stop(self, grace: float, now: float, pre_stop: Hook | None = None) -> None:
        if self.stop_deadline is not None:
            return
        for prober in self.probes.values():
            prober.cancel()
        if self.post_start is not None:
            self.post_start.cancel()
        self.stop_deadline = now + grace
        if pre_stop is not None and self.process.poll() is None:
            self.pre_stop = asyncio.get_running_loop().create_task(pre_stop(grace))
        else:
            self._terminate()

    def hasten(self, deadline: float) -> None:
        """Ends a stop already under way by `deadline` at the latest (SIGKILL then), as shutdown needs."""
        if self.stop_deadline is not None:
            self.stop_deadline = min(self.stop_deadline, deadline)

    def _terminate(self) -> None:
        self.terminated = True
        self.strays = descendants(self.process.pid) - {self.process.pid}
        self.signal(signal.SIGTERM)

    def gone(self, now: float) -> bool:
        """Polls the run: SIGTERM once its preStop hook is over, SIGKILL once its grace period is. True when
        nothing of it is left."""
        exited = self.process.poll() is not None
        if exited and not _group_alive(self.process.pid):
            if self.pre_stop is not None:
                self.pre_stop.cancel()
            return True
        if self.stop_deadline is None:
            return False
        if not self.terminated and (
            self.pre_stop is None or self.pre_stop.done() or now >= self.stop_deadline
        ):
            if self.pre_stop is not None and not self.pre_stop.done():
                self.pre_stop.cancel()
            self._terminate()
            # The kubelet gives a container whose preStop hook used up the grace period 2 s more.
            self.stop_deadline = max(self.stop_deadline, now + MINIMUM_GRACE)
            return False
        if now >= self.stop_deadline:
            self.signal(signal.SIGKILL)
            # After SIGKILL only reaping is left; a group that still shows up holds zombies nobody waits on.
            return exited and now >= self.stop_deadline + MINIMUM_GRACE
        return False


@dataclass
class ContainerState:
    """A container of a pod across its runs: the current run, the last termination, the restart schedule."""

    spec: dict[str, Any]
    init: bool
    runs: int = 0
    run: Run | None = None
    terminated: dict[str, Any] | None = None  # the last run's termination
    waiting: tuple[str, str] | None = None  # a reason and message that keep it from starting
    done: bool = False  # terminated for good
    restart_at: float = 0.0
    delay: float = 0.0  # the wait before the pending restart
    backoff: float = 0.0  # the wait before the next restart after an exit

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def succeeded(self) -> bool:
        return self.done and self.terminated is not None and self.terminated["exitCode"] == 0


@dataclass(frozen=True)
class RestartRules:
    """The pod's restartPolicy with the kubelet's back-off (first restart at once, then `initial` doubling
    up to `cap`)."""

    policy: str
    initial: float
    cap: float

    def restarts(self, container: ContainerState, code: int) -> bool:
        policy = "OnFailure" if container.init and self.policy == "Always" else self.policy
        return policy == "Always" or (policy == "OnFailure" and code != 0)

    def after_exit(self, container: ContainerState, code: int, ran: float, now: float) -> None:
        """Schedules the container's restart after a run that ended with `code` after `ran` seconds, or marks
        it done for good when the policy does not restart it."""
        if not self.restarts(container, code):
            container.done = True
            return
        if ran > 2 * self.cap:
            container.backoff = 0.0  # the kubelet forgets the back-off of a container that ran long enough
        container.delay = container.backoff
        container.restart_at = now + container.delay
        container.backoff = min(max(container.backoff * 2, self.initial), self.cap)
