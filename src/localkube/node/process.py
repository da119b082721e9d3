"""The kubelet of a node whose containers run as local processes (`--node-mode process`).

For each pod bound to the node: a sandbox on the pod network (`network.py`: its own network namespace as
root, the host's network otherwise), then the init containers one after the other, then the app
containers, each as a process in its own session and process group, started from the host's Python
environment (the image is not pulled; PATH starts with the directory of the running interpreter so
`python` and `ray` are localkube's). Environment and command line as the kubelet computes them
(`environment.py`), output captured to kubelet-style log files (`logs.py`), probes (`probes.py`).

The controller contract: `reconcile` never waits. Processes are spawned with a non-blocking Popen and
polled; probes and network setup run as asyncio tasks whose results the next reconcile collects; every
wait (a probe's period, a restart's back-off, a grace period, a process still running) is a recheck.
Status is computed from the per-pod state on every reconcile and written only when it changed, in the
kubelet's shapes (phase, conditions with transition times, container states with lastState, restartCount,
ready and started).

Supervision of each container's process group (stopping, restarts with back-off) is `supervision.py`;
the status, rendered from the per-container state, is `podstatus.py` (pure). A deleted pod's namespace and
logs are removed after its processes are gone; then the pod object is removed, as the simulated kubelet
does.

Every container has a home directory of its own (under `<data-dir>/kubelet/pods/<uid>/`, unless its env
sets HOME) whose .profile keeps PATH for login shells. Where the sandbox gives commands a mount namespace
(a network namespace; the host network with user namespaces) every pod also has a /tmp/ray of its own
(`<data-dir>/kubelet/pods/<uid>/ray`), shared by its containers and probes, so one pod's Ray session
directory does not meet another's, and its own hostname (the pod's name). Only /tmp/ray is the pod's own:
the rest of /tmp stays the host's, because localkube's interpreter or the files a pod is given may live
there (a checkout under /tmp, a test's temporary directory). A pod that had already finished when
localkube (re)started is never run again; a running one is started afresh (restart counts begin at 0).

Volumes (`podvolumes.py`) are set up after the sandbox and before any container, kept in sync every
`volume_sync` seconds, and mounted in each container's own mount namespace by `mountns.py`, which also
gives the container a PID namespace; probes, lifecycle hooks and exec (`exec.py`) enter the container's
namespaces by the pid the kubelet started. Pods get their ServiceAccount's credentials and the
`KUBERNETES_SERVICE_*` variables when the node is given the API server (`ProcessOptions.api`); on the
bridge a forwarder (`apiaccess.py`) takes them to it.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kubesemantics import times
from localkube.node import logs
from localkube.node.apiaccess import ApiAccess, Forwarder, service_environment
from localkube.node.environment import (
    ContainerConfigError,
    MissingCommand,
    command_line,
    container_environment,
)
from localkube.node.exec import ContainerProcess
from localkube.node.kubelet import PODS_PREFIX, NodeOptions, finish_deletion, register_node
from localkube.node.network import PodNetwork, Sandbox, hosts_file, pod_network
from localkube.node.podstatus import PodView, Transitions, addresses, failed, pod_status
from localkube.node.podvolumes import Mount, PodVolumes, unmount_leftovers
from localkube.node.probes import ProbeContext, Prober, run_hook, tick_run
from localkube.node.supervision import (
    MINIMUM_GRACE,
    ContainerState,
    Hook,
    RestartRules,
    Run,
    exit_code,
    kill_leftovers,
    record_process,
)
from localkube.node.volumes import Sources, VolumeError, automounts_token
from localkube.storage import Event
from localkube.storage.view import StoreView

log = logging.getLogger(__name__)

ENDPOINTS_PREFIX = "/registry/core/endpoints/"
# The reconcile key that rewrites every pod's hosts file (Endpoints changed).
HOSTS_KEY = ENDPOINTS_PREFIX
DEFAULT_GRACE = 30.0
# Ray keeps its sessions under /tmp/ray; a pod with a mount namespace gets its own there.
HOST_RAY_DIR = Path("/tmp/ray")
# The program that mounts a container's volumes inside its mount namespace, then runs its command.
MOUNT_HELPER = Path(__file__).with_name("mountns.py")
SHUTDOWN_SLACK = 10.0  # seconds past the shutdown grace before a stuck pod is left behind


@dataclass(frozen=True)
class ProcessOptions:
    """How the process kubelet runs pods. Back-off and polling are injectable so tests run in seconds."""

    data_dir: Path
    backoff_initial: float = 10.0
    backoff_max: float = 300.0
    poll_interval: float = 0.5
    shutdown_grace: float = 10.0
    # How often mounted ConfigMaps, Secrets, downward API files and tokens are brought up to date.
    volume_sync: float = 2.0
    # The API server pods reach (their service-account token, KUBERNETES_SERVICE_HOST); None: not served.
    api: ApiAccess | None = None


def _now() -> str:
    return times.format_time(datetime.datetime.now(datetime.UTC))


@dataclass
class _Pod:
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


class ProcessKubelet:
    """The kubelet of a node that runs pods as local processes (see the module docstring)."""

    name = "kubelet"

    def __init__(
        self,
        store: StoreView,
        options: NodeOptions,
        process_options: ProcessOptions,
        network: PodNetwork | None = None,
    ) -> None:
        self._store = store
        self._network = (
            network if network is not None else pod_network(process_options.data_dir / "kubelet" / "network")
        )
        # The node's address as its pods reach it: the bridge's, when pods have network namespaces.
        self._options = replace(
            options, host_ip=self._network.host_address or options.host_ip, runtime="localkube://process"
        )
        self._process_options = process_options
        kill_leftovers(process_options.data_dir / "kubelet" / "pods")
        unmount_leftovers(process_options.data_dir / "kubelet" / "pods")
        self._pods: dict[str, _Pod] = {}
        self._unshare = shutil.which("unshare")
        self._nsenter = shutil.which("nsenter")
        api = process_options.api
        gateway = self._network.host_address
        self._forwarder = Forwarder(api, gateway) if api is not None and gateway is not None else None
        self.prefixes: tuple[str, ...] = (
            (PODS_PREFIX, ENDPOINTS_PREFIX) if self._network.resolves_services else (PODS_PREFIX,)
        )

    @property
    def node_options(self) -> NodeOptions:
        """The node as this kubelet registers it (its address is the bridge's when pods have one)."""
        return self._options

    @property
    def network(self) -> PodNetwork:
        return self._network

    @property
    def api_endpoint(self) -> tuple[str, int] | None:
        """Where pods reach the API server (the `kubernetes` Service's endpoint), when this node has one."""
        api = self._process_options.api
        if api is None:
            return None
        return self._forwarder.address if self._forwarder is not None else (api.host, api.port)

    def register(self, create: Callable[[dict[str, Any]], object]) -> None:
        """Creates this kubelet's Node through the API's create path unless it exists."""
        register_node(self._store, self._options, create, datetime.datetime.now(datetime.UTC))

    def observe(self, event: Event) -> Iterable[str]:
        if event.key.startswith(ENDPOINTS_PREFIX):
            return [HOSTS_KEY]
        ours = (event.object.get("spec") or {}).get("nodeName") == self._options.name
        if (ours and event.type != "DELETED") or event.key in self._pods:
            return [event.key]
        return []

    def reconcile(self, key: str) -> float | None:
        if key == HOSTS_KEY:
            self._refresh_hosts()
            return None
        pod = self._store.get(key)
        ours = pod is not None and (pod.get("spec") or {}).get("nodeName") == self._options.name
        state = self._pods.get(key)
        terminating = pod is None or not ours or bool(pod["metadata"].get("deletionTimestamp"))
        if state is not None and (terminating or state.uid != (pod or {})["metadata"].get("uid")):
            if pod is None or state.uid != pod["metadata"].get("uid"):
                grace: float | None = MINIMUM_GRACE  # the pod is already gone from the API
            else:
                grace = pod["metadata"].get("deletionGracePeriodSeconds")
            if not self._stop(state, grace, remove_logs=True):
                return 0.05
            del self._pods[key]
            state = None
        if pod is None or not ours:
            return None
        if terminating:
            # A pod whose deletion a shutdown cut short (or a killed localkube) left its files behind.
            metadata = pod["metadata"]
            self._remove_files(metadata.get("namespace", ""), metadata["name"], str(metadata.get("uid", "")))
            finish_deletion(self._store, key, pod)
            return None
        if state is None:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return None  # finished before localkube restarted: never run again
            state = self._admit(key, pod)
        recheck = self._step(state, pod)
        status = self._status(state, pod)
        if status != pod.get("status"):
            self._store.update(key, {**pod, "status": status}, int(pod["metadata"]["resourceVersion"]))
        return recheck

    def container_process(self, namespace: str, name: str, container: str) -> ContainerProcess | None:
        """The running container's main process, environment and working directory (what `exec.py` needs
        to run a command in it or dial its pod); None when it is not running here."""
        state = self._pods.get(f"{PODS_PREFIX}{namespace}/{name}")
        if state is None or state.stopping:
            return None
        for candidate in state.containers:
            run = candidate.run
            if candidate.name == container and run is not None and run.stop_deadline is None:
                return ContainerProcess(run.process.pid, run.context.env, candidate.spec.get("workingDir"))
        return None

    async def shutdown(self) -> None:
        """Stops every process of every pod (grace periods capped by `shutdown_grace`), then removes every
        network namespace and the bridge. Pod objects and logs stay, for the next start."""
        grace = self._process_options.shutdown_grace
        now = time.monotonic()
        for state in self._pods.values():
            state.grace = min(state.grace, grace)
            # A stop already under way (a deleted pod, a failed probe) keeps its own deadline unless capped.
            for run in state.live_runs():
                run.hasten(now + grace)
        # Every run is SIGKILLed once its grace is over; a pod still not gone well after that is stuck, and
        # must not keep the node (and the launcher waiting on it) from releasing its mounts and network.
        deadline = now + grace + SHUTDOWN_SLACK
        try:
            while self._pods and time.monotonic() < deadline:
                for key, state in list(self._pods.items()):
                    if self._stop(state, None, remove_logs=False):
                        self._pods.pop(key, None)
                await asyncio.sleep(0.05)
            if self._pods:
                log.warning("shutdown: pods still stopping after the grace period: %s", ", ".join(self._pods))
        finally:
            # Whatever a pod's teardown did not reach (cut short, or stuck) is unmounted here.
            unmount_leftovers(self._process_options.data_dir / "kubelet" / "pods")
        if self._forwarder is not None:
            await self._forwarder.close()
        await self._network.close()

    # Admission and the sandbox.

    def _admit(self, key: str, pod: dict[str, Any]) -> _Pod:
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        previous_ip = (pod.get("status") or {}).get("podIP")
        state = _Pod(
            key=key,
            uid=str(metadata.get("uid", "")),
            name=metadata["name"],
            namespace=metadata.get("namespace", ""),
            ip=self._options.host_ip if spec.get("hostNetwork") else self._network.address(key, previous_ip),
            host_network=bool(spec.get("hostNetwork")),
            started_at=(pod.get("status") or {}).get("startTime") or _now(),
            containers=[
                *(ContainerState(c, init=True) for c in spec.get("initContainers") or []),
                *(ContainerState(c, init=False) for c in spec.get("containers") or []),
            ],
            hostname=spec.get("hostname") or metadata["name"],
            rules=RestartRules(
                spec.get("restartPolicy") or "Always",
                self._process_options.backoff_initial,
                self._process_options.backoff_max,
            ),
            grace=float(spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE)),
        )
        self._pods[key] = state
        return state

    def _sandbox_ready(self, state: _Pod, pod: dict[str, Any]) -> bool:
        """Starts or collects the creation of the pod's sandbox. A failure raises, and the runner retries the
        pod with back-off."""
        if state.sandbox is not None:
            return True
        if state.host_network:
            state.sandbox = Sandbox(state.ip)  # the node's own network, as `hostNetwork: true` asks
            return True
        task = state.sandbox_task
        if task is None:
            state.sandbox_task = asyncio.get_running_loop().create_task(self._create_sandbox(state))
            return False
        if not task.done():
            return False
        state.sandbox_task = None
        state.sandbox = task.result()
        if state.sandbox.private_mounts:
            HOST_RAY_DIR.mkdir(mode=0o1777, exist_ok=True)  # the mount point the pod's own is bound over
            self._scratch(state).mkdir(parents=True, exist_ok=True)
            self._scratch(state).chmod(0o1777)
        self._network.write_hosts(state.key, self._hosts(pod, state.ip))
        return True

    async def _create_sandbox(self, state: _Pod) -> Sandbox:
        sandbox = await self._network.create(state.key, state.uid)
        if self._forwarder is not None:
            await self._forwarder.start()  # the bridge exists from now on
        return sandbox

    def _hosts(self, pod: dict[str, Any], ip: str) -> str:
        return hosts_file(pod, ip, self._store.list(ENDPOINTS_PREFIX)[0])

    def _refresh_hosts(self) -> None:
        endpoints = self._store.list(ENDPOINTS_PREFIX)[0]  # once for every pod, not once per pod
        for key, state in self._pods.items():
            pod = self._store.get(key)
            if state.sandbox is not None and pod is not None:
                self._network.write_hosts(key, hosts_file(pod, state.ip, endpoints))

    # Containers.

    def _step(self, state: _Pod, pod: dict[str, Any]) -> float | None:
        """Moves the pod's containers on; returns when to look again."""
        if not self._sandbox_ready(state, pod):
            return 0.05
        now = time.monotonic()
        if not self._volumes_ready(state, pod, now):
            return 1.0
        for container in state.containers:
            if container.init:
                if container.succeeded:
                    continue
                self._step_container(state, pod, container, now)
                if not container.succeeded:
                    break  # the next init container waits for this one
            else:
                self._step_container(state, pod, container, now)
        recheck = self._recheck(state, now)
        return None if recheck is None else min(recheck, max(state.next_sync - now, 0.01))

    # Volumes.

    def _volumes_ready(self, state: _Pod, pod: dict[str, Any], now: float) -> bool:
        """Sets the pod's volumes up (once) and keeps them in sync (every `volume_sync`); False while they
        cannot be set up (a FailedMount Event says why)."""
        assert state.sandbox is not None
        if state.volumes is None:
            state.volumes = PodVolumes(
                self._pod_dir(state) / "volumes",
                self._sources(),
                api_access=self._mounts_api_access(pod, state.sandbox),
                may_mount=os.geteuid() == 0,
            )
        if state.volumes_ready and now < state.next_sync:
            return True
        try:
            if state.volumes_ready:
                state.volumes.sync(pod)
            else:
                state.volumes.setup(pod)
                state.volumes_ready = True
        except VolumeError as err:
            self._warning(state, "FailedMount", str(err))
        state.next_sync = now + self._process_options.volume_sync
        return state.volumes_ready

    def _sources(self) -> Sources:
        api = self._process_options.api
        return Sources(
            self._read,
            api.issue_token if api is not None else None,
            api.ca_cert if api is not None else b"",
            self._options.capacity,
        )

    def _mounts_api_access(self, pod: dict[str, Any], sandbox: Sandbox) -> bool:
        """Whether the pod gets its service-account credentials: when it asks (or does not refuse), when
        this node can mount them (a mount namespace) and issue tokens, and when its ServiceAccount exists
        (a pod of a missing one runs without credentials, where a real cluster refuses the pod)."""
        if self._process_options.api is None or not sandbox.private_mounts:
            return False
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        account = self._read(
            "serviceaccounts", metadata.get("namespace", ""), spec.get("serviceAccountName") or "default"
        )
        return account is not None and automounts_token(pod, account)

    def _warning(self, state: _Pod, reason: str, message: str) -> None:
        """Records a Warning Event on the pod (FailedMount once per message), as the kubelet reports it."""
        log.warning("pod %s: %s: %s", state.key, reason, message)
        if reason == "FailedMount" and message in state.reported:
            return
        state.reported.add(message)
        stamp = _now()
        name = f"{state.name}.{uuid.uuid4().hex[:16]}"
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": state.namespace, "uid": str(uuid.uuid4()), "creationTimestamp": stamp},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": state.name, "namespace": state.namespace,
                               "uid": state.uid},
            "reason": reason,
            "message": message,
            "source": {"component": "kubelet", "host": self._options.name},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": "Warning",
            "reportingComponent": "kubelet",
            "reportingInstance": self._options.name,
        }  # fmt: skip
        self._store.create(f"/registry/core/events/{state.namespace}/{name}", event)

    def _step_container(
        self, state: _Pod, pod: dict[str, Any], container: ContainerState, now: float
    ) -> None:
        if failed(state.containers):
            return
        run = container.run
        if run is not None:
            if run.process.poll() is None:
                if run.stop_deadline is not None:
                    run.gone(now)  # SIGKILL when the grace period is over
                elif not run.set_up():
                    pass  # its mounts are still being made: no hook or probe yet
                elif run.post_start is not None:
                    self._post_started(state, container, run, now)
                else:
                    failing = tick_run(run.probes, now)
                    if failing is not None:
                        self._kill_for_probe(state, container, run, failing, now)
                return
            self._finish_run(state, container, run, now)
        if container.done or now < container.restart_at:
            return
        self._start(state, pod, container, now)

    def _finish_run(self, state: _Pod, container: ContainerState, run: Run, now: float) -> None:
        for prober in run.probes.values():
            prober.cancel()
        run.signal(signal.SIGKILL)  # what is left of the container once its main process is gone
        assert run.process.returncode is not None
        code = exit_code(run.process.returncode)
        container.terminated = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": run.started_at,
            "finishedAt": _now(),
            "containerID": run.container_id,
        }
        container.run = None
        state.rules.after_exit(container, code, now - run.started, now)

    def _start(self, state: _Pod, pod: dict[str, Any], container: ContainerState, now: float) -> None:
        assert state.sandbox is not None
        spec = container.spec
        pod_now = {
            **pod,
            "status": {**(pod.get("status") or {}), **addresses(self._options.host_ip, state.ip)},
        }
        try:
            declared = container_environment(pod_now, spec, self._read, self._options.capacity)
            env = {**self._base_environment(pod_now), **declared}
            argv = command_line(spec, env)
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
        path = logs.log_path(
            self._process_options.data_dir, state.namespace, state.name, state.uid, container.name, restart
        )
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
        record_process(self._pod_dir(state), process.pid)
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
        container.run = Run(process, _now(), now, probes, writer, context, setup=plan)
        post_start = (spec.get("lifecycle") or {}).get("postStart")
        if post_start:
            container.run.post_start = asyncio.get_running_loop().create_task(
                self._after_setup(
                    container.run, lambda: run_hook("PostStart", post_start, context, state.grace)
                )
            )

    def _mount_plan(
        self, state: _Pod, pod: dict[str, Any], spec: dict[str, Any], env: dict[str, str]
    ) -> list[Mount]:
        assert state.sandbox is not None and state.volumes is not None
        mounts = state.volumes.mounts(pod, spec, env)
        if mounts and not state.sandbox.private_mounts:
            raise VolumeError(
                "volumeMounts need a mount namespace of the pod's own, which this node cannot make: run "
                "localkube as root, or where unprivileged user namespaces are allowed"
            )
        return mounts

    def _mount_plan_file(self, state: _Pod, container: ContainerState, mounts: list[Mount]) -> Path | None:
        """Where the sandbox gives every command a mount namespace: the plan for `mountns.py`, which mounts
        the container's volumes there and gives it a PID namespace."""
        assert state.sandbox is not None
        if not state.sandbox.private_mounts:
            return None
        plans = self._pod_dir(state) / "mounts"
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

    def _pod_dir(self, state: _Pod) -> Path:
        """The pod's kubelet directory: its /tmp/ray, its containers' homes, its process records."""
        return self._process_options.data_dir / "kubelet" / "pods" / state.uid

    def _scratch(self, state: _Pod) -> Path:
        """The pod's own /tmp/ray, on the host (when the sandbox has a mount namespace)."""
        return self._pod_dir(state) / "ray"

    def _home(self, state: _Pod, container: ContainerState, path: str) -> str:
        """The container's own home directory, as its processes see it. Its .profile puts the container's
        PATH back for login shells (`bash -lc`, as KubeRay's commands use), which /etc/profile on many hosts
        resets to the system's, losing localkube's interpreter."""
        home = self._pod_dir(state) / ".home" / container.name
        home.mkdir(parents=True, exist_ok=True)
        (home / ".profile").write_text(
            "# Written by localkube: a login shell's /etc/profile may have reset PATH.\n"
            f"export PATH={shlex.quote(path)}\n"
        )
        return str(home)

    def _exec_prefix(self, state: _Pod) -> tuple[str, ...]:
        """What runs a command inside the pod. When the sandbox gives every command a mount namespace of its
        own (`ip netns exec` does, and so does the user namespace of the host network), binding the pod's
        scratch directory over /tmp/ray there gives the pod one Ray directory of its own, shared by its
        containers and probes, and a UTS namespace gives it its own hostname (the pod's, which its hosts file maps to its
        address), as a real pod has."""
        assert state.sandbox is not None
        if not state.sandbox.private_mounts:
            return state.sandbox.exec_prefix
        scratch = str(self._scratch(state))
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

    def _start_error(self, state: _Pod, container: ContainerState, message: str, now: float) -> None:
        """A container that could not be started counts as a run that ended at once (reason StartError)."""
        stamp = _now()
        container.terminated = {
            "exitCode": 128,
            "reason": "StartError",
            "message": message,
            "startedAt": "1970-01-01T00:00:00Z",
            "finishedAt": stamp,
            "containerID": "",
        }
        state.rules.after_exit(container, 128, 0.0, now)

    @staticmethod
    async def _after_setup(
        run: Run, hook: Callable[[], Coroutine[Any, Any, tuple[bool, str]]]
    ) -> tuple[bool, str]:
        """Runs `hook` once the run's container is set up (a hook may need its mounts)."""
        while not run.set_up():
            await asyncio.sleep(0.02)
        return await hook()

    def _post_started(self, state: _Pod, container: ContainerState, run: Run, now: float) -> None:
        """Collects the postStart hook: the run's probes start after it; a failure kills the run."""
        assert run.post_start is not None
        if not run.post_start.done():
            return
        ok, message = run.post_start.result()
        run.post_start = None
        if not ok:
            self._warning(state, "FailedPostStartHook", message.strip())
            run.begin_stop(state.grace, now, self._pre_stop(container, run))

    def _pre_stop(self, container: ContainerState, run: Run) -> Hook | None:
        """The container's preStop hook, to run in the run's namespaces before it is sent SIGTERM."""
        spec = (container.spec.get("lifecycle") or {}).get("preStop")
        if not spec:
            return None

        async def hook(timeout: float) -> tuple[bool, str]:
            ok, message = await self._after_setup(
                run, lambda: run_hook("PreStop", spec, run.context, timeout)
            )
            if not ok:
                log.warning("container %s: preStop hook failed: %s", container.name, message.strip())
            return ok, message

        return hook

    def _kill_for_probe(
        self, state: _Pod, container: ContainerState, run: Run, prober: Prober, now: float
    ) -> None:
        log.info(
            "pod %s: container %s failed %s probe (%s), will be restarted",
            state.key,
            container.name,
            prober.kind,
            prober.message.strip(),
        )
        grace = prober.spec.get("terminationGracePeriodSeconds")
        run.begin_stop(
            float(grace) if grace is not None else state.grace, now, self._pre_stop(container, run)
        )

    def _stop(self, state: _Pod, grace: float | None, *, remove_logs: bool) -> bool:
        """One step of stopping the whole pod; True once its processes and its sandbox are gone."""
        now = time.monotonic()
        if not state.stopping:
            state.stopping = True
            if state.sandbox_task is not None:
                state.sandbox_task.cancel()
            for container in state.containers:
                if container.run is not None:
                    hook = self._pre_stop(container, container.run)
                    container.run.begin_stop(state.grace if grace is None else float(grace), now, hook)
        gone = [run.gone(now) for run in state.live_runs()]  # every run polled (and killed when due)
        if not all(gone):
            return False
        if state.teardown is None:
            for run in state.live_runs():
                run.writer.close()
            if state.volumes is not None:
                state.volumes.teardown()
            state.teardown = asyncio.get_running_loop().create_task(self._network.destroy(state.key))
            if remove_logs:
                self._remove_files(state.namespace, state.name, state.uid)
        if not state.teardown.done():
            return False
        if not state.teardown.cancelled() and state.teardown.exception() is not None:
            log.error("pod %s: removing its sandbox failed: %s", state.key, state.teardown.exception())
        return True

    def _remove_files(self, namespace: str, name: str, uid: str) -> None:
        """Removes a deleted pod's logs and kubelet directory."""
        if not uid:
            return  # every stored pod has one; never the pods directory itself
        data_dir = self._process_options.data_dir
        shutil.rmtree(logs.pod_log_dir(data_dir, namespace, name, uid), ignore_errors=True)
        shutil.rmtree(data_dir / "kubelet" / "pods" / uid, ignore_errors=True)

    def _recheck(self, state: _Pod, now: float) -> float | None:
        if failed(state.containers) and not any(state.live_runs()):
            return None
        waits: list[float] = []
        for container in state.containers:
            if container.run is not None:
                waits.append(self._process_options.poll_interval)
                if container.run.stop_deadline is not None:
                    waits.append(container.run.stop_deadline - now)
                waits.extend(p.next_at - now for p in container.run.probes.values())
            elif not container.done and container.restart_at != math.inf:
                waits.append(container.restart_at - now)
        return max(min(waits), 0.01) if waits else None

    # Status.

    def _status(self, state: _Pod, pod: dict[str, Any]) -> dict[str, Any]:
        view = PodView(
            state.name,
            state.namespace,
            state.uid,
            state.ip,
            self._options.host_ip,
            state.started_at,
            state.sandbox is not None,
        )
        status, state.transitions = pod_status(view, state.containers, pod, state.transitions, _now())
        return status

    # Inputs.

    def _read(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._store.get(f"/registry/core/{plural}/{namespace}/{name}")

    def _base_environment(self, pod: dict[str, Any]) -> dict[str, str]:
        """What every container starts from: the host's environment with localkube's interpreter first on
        PATH, and the pod's hostname."""
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        env["HOSTNAME"] = spec.get("hostname") or metadata["name"]
        if self.api_endpoint is not None:
            env.update(service_environment(*self.api_endpoint))
        return env
