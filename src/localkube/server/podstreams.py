"""The streaming pod subresources: pods/exec, pods/attach and pods/portforward.

`PodStreams.prepare` checks a request as the API server does (the pod, its container, the options, the
subprotocol) and returns the session to run once the upgrade is accepted; a refusal is an ApiError,
answered before the upgrade. The upgrade is a WebSocket (`streams.py`; kubectl 1.30+, the official
clients) or SPDY/3.1 (`spdyupgrade.py`; client-go's SPDY executor and dialer, older kubectl), which serves
what the kubelet serves over it: exec and attach on streams (`spdyexec.py`), port-forward's SPDY session
(`portforward.py`). Sessions run against the process-mode node (`ProcessNode`): exec and
port-forward through `localkube.node.exec` with the container's process, attach by following the
container's log (its stdout and stderr apart) from now on until the container stops.

What is not served, with the reason in the refusal:
- a node in simulate mode (no `ProcessNode`) has no processes to enter;
- pods/attach with stdin or a TTY: a process-mode container's stdin is closed, and it has no terminal;
- a request that is no upgrade at all (a plain POST): there is nothing to stream on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from localkube.node import exec as node_exec
from localkube.node.exec import ContainerProcess, Execution
from localkube.server import errors, portforward, remotecommand, spdyexec
from localkube.server.errors import ApiError
from localkube.server.rest import Resources
from localkube.server.routing import Target
from localkube.server.spdyupgrade import SpdyUpgrade
from localkube.server.streams import Socket, negotiate
from localkube.server.subresources import pod_container

SUBRESOURCES = frozenset({"exec", "attach", "portforward"})
# (namespace, pod, container) -> the running container's process, or None.
Lookup = Callable[[str, str, str], ContainerProcess | None]
# (namespace, pod, container, "stdout" or "stderr", stop) -> what the container writes on that stream from
# now on, until `stop()` is true.
Output = Callable[[str, str, str, str, Callable[[], bool]], AsyncIterator[bytes]]
Session = Callable[[Socket], Awaitable[None]]


@dataclass(frozen=True)
class ProcessNode:
    """What the streaming subresources use of the process-mode node."""

    lookup: Lookup
    output: Output


NOT_UPGRADED = (
    "unable to upgrade pods/{sub}: the request asks for neither a WebSocket (Upgrade: websocket) nor "
    "SPDY/3.1 (Connection: Upgrade, Upgrade: SPDY/3.1)"
)
SIMULATED = (
    "pods on localkube's simulated node run no processes: exec, attach and port-forward need "
    "`localkube serve --node-mode process`"
)
ATTACH_REFUSED = (
    "localkube's process node starts containers with stdin closed and without a terminal: attach can only "
    "follow a container's output (no -i, no -t); use `kubectl exec -it` for a shell"
)


class PodStreams:
    def __init__(self, resources: Resources) -> None:
        self._resources = resources
        self.node: ProcessNode | None = None  # set once a process-mode node runs

    def prepare(
        self,
        target: Target,
        query: dict[str, list[str]],
        offered: Sequence[str],
        spdy_handshake: Callable[[Sequence[str]], str] | None = None,
    ) -> Session:
        """The session a request asks for, once checked; ApiError when it is refused. `offered` are a
        WebSocket's subprotocols; a SPDY upgrade gives instead its `spdy_handshake`, which picks one of the
        protocols served over SPDY (or refuses, as the kubelet's handshake does)."""
        assert target.name is not None and target.namespace is not None and target.subresource is not None
        pod = self._resources.get(target.resource_type, target.namespace, target.name)
        if target.subresource == "portforward":
            wanted = portforward.ports(query.get("ports", []))
            if spdy_handshake is not None:
                protocol = spdy_handshake(portforward.SPDY_PROTOCOLS)
            else:
                protocol = _protocol(offered, portforward.PROTOCOLS, "portforward")
            lookup = self._node().lookup
            dial = partial(self._dial, lookup, pod)
            if spdy_handshake is not None or protocol in portforward.TUNNEL_PROTOCOLS:
                return _session(protocol, partial(portforward.serve_tunnel, dial=dial, pod=target.name))
            if not wanted:
                raise errors.bad_request("at least one port must be specified")
            run = partial(portforward.serve_channels, dial=dial, pod=target.name, wanted=wanted)
            return _session(protocol, run)
        container = pod_container(pod, target.name, (query.get("container") or [""])[-1])
        attach = target.subresource == "attach"
        options = remotecommand.exec_options(pod, container, query, attach=attach)
        if spdy_handshake is not None:
            protocol = spdy_handshake(spdyexec.PROTOCOLS)
        else:
            protocol = _protocol(offered, remotecommand.PROTOCOLS, target.subresource)
        node = self._node()
        self._running(node.lookup, target.namespace, target.name, container)  # checked again at the start
        start: Callable[[tuple[int, int] | None], Awaitable[remotecommand.Process]]
        if attach:
            if options.stdin or options.tty:
                raise errors.bad_request(ATTACH_REFUSED)
            start = partial(self._attach, node, target.namespace, target.name, options.container)
        else:
            start = partial(self._exec, node.lookup, target.namespace, target.name, options)
        if spdy_handshake is not None:
            return _spdy_session(
                protocol, partial(spdyexec.serve, protocol=protocol, options=options, start=start)
            )
        run = partial(remotecommand.serve, protocol=protocol, options=options, start=start)
        return _session(protocol, run)

    def _node(self) -> ProcessNode:
        if self.node is None:
            raise errors.bad_request(SIMULATED)
        return self.node

    async def _attach(
        self, node: ProcessNode, namespace: str, pod: str, container: str, size: tuple[int, int] | None
    ) -> remotecommand.Process:
        self._running(node.lookup, namespace, pod, container)

        def stopped() -> bool:
            return node.lookup(namespace, pod, container) is None

        outputs = {
            channel: node.output(namespace, pod, container, stream, stopped)
            for channel, stream in ((remotecommand.STDOUT, "stdout"), (remotecommand.STDERR, "stderr"))
        }
        return _Attachment(outputs)

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

    async def _dial(self, lookup: Lookup, pod: dict[str, Any], port: int) -> node_exec.Connection:
        """A connection to the port in the pod's network namespace, entered through any running container."""
        metadata = pod["metadata"]
        for container in (pod.get("spec") or {}).get("containers") or []:
            process = lookup(metadata["namespace"], metadata["name"], container.get("name", ""))
            if process is not None:
                return await node_exec.dial(process.pid, port)
        raise ConnectionError(f"no container of pod {metadata['name']} is running")


def is_stream_path(path: str) -> bool:
    """Whether `path` names a pod's exec, attach or portforward (as an upgrade request must)."""
    segments = [segment for segment in path.split("/") if segment]
    return (
        len(segments) == 7
        and segments[:3] == ["api", "v1", "namespaces"]
        and segments[4] == "pods"
        and segments[6] in SUBRESOURCES
    )


def not_upgraded(target: Target) -> ApiError:
    """The answer to a request for a streaming subresource that asks for no upgrade."""
    return errors.bad_request(NOT_UPGRADED.format(sub=target.subresource or ""))


class _Attachment:
    """An attach session's process: the container's output streams; it ends when the container stops."""

    def __init__(self, outputs: dict[int, AsyncIterator[bytes]]) -> None:
        self._outputs = outputs
        self._ended = {channel: asyncio.Event() for channel in outputs}
        self.readers: dict[int, Callable[[], Awaitable[bytes]]] = {
            channel: partial(self._read, channel) for channel in outputs
        }

    async def _read(self, channel: int) -> bytes:
        try:
            return await anext(self._outputs[channel])
        except StopAsyncIteration:
            self._ended[channel].set()
            return b""

    async def write_stdin(self, data: bytes) -> None:
        """Never asked for: an attach with stdin is refused."""

    def close_stdin(self) -> None:
        """Nothing to close."""

    def resize(self, width: int, height: int) -> None:
        """No terminal to size."""

    async def wait(self) -> int:
        for ended in self._ended.values():
            await ended.wait()
        return 0

    async def stop(self) -> None:
        for output in self._outputs.values():
            aclose = getattr(output, "aclose", None)
            if aclose is not None:
                await aclose()


def _protocol(offered: Sequence[str], supported: Sequence[str], sub: str) -> str:
    protocol = negotiate(offered, supported)
    if protocol is None:
        raise errors.bad_request(
            f"unable to upgrade pods/{sub}: none of the subprotocols {', '.join(offered)} is supported "
            f"(supported: {', '.join(supported)})"
        )
    return protocol


def _session(protocol: str, run: Callable[[Socket], Awaitable[None]]) -> Session:
    async def session(socket: Socket) -> None:
        await socket.accept(protocol or None)
        await run(socket)

    return session


def _spdy_session(protocol: str, run: Callable[[SpdyUpgrade], Awaitable[None]]) -> Session:
    """A session that needs the SPDY connection itself (exec's streams), not only its bytes."""

    async def session(socket: Socket) -> None:
        assert isinstance(socket, SpdyUpgrade)
        await socket.accept(protocol)
        await run(socket)

    return session
