"""pods/exec and pods/attach over WebSocket: the channel protocols of `kubectl exec`, `kubectl cp`,
`kubectl attach` and the official clients.

    GET /api/v1/namespaces/{ns}/pods/{name}/exec?command=sh&command=-c&...&container=c
        &stdin=true&stdout=true&stderr=true&tty=false        (Upgrade: websocket)

Subprotocols, the client's most preferred first: `v5.channel.k8s.io`, `v4.channel.k8s.io`,
`v3.channel.k8s.io`, `v2.channel.k8s.io`, `channel.k8s.io`. Every binary message starts with its channel:
0 stdin (client to server), 1 stdout, 2 stderr, 3 error, 4 resize (v3+: `{"Width": w, "Height": h}`),
255 close (v5: `[255, channel]`, the client has no more stdin). The error channel ends the session: from
v4 on a `Status` (Success, or Failure with reason NonZeroExitCode and an `ExitCode` cause the client turns
into its exit code); before v4 only a failure's text. With a TTY, stderr is the terminal too.

pods/attach takes the same options without a command; the session then carries what the container
writes from now on, until it stops.

The request is checked as the API server checks it (the pod exists, is bound and not completed, the
container is the pod's, at least one stream, a command) before the upgrade, so a refusal is a Status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from localkube.server import errors
from localkube.server.errors import ApiError
from localkube.server.streams import Disconnected, Messages

log = logging.getLogger(__name__)

PROTOCOLS = (
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
)
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


class Process(Protocol):
    """What a session runs: a command in a container (`localkube.node.exec.Execution`), or an attachment to
    a container's output."""

    readers: dict[int, Callable[[], Awaitable[bytes]]]  # by channel (1 stdout, 2 stderr): b"" at the end

    async def write_stdin(self, data: bytes) -> None: ...

    def close_stdin(self) -> None: ...

    def resize(self, width: int, height: int) -> None: ...

    async def wait(self) -> int: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True)
class ExecOptions:
    container: str
    command: list[str]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def flag(values: Sequence[str]) -> bool:
    return bool(values) and values[-1].lower() in ("true", "1")


def exec_options(
    pod: dict[str, Any], container: str, query: dict[str, list[str]], *, attach: bool
) -> ExecOptions:
    """The request's options, checked as the API server checks them (an attach has no command)."""
    name = pod["metadata"]["name"]
    if not (pod.get("spec") or {}).get("nodeName"):
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        verb = "attach to" if attach else "exec into"
        raise errors.bad_request(f"cannot {verb} a container in a completed pod; current phase is {phase}")
    options = ExecOptions(
        container,
        list(query.get("command") or []),
        flag(query.get("stdin", [])),
        flag(query.get("stdout", [])),
        flag(query.get("stderr", [])),
        flag(query.get("tty", [])),
    )
    if not (options.stdin or options.stdout or options.stderr):
        raise errors.bad_request("you must specify at least 1 of stdin, stdout, stderr")
    if not options.command and not attach:
        raise errors.bad_request("you must specify at least one command for the container")
    return options


def _exit_status(protocol: str, command: Sequence[str], code: int) -> bytes | None:
    """What the error channel says at the end (None: nothing, a success before v4)."""
    versioned = protocol in PROTOCOLS[:2]
    if code == 0:
        return orjson.dumps({"metadata": {}, "status": "Success"}) if versioned else None
    message = f"command terminated with non-zero exit code: error executing command {list(command)}, exit code {code}"
    if not versioned:
        return message.encode()
    return orjson.dumps(
        {
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
        }
    )


def _failure(protocol: str, error: ApiError) -> bytes:
    if protocol in PROTOCOLS[:2]:
        return orjson.dumps(error.status())
    return error.message.encode()


async def serve(
    socket: Messages,
    protocol: str,
    options: ExecOptions,
    start: Callable[[tuple[int, int] | None], Awaitable[Process]],
    *,
    stdin_ends: bool = False,
) -> None:
    """Runs one exec session on an accepted WebSocket (or SPDY streams as its channels, `spdyexec.py`) until
    the command ends or the client goes. The CLOSE message ends stdin in v5, and in any protocol with
    `stdin_ends` (a transport that can say so: SPDY's FIN on the stdin stream)."""
    try:
        execution = await start(None)
    except ApiError as error:
        with contextlib.suppress(Disconnected):
            await socket.send(bytes([ERROR]) + _failure(protocol, error))
        await socket.close()
        return
    inbound = asyncio.ensure_future(
        _inbound(socket, execution, protocol, stdin_ends or protocol == PROTOCOLS[0])
    )
    wanted = {STDOUT: options.stdout, STDERR: options.stderr}
    pumps = [
        asyncio.ensure_future(_pump(socket, channel, read, wanted[channel]))
        for channel, read in execution.readers.items()
    ]
    finished = asyncio.ensure_future(_finish(execution, pumps))
    try:
        await asyncio.wait({inbound, finished}, return_when=asyncio.FIRST_COMPLETED)
        if finished.done():
            status = _exit_status(protocol, options.command, finished.result())
            if status is not None:
                await socket.send(bytes([ERROR]) + status)
            await socket.close()
    except Disconnected:
        pass
    finally:
        for task in (inbound, finished, *pumps):
            task.cancel()
        await asyncio.gather(inbound, finished, *pumps, return_exceptions=True)
        await execution.stop()


async def _finish(execution: Process, pumps: Sequence[asyncio.Future[None]]) -> int:
    """The exit code, once the command has exited and its output has been sent."""
    code = await execution.wait()
    with contextlib.suppress(TimeoutError):
        # A background child may hold the pipes open; what it writes after this is not waited for.
        await asyncio.wait_for(asyncio.gather(*pumps), timeout=1.0)
    return code


async def _pump(socket: Messages, channel: int, read: Callable[[], Awaitable[bytes]], send: bool) -> None:
    """Sends a stream's output on its channel; a stream the client did not ask for is read and dropped, so
    that the command never blocks on a full pipe."""
    while data := await read():
        if send:
            await socket.send(bytes([channel]) + data)


async def _inbound(socket: Messages, execution: Process, protocol: str, stdin_ends: bool) -> None:
    """The client's messages: stdin, terminal sizes, and (v5, SPDY) the end of stdin."""
    while True:
        message = await socket.receive()
        if not message:
            continue
        channel, data = message[0], message[1:]
        if channel == STDIN and data:
            await execution.write_stdin(data)
        elif channel == RESIZE and protocol not in PROTOCOLS[3:]:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                size = orjson.loads(data)
                execution.resize(int(size.get("Width", 0)), int(size.get("Height", 0)))
        elif channel == CLOSE and stdin_ends and data[:1] == bytes([STDIN]):
            execution.close_stdin()
