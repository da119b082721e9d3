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

How a container is started (its environment, home directory, namespaces and mounts, the process itself) is
`launch.py`. A pod that had already finished when localkube (re)started is never run again; a running one
is started afresh (restart counts begin at 0).

Volumes (`podvolumes.py`) are set up after the sandbox and before any container and kept in sync every
`volume_sync` seconds; a volume that cannot be set up is a FailedMount Warning Event (`controllers.events`).
Pods get their ServiceAccount's credentials and the `KUBERNETES_SERVICE_*` variables when the node is given
the API server (`ProcessOptions.api`); on the bridge a forwarder (`apiaccess.py`) takes them to it, and
the node's cluster DNS (`dns.py`) answers their queries.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import math
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kubesemantics import times
from localkube.controllers import events
from localkube.node import logs
from localkube.node.apiaccess import ApiAccess, Forwarder
from localkube.node.dns import ClusterDns, HostResolvers, resolv_conf, service_records
from localkube.node.exec import ContainerProcess
from localkube.node.kubelet import PODS_PREFIX, NodeOptions, finish_deletion, register_node
from localkube.node.launch import Launcher, PodState, after_setup, stamp
from localkube.node.network import (
    CLUSTER_DOMAIN,
    PodNetwork,
    Sandbox,
    hosts_file,
    pod_network,
    service_address,
)
from localkube.node.podstatus import PodView, failed, pod_status
from localkube.node.podvolumes import PodVolumes, unmount_leftovers
from localkube.node.probes import Prober, run_hook, tick_run
from localkube.node.supervision import (
    MINIMUM_GRACE,
    ContainerState,
    Hook,
    RestartRules,
    Run,
    exit_code,
    kill_leftovers,
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
    # What an image runs when its container gives neither command nor args (`--image-entrypoint`): the
    # image's ENTRYPOINT, which a real kubelet reads from the image and this one, pulling none, is told.
    image_entrypoints: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


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
        self._pods: dict[str, PodState] = {}
        api = process_options.api
        gateway = self._network.host_address
        self._forwarder = Forwarder(api, gateway) if api is not None and gateway is not None else None
        self._host_resolvers = HostResolvers(exclude=gateway)
        self._dns = self._cluster_dns(gateway)
        self._launcher = Launcher(
            process_options.data_dir,
            self._options,
            self._network,
            self._read,
            lambda: self.api_endpoint,
            process_options.image_entrypoints,
        )
        self.prefixes: tuple[str, ...] = (
            (PODS_PREFIX, ENDPOINTS_PREFIX) if self._network.resolves_services else (PODS_PREFIX,)
        )

    def _cluster_dns(self, gateway: str | None) -> ClusterDns | None:
        """The DNS server pods on the bridge use; none on the host's network, whose resolvers they reach."""
        if gateway is None or not self._network.isolated:
            return None
        try:
            return ClusterDns(gateway, self._network.cidr, upstreams=self._host_resolvers.nameservers)
        except OSError as err:
            log.warning(
                "cluster DNS cannot listen on %s:53 (%s): pods resolve Service names only", gateway, err
            )
            return None

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
            self._store.replace(key, {**pod, "status": status}, int(pod["metadata"]["resourceVersion"]))
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
        if self._dns is not None:
            await self._dns.close()
        await self._network.close()

    # Admission and the sandbox.

    def _admit(self, key: str, pod: dict[str, Any]) -> PodState:
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        previous_ip = (pod.get("status") or {}).get("podIP")
        state = PodState(
            key=key,
            uid=str(metadata.get("uid", "")),
            name=metadata["name"],
            namespace=metadata.get("namespace", ""),
            ip=self._options.host_ip if spec.get("hostNetwork") else self._network.address(key, previous_ip),
            host_network=bool(spec.get("hostNetwork")),
            started_at=(pod.get("status") or {}).get("startTime") or stamp(),
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

    def _sandbox_ready(self, state: PodState, pod: dict[str, Any]) -> bool:
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
            self._launcher.scratch(state).mkdir(parents=True, exist_ok=True)
            self._launcher.scratch(state).chmod(0o1777)
        self._network.write_hosts(state.key, self._hosts(pod, state.ip))
        if self._dns is not None:
            resolv = resolv_conf(pod, self._dns.address[0], self._host_resolvers, CLUSTER_DOMAIN)
            self._network.write_resolv(state.key, resolv)
        return True

    async def _create_sandbox(self, state: PodState) -> Sandbox:
        sandbox = await self._network.create(state.key, state.uid)
        if self._forwarder is not None:
            await self._forwarder.start()  # the bridge exists from now on
        if self._dns is not None:
            self._dns.records = self._dns_records(self._store.list(ENDPOINTS_PREFIX)[0])
            await self._dns.start()
        return sandbox

    @staticmethod
    def _dns_records(endpoints: list[dict[str, Any]]) -> dict[str, str]:
        return service_records(endpoints, service_address, CLUSTER_DOMAIN)

    def _hosts(self, pod: dict[str, Any], ip: str) -> str:
        return hosts_file(pod, ip, self._store.list(ENDPOINTS_PREFIX)[0])

    def _refresh_hosts(self) -> None:
        endpoints = self._store.list(ENDPOINTS_PREFIX)[0]  # once for every pod, not once per pod
        if self._dns is not None:
            self._dns.records = self._dns_records(endpoints)
        for key, state in self._pods.items():
            pod = self._store.get(key)
            if state.sandbox is not None and pod is not None:
                self._network.write_hosts(key, hosts_file(pod, state.ip, endpoints))

    # Containers.

    def _step(self, state: PodState, pod: dict[str, Any]) -> float | None:
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

    def _volumes_ready(self, state: PodState, pod: dict[str, Any], now: float) -> bool:
        """Sets the pod's volumes up (once) and keeps them in sync (every `volume_sync`); False while they
        cannot be set up (a FailedMount Event says why)."""
        assert state.sandbox is not None
        if state.volumes is None:
            state.volumes = PodVolumes(
                self._launcher.pod_dir(state) / "volumes",
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

    def _warning(self, state: PodState, reason: str, message: str) -> None:
        """Records a Warning Event on the pod (FailedMount once per message), as the kubelet reports it."""
        log.warning("pod %s: %s: %s", state.key, reason, message)
        if reason == "FailedMount" and message in state.reported:
            return
        state.reported.add(message)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": state.name, "namespace": state.namespace, "uid": state.uid},
        }
        now = datetime.datetime.now(datetime.UTC)
        event = events.event_object("kubelet", pod, reason, message, now, "Warning", host=self._options.name)
        # Written to the store as the pod's status is, so the fields the REST layer would add are set here.
        event["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=times.format_time(now))
        self._store.create(f"/registry/core/events/{state.namespace}/{event['metadata']['name']}", event)

    def _step_container(
        self, state: PodState, pod: dict[str, Any], container: ContainerState, now: float
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
        self._launcher.start(state, pod, container, now)

    def _finish_run(self, state: PodState, container: ContainerState, run: Run, now: float) -> None:
        for prober in run.probes.values():
            prober.cancel()
        run.signal(signal.SIGKILL)  # what is left of the container once its main process is gone
        assert run.process.returncode is not None
        code = exit_code(run.process.returncode)
        container.terminated = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": run.started_at,
            "finishedAt": stamp(),
            "containerID": run.container_id,
        }
        container.run = None
        state.rules.after_exit(container, code, now - run.started, now)

    def _post_started(self, state: PodState, container: ContainerState, run: Run, now: float) -> None:
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
            ok, message = await after_setup(run, lambda: run_hook("PreStop", spec, run.context, timeout))
            if not ok:
                log.warning("container %s: preStop hook failed: %s", container.name, message.strip())
            return ok, message

        return hook

    def _kill_for_probe(
        self, state: PodState, container: ContainerState, run: Run, prober: Prober, now: float
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

    def _stop(self, state: PodState, grace: float | None, *, remove_logs: bool) -> bool:
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

    def _recheck(self, state: PodState, now: float) -> float | None:
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

    def _status(self, state: PodState, pod: dict[str, Any]) -> dict[str, Any]:
        view = PodView(
            state.name,
            state.namespace,
            state.uid,
            state.ip,
            self._options.host_ip,
            state.started_at,
            state.sandbox is not None,
        )
        status, state.transitions = pod_status(view, state.containers, pod, state.transitions, stamp())
        return status

    # Inputs.

    def _read(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._store.get(f"/registry/core/{plural}/{namespace}/{name}")
