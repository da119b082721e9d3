"""Running a command in a process-mode container, and dialling a port inside a pod (exec, cp, port-forward).

All it needs of a container is its main process's pid, its environment and its working directory
(`ContainerProcess`). A command enters every namespace of that process that differs from localkube's own
(network and mount, so the pod's address, /etc/hosts, /tmp/ray and volumes; UTS for its hostname; IPC;
a user namespace where the pod has one; without a terminal, the PID namespace the container's processes
live in) with `nsenter`, and runs with the container's environment in its
working directory. Without a TTY it gets pipes (stdout and stderr apart); with one, a pseudo-terminal that
is its controlling terminal (`setsid --ctty`), whose window size the client sets.

Every command starts a session of its own: when it exits, or the client goes away, what is left of its
process group is killed (as the process node does with a container's group), so an exec leaves nothing
behind.

`dial` connects to `localhost:<port>` in the pod's network namespace, as the kubelet's port-forward does:
the socket is made by a short-lived thread that entered the namespace (a socket stays in the namespace it
was made in), then connected from the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import fcntl
import os
import pty
import shutil
import signal
import socket
import struct
import termios
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from localkube.node.errors import NodeError

READ_SIZE = 64 * 1024
# nsenter's option for each namespace a command may need to enter, in /proc/<pid>/ns/ names.
_NAMESPACES = (("user", "--user"), ("mnt", "--mount"), ("net", "--net"), ("uts", "--uts"), ("ipc", "--ipc"))
_CLONE_NEWNET = 0x40000000
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@dataclass(frozen=True)
class ContainerProcess:
    """What exec needs of a running container."""

    pid: int
    env: Mapping[str, str]
    cwd: str | None


class ExecError(NodeError):
    """The command could not be started (the message says why)."""


def _namespace(pid: int | str, kind: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/{kind}").st_ino
    except OSError:
        return None


def _nsenter_argv(container: ContainerProcess, *, terminal: bool = False) -> list[str]:
    nsenter = shutil.which("nsenter")
    if nsenter is None:
        raise ExecError("nsenter (util-linux) is not installed: localkube cannot enter a pod's namespaces")
    if _namespace(container.pid, "net") is None:
        raise ExecError(f"the container's process {container.pid} is gone")
    argv = [nsenter, f"--target={container.pid}"]
    argv += [
        flag for kind, flag in _NAMESPACES if _namespace(container.pid, kind) != _namespace("self", kind)
    ]
    # The process the node started stays outside the container's PID namespace, which it made for its
    # children: the command joins that one, as the container's own processes have. Not with a terminal: its
    # session (made outside) has a process group a job-control shell inside could not set back on exit.
    if not terminal and _namespace(container.pid, "pid_for_children") != _namespace("self", "pid"):
        argv.append(f"--pid=/proc/{container.pid}/ns/pid_for_children")
    argv.append(f"--wd={container.cwd}" if container.cwd else "--wd")
    return argv


class Execution:
    """A command running in a container: its output streams by channel (1 stdout, 2 stderr), its stdin,
    its terminal size, its exit."""

    def __init__(self, process: asyncio.subprocess.Process, terminal: int | None) -> None:
        self._process = process
        self._terminal = terminal
        self.readers: dict[int, Callable[[], Awaitable[bytes]]] = {}
        if terminal is not None:
            self.readers[1] = self._read_terminal
        else:
            for channel, stream in ((1, process.stdout), (2, process.stderr)):
                if stream is not None:
                    self.readers[channel] = (lambda s: lambda: s.read(READ_SIZE))(stream)

    @property
    def pid(self) -> int:
        return self._process.pid

    async def _read_terminal(self) -> bytes:
        """The terminal's output; b"" once nothing holds the terminal open any more (EIO)."""
        assert self._terminal is not None
        loop = asyncio.get_running_loop()
        ready = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(self._terminal, wake)
        try:
            await ready
        finally:
            loop.remove_reader(self._terminal)
        try:
            return os.read(self._terminal, READ_SIZE)
        except OSError as err:
            if err.errno == errno.EIO:
                return b""
            raise

    async def write_stdin(self, data: bytes) -> None:
        if self._terminal is not None:
            while data:
                try:
                    data = data[os.write(self._terminal, data) :]
                except BlockingIOError:
                    await asyncio.sleep(0.01)  # the terminal's input buffer is full until the command reads
            return
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.write(data)
            with contextlib.suppress(ConnectionError):
                await stdin.drain()

    def close_stdin(self) -> None:
        if self._terminal is not None:
            # A terminal has no end of input but its EOF character (what ^D sends).
            with contextlib.suppress(OSError):
                os.write(self._terminal, b"\x04")
        elif self._process.stdin is not None:
            self._process.stdin.close()

    def resize(self, width: int, height: int) -> None:
        if self._terminal is not None and width > 0 and height > 0:
            fcntl.ioctl(self._terminal, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))

    async def wait(self) -> int:
        """The exit code (128 + signal when a signal ended it, as a container runtime reports it)."""
        code = await self._process.wait()
        return 128 - code if code < 0 else code

    async def stop(self) -> None:
        """Kills what is left of the command's process group and reaps the command."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        await self._process.wait()
        if self._terminal is not None:
            os.close(self._terminal)
            self._terminal = None


async def start(
    container: ContainerProcess, argv: Sequence[str], *, stdin: bool, tty: bool, size: tuple[int, int] | None
) -> Execution:
    """Starts `argv` in the container (see the module docstring)."""
    command = [*_nsenter_argv(container, terminal=tty), "--", *argv]
    env = dict(container.env)
    if not tty:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        return Execution(process, None)
    setsid = shutil.which("setsid")
    if setsid is None:
        raise ExecError("setsid (util-linux) is not installed: localkube cannot give a command a terminal")
    controller, terminal = pty.openpty()
    if size is not None:
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    env.setdefault("TERM", "xterm")
    try:
        # setsid makes the command a session leader (its own process group) and the terminal its own.
        process = await asyncio.create_subprocess_exec(
            setsid, "--ctty", *command, stdin=terminal, stdout=terminal, stderr=terminal, env=env
        )
    except BaseException:
        os.close(controller)
        raise
    finally:
        os.close(terminal)
    os.set_blocking(controller, False)
    return Execution(process, controller)


def _socket_in_namespace(pid: int, family: socket.AddressFamily) -> socket.socket:
    """A TCP socket made in the network namespace of `pid`, by a thread that enters it and then ends."""
    made: list[socket.socket | BaseException] = []

    def make() -> None:
        try:
            if _namespace(pid, "net") != _namespace("self", "net"):
                libc = ctypes.CDLL(None, use_errno=True)
                with open(f"/proc/{pid}/ns/net", "rb") as namespace:
                    if libc.setns(namespace.fileno(), _CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), "setns into the pod's network namespace failed")
            made.append(socket.socket(family, socket.SOCK_STREAM))
        except BaseException as failure:
            made.append(failure)

    worker = threading.Thread(target=make, name="localkube-netns", daemon=True)
    worker.start()
    worker.join()
    (result,) = made
    if isinstance(result, BaseException):
        raise result
    return result


async def dial(pid: int, port: int) -> Connection:
    """A connection to `localhost:port` in the network namespace of `pid` (IPv4 first, then IPv6)."""
    loop = asyncio.get_running_loop()
    failure: OSError | None = None
    for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        sock = await loop.run_in_executor(None, _socket_in_namespace, pid, family)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, (address, port))
        except OSError as err:
            sock.close()
            failure = failure or err
            continue
        return await asyncio.open_connection(sock=sock)
    assert failure is not None
    raise failure
