"""The streaming pod subresources: pods/exec, pods/attach and pods/portforward.

`PodStreams.prepare` checks a request as the API server does (the pod, its container, the options, the
subprotocol) and returns the session to run once the WebSocket is accepted; a refusal is an ApiError,
answered before the upgrade. Sessions run against the process-mode node (`localkube.node.exec`), found
through `lookup` (namespace, pod, container -> the container's process, or None when it is not running).

What is not served, with the reason in the refusal:
- a node in simulate mode (no `lookup`) has no processes to enter;
- pods/attach: a process-mode container's stdin is closed and its output goes to its log;
- SPDY upgrades (`Upgrade: SPDY/3.1`, the fallback of older clients): uvicorn hands the application no raw
  connection to speak SPDY on. kubectl 1.30+ uses WebSockets for exec and port-forward by default, and its
  port-forward tunnels SPDY through the WebSocket, which is served (`portforward.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from localkube.node import exec as node_exec
from localkube.node.exec import ContainerProcess, Execution
from localkube.server import errors, portforward, remotecommand
from localkube.server.errors import ApiError
from localkube.server.rest import Resources
from localkube.server.routing import Target
from localkube.server.streams import WebSocket, negotiate
from localkube.server.subresources import pod_container

SUBRESOURCES = frozenset({"exec", "attach", "portforward"})
# (namespace, pod, container) -> the running container's process, or None.
Lookup = Callable[[str, str, str], ContainerProcess | None]
Session = Callable[[WebSocket], Awaitable[None]]

SPDY_REFUSED = (
    "localkube serves pods/{sub} over WebSocket only (subprotocols {protocols}); SPDY upgrades are not "
    "supported: use a client that speaks WebSockets (kubectl 1.30 and later do by default)"
)
SIMULATED = (
    "pods on localkube's simulated node run no processes: exec, attach and port-forward need "
    "`localkube serve --node-mode process`"
)
ATTACH_REFUSED = (
    "localkube's process node cannot attach to a container: its stdin is closed and its output goes to its "
    "log; use `kubectl logs -f` to follow the output, or `kubectl exec`"
)


class PodStreams:
    def __init__(self, resources: Resources) -> None:
        self._resources = resources
        self.lookup: Lookup | None = None  # set once a process-mode node runs

    def prepare(self, target: Target, query: dict[str, list[str]], offered: Sequence[str]) -> Session:
        """The session a request asks for, once checked; ApiError when it is refused."""
        assert target.name is not None and target.namespace is not None and target.subresource is not None
        pod = self._resources.get(target.resource_type, target.namespace, target.name)
        if target.subresource == "portforward":
            wanted = portforward.ports(query.get("ports", []))
            protocol = _protocol(offered, portforward.PROTOCOLS, "portforward")
            lookup = self._runtime()
            dial = partial(self._dial, lookup, pod)
            if protocol == portforward.TUNNEL_PROTOCOL:
                return _session(protocol, partial(portforward.serve_tunnel, dial=dial, pod=target.name))
            if not wanted:
                raise errors.bad_request("at least one port must be specified")
            run = partial(portforward.serve_channels, dial=dial, pod=target.name, wanted=wanted)
            return _session(protocol, run)
        container = pod_container(pod, target.name, (query.get("container") or [""])[-1])
        options = remotecommand.exec_options(pod, container, query)
        protocol = _protocol(offered, remotecommand.PROTOCOLS, target.subresource)
        lookup = self._runtime()
        if target.subresource == "attach":
            raise errors.bad_request(ATTACH_REFUSED)
        start = partial(self._exec, lookup, target.namespace, target.name, options)
        return _session(
            protocol, partial(remotecommand.serve, protocol=protocol, options=options, start=start)
        )

    def _runtime(self) -> Lookup:
        if self.lookup is None:
            raise errors.bad_request(SIMULATED)
        return self.lookup

    @staticmethod
    def _running(lookup: Lookup, namespace: str, pod: str, container: str) -> ContainerProcess:
        process = lookup(namespace, pod, container)
        if process is None:
            raise errors.bad_request(f'unable to upgrade connection: container not found ("{container}")')
        return process

    async def _exec(
        self,
        lookup: Lookup,
        namespace: str,
        pod: str,
        options: remotecommand.ExecOptions,
        size: tuple[int, int] | None,
    ) -> Execution:
        process = self._running(lookup, namespace, pod, options.container)
        try:
            return await node_exec.start(
                process, options.command, stdin=options.stdin, tty=options.tty, size=size
            )
        except node_exec.ExecError as failure:
            raise ApiError(500, "InternalError", f"error executing command in container: {failure}") from None

    async def _dial(self, lookup: Lookup, pod: dict[str, object], port: int) -> node_exec.Connection:
        metadata = pod["metadata"]
        spec = pod.get("spec")
        assert isinstance(metadata, dict) and isinstance(spec, dict)
        for container in spec.get("containers") or []:
            process = lookup(metadata["namespace"], metadata["name"], container.get("name", ""))
            if process is not None:
                return await node_exec.dial(process.pid, port)
        raise ConnectionError(f"no container of pod {metadata['name']} is running")

    @staticmethod
    def refuse_upgrade(target: Target) -> ApiError:
        """The answer to a request for a streaming subresource that is not a WebSocket (SPDY)."""
        sub = target.subresource or ""
        protocols = portforward.PROTOCOLS if sub == "portforward" else remotecommand.PROTOCOLS
        return errors.bad_request(SPDY_REFUSED.format(sub=sub, protocols=", ".join(protocols)))


def _protocol(offered: Sequence[str], supported: Sequence[str], sub: str) -> str:
    protocol = negotiate(offered, supported)
    if protocol is None:
        raise errors.bad_request(
            f"unable to upgrade pods/{sub}: none of the subprotocols {', '.join(offered)} is supported "
            f"(supported: {', '.join(supported)})"
        )
    return protocol


def _session(protocol: str, run: Callable[[WebSocket], Awaitable[None]]) -> Session:
    async def session(socket: WebSocket) -> None:
        await socket.accept(protocol or None)
        await run(socket)

    return session
