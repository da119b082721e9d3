"""How the process kubelet starts a container: its environment and command line, its home directory, the
namespaces and mounts it runs in, and the process itself.

Every container has a home directory of its own (under `<data-dir>/kubelet/pods/<uid>/`, unless its env
sets HOME) whose .profile keeps PATH for login shells. Where the sandbox gives commands a mount namespace
(a network namespace; the host network with user namespaces) every pod also has a /tmp/ray of its own
(`<data-dir>/kubelet/pods/<uid>/ray`), shared by its containers and probes, so one pod's Ray session
directory does not meet another's, and its own hostname (the pod's name). Only /tmp/ray is the pod's own:
the rest of /tmp stays the host's, because localkube's interpreter or the files a pod is given may live
there (a checkout under /tmp, a test's temporary directory). Volumes are mounted in each container's own
mount namespace by `mountns.py`, which also gives the container a PID namespace; probes, lifecycle hooks
and exec enter the container's namespaces by the pid the kubelet started.

`Launcher.start` never waits: a container that cannot start yet (a missing ConfigMap) is given a time to try
again, one that cannot start at all ends as a StartError run, and the postStart hook runs as a task.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesemantics import times
from localkube.node import logs
from localkube.node.apiaccess import service_environment
from localkube.node.environment import (
    ContainerConfigError,
    MissingCommand,
    command_line,
    container_environment,
)
from localkube.node.kubelet import NodeOptions
from localkube.node.network import PodNetwork, Sandbox
from localkube.node.podstatus import Transitions, addresses
from localkube.node.podvolumes import Mount, PodVolumes
from localkube.node.probes import ProbeContext, Prober, run_hook
from localkube.node.supervision import ContainerState, RestartRules, Run, record_process
from localkube.node.volumes import VolumeError

# The program that mounts a container's volumes inside its mount namespace, then runs its command.
MOUNT_HELPER = Path(__file__).with_name("mountns.py")

Reader = Callable[[str, str, str], dict[str, Any] | None]


def stamp() -> str:
    """The kubelet's clock, as a metav1.Time."""
    return times.format_time(datetime.datetime.now(datetime.UTC))


@dataclass
class PodState:
    """What the kubelet keeps of one pod it runs: its sandbox, volumes and containers."""

    key: str
    uid: str
    name: str
    namespace: str
    ip: str
    started_at: str
    containers: list[ContainerState]
    hostname: str
    rules: RestartRules
    grace: float
    host_network: bool
    sandbox_task: asyncio.Task[Sandbox] | None = None
    sandbox: Sandbox | None = None
    transitions: Transitions = field(default_factory=dict)
    stopping: bool = False
    teardown: asyncio.Task[None] | None = None
    volumes: PodVolumes | None = None
    volumes_ready: bool = False
    next_sync: float = 0.0
    reported: set[str] = field(default_factory=set)  # FailedMount messages already recorded as Events

    def live_runs(self) -> Iterable[Run]:
        return (c.run for c in self.containers if c.run is not None)


class Launcher:
    """Starts the containers of the pods of one node (see the module docstring)."""

    def __init__(
        self,
        data_dir: Path,
        node: NodeOptions,
        network: PodNetwork,
        read: Reader,
        api_endpoint: Callable[[], tuple[str, int] | None],
        image_entrypoints: Mapping[str, tuple[str, ...]],
    ) -> None:
        self._data_dir = data_dir
        self._image_entrypoints = image_entrypoints
        self._node = node
        self._network = network
        self._read = read
        self._api_endpoint = api_endpoint
        self._unshare = shutil.which("unshare")
        self._nsenter = shutil.which("nsenter")

    def start(self, state: PodState, pod: dict[str, Any], container: ContainerState, now: float) -> None:
        assert state.sandbox is not None
        spec = container.spec
        pod_now = {
            **pod,
            "status": {**(pod.get("status") or {}), **addresses(self._node.host_ip, state.ip)},
        }
        try:
            declared = container_environment(pod_now, spec, self._read, self._node.capacity)
            env = {**self._base_environment(pod_now), **declared}
            argv = command_line(spec, env, self._image_entrypoints.get(spec.get("image", ""), ()))
            if "HOME" not in declared:
                env["HOME"] = self._home(state, container, env["PATH"])
        except MissingCommand as err:
            container.waiting = ("RunContainerError", str(err))
            container.restart_at = math.inf  # containers are immutable: it will never have a command
            return
        except ContainerConfigError as err:
            container.waiting = ("CreateContainerConfigError", str(err))
            container.restart_at = now + 1.0  # the ConfigMap or Secret may yet appear
            return
        try:
            mounts = self._mount_plan(state, pod, spec, env)
        except VolumeError as err:
            container.waiting = ("CreateContainerConfigError", str(err))
            container.restart_at = now + 1.0
            return
        container.waiting = None
        executable = shutil.which(argv[0], path=env.get("PATH")) if "/" not in argv[0] else argv[0]
        working_dir = spec.get("workingDir") or None
        problem = ""
        if executable is None:
            problem = f'exec: "{argv[0]}": executable file not found in $PATH'
        elif working_dir and not Path(working_dir).is_dir():
            problem = f'chdir to cwd ("{working_dir}") set in config.json failed: no such file or directory'
        restart = container.runs
        container.runs += 1
        if problem or executable is None:
            self._start_error(state, container, problem, now)
            return
        path = logs.log_path(self._data_dir, state.namespace, state.name, state.uid, container.name, restart)
        writer = logs.LogWriter(path)
        plan = self._mount_plan_file(state, container, mounts)
        helper = (sys.executable, "-I", "-S", str(MOUNT_HELPER), str(plan)) if plan is not None else ()
        try:
            process = subprocess.Popen(
                [*self._exec_prefix(state), *helper, executable, *argv[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=working_dir,
                start_new_session=True,
            )
        except OSError as err:
            writer.close()
            self._start_error(state, container, str(err), now)
            return
        assert process.stdout is not None and process.stderr is not None
        record_process(self.pod_dir(state), process.pid)
        writer.attach("stdout", process.stdout)
        writer.attach("stderr", process.stderr)
        ports = {p["name"]: int(p["containerPort"]) for p in spec.get("ports") or [] if p.get("name")}
        shares_host_network = state.host_network or not self._network.isolated
        prefix = self._entering(process.pid) if state.sandbox.private_mounts else self._exec_prefix(state)
        context = ProbeContext(state.ip, prefix, env, ports, shares_host_network)
        probes = {
            kind: Prober(kind, spec[f"{kind}Probe"], context, now)
            for kind in ("startup", "liveness", "readiness")
            if spec.get(f"{kind}Probe") and not container.init
        }
        container.run = Run(process, stamp(), now, probes, writer, context, setup=plan)
        post_start = (spec.get("lifecycle") or {}).get("postStart")
        if post_start:
            container.run.post_start = asyncio.get_running_loop().create_task(
                after_setup(container.run, lambda: run_hook("PostStart", post_start, context, state.grace))
            )

    def _mount_plan(
        self, state: PodState, pod: dict[str, Any], spec: dict[str, Any], env: dict[str, str]
    ) -> list[Mount]:
        assert state.sandbox is not None and state.volumes is not None
        mounts = state.volumes.mounts(pod, spec, env)
        if mounts and not state.sandbox.private_mounts:
            raise VolumeError(
                "volumeMounts need a mount namespace of the pod's own, which this node cannot make: run "
                "localkube as root, or where unprivileged user namespaces are allowed"
            )
        return mounts

    def _mount_plan_file(
        self, state: PodState, container: ContainerState, mounts: list[Mount]
    ) -> Path | None:
        """Where the sandbox gives every command a mount namespace: the plan for `mountns.py`, which mounts
        the container's volumes there and gives it a PID namespace."""
        assert state.sandbox is not None
        if not state.sandbox.private_mounts:
            return None
        plans = self.pod_dir(state) / "mounts"
        stage = plans / "stage"
        stage.mkdir(parents=True, exist_ok=True)
        plan = plans / f"{container.name}.json"
        plan.write_text(json.dumps({"stage": str(stage), "mounts": [m.plan() for m in mounts]}))
        return plan

    def _entering(self, pid: int) -> tuple[str, ...]:
        """The argv prefix that runs a command in the namespaces of a running container (its volumes, its
        processes, its network): probes and hooks run there, as in a real container. `pid` is the process
        the kubelet started; the container's own processes are in the PID namespace it made."""
        assert self._nsenter is not None
        spaces = ("--net",) if self._network.isolated else ("--user", "--preserve-credentials")
        children = f"--pid=/proc/{pid}/ns/pid_for_children"
        return (self._nsenter, f"--target={pid}", *spaces, "--mount", "--uts", children, "--")

    def pod_dir(self, state: PodState) -> Path:
        """The pod's kubelet directory: its /tmp/ray, its containers' homes, its process records."""
        return self._data_dir / "kubelet" / "pods" / state.uid

    def scratch(self, state: PodState) -> Path:
        """The pod's own /tmp/ray, on the host (when the sandbox has a mount namespace)."""
        return self.pod_dir(state) / "ray"

    def _home(self, state: PodState, container: ContainerState, path: str) -> str:
        """The container's own home directory, as its processes see it. Its .profile puts the container's
        PATH back for login shells (`bash -lc`, as KubeRay's commands use), which /etc/profile on many hosts
        resets to the system's, losing localkube's interpreter."""
        home = self.pod_dir(state) / ".home" / container.name
        home.mkdir(parents=True, exist_ok=True)
        (home / ".profile").write_text(
            "# Written by localkube: a login shell's /etc/profile may have reset PATH.\n"
            f"export PATH={shlex.quote(path)}\n"
        )
        return str(home)

    def _exec_prefix(self, state: PodState) -> tuple[str, ...]:
        """What runs a command inside the pod. When the sandbox gives every command a mount namespace of its
        own (`ip netns exec` does, and so does the user namespace of the host network), binding the pod's
        scratch directory over /tmp/ray there gives the pod one Ray directory of its own, shared by its
        containers and probes, and a UTS namespace gives it its own hostname (the pod's, which its hosts file maps to its
        address), as a real pod has."""
        assert state.sandbox is not None
        if not state.sandbox.private_mounts:
            return state.sandbox.exec_prefix
        scratch = str(self.scratch(state))
        if self._unshare is None:
            return (
                *state.sandbox.exec_prefix,
                "/bin/sh",
                "-c",
                'mount --bind "$0" /tmp/ray && exec "$@"',
                scratch,
            )
        script = 'mount --bind "$0" /tmp/ray && hostname "$1" && shift && exec "$@"'
        return (
            *state.sandbox.exec_prefix,
            self._unshare,
            "--uts",
            "/bin/sh",
            "-c",
            script,
            scratch,
            state.hostname,
        )

    def _start_error(self, state: PodState, container: ContainerState, message: str, now: float) -> None:
        """A container that could not be started counts as a run that ended at once (reason StartError)."""
        container.terminated = {
            "exitCode": 128,
            "reason": "StartError",
            "message": message,
            "startedAt": "1970-01-01T00:00:00Z",
            "finishedAt": stamp(),
            "containerID": "",
        }
        state.rules.after_exit(container, 128, 0.0, now)

    def _base_environment(self, pod: dict[str, Any]) -> dict[str, str]:
        """What every container starts from: the host's environment with localkube's interpreter first on
        PATH, and the pod's hostname."""
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        env["HOSTNAME"] = spec.get("hostname") or metadata["name"]
        endpoint = self._api_endpoint()
        if endpoint is not None:
            env.update(service_environment(*endpoint))
        return env


async def after_setup(
    run: Run, hook: Callable[[], Coroutine[Any, Any, tuple[bool, str]]]
) -> tuple[bool, str]:
    """Runs `hook` once the run's container is set up (a hook may need its mounts)."""
    while not run.set_up():
        await asyncio.sleep(0.02)
    return await hook()
