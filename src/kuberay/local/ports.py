"""Loopback ports for the processes `kuberay local up` starts: chosen here, bound by the child moments later.

A port the kernel picks (a bind to port 0) comes from its ephemeral range, and once the picking socket is
closed the kernel may hand the same port to any outgoing connection on the machine before the child binds
it; on a busy machine the operator then failed to start (`address already in use`). So `free_port` picks
below that range, where the kernel assigns nothing on its own, and above the fixed ports a local Ray or
Kubernetes uses (Ray's worker ports end at 19999); it falls back to the kernel's pick only where the
range leaves no room.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST_PICKED = 20000
# The range where the kernel assigns ports on its own: Linux's setting, else the IANA dynamic range
# (macOS and the BSDs use it).
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
IANA_DYNAMIC = (49152, 65535)
ATTEMPTS = 64


def ephemeral_range() -> tuple[int, int]:
    try:
        low, high = EPHEMERAL_RANGE_FILE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return IANA_DYNAMIC


def port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:`port` now (with SO_REUSEADDR, as uvicorn and localkube
    bind)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(ephemeral: tuple[int, int] | None = None) -> int:
    """A loopback port free now, outside the kernel's ephemeral range (`ephemeral`, else the system's) when
    there is room below it."""
    low, _ = ephemeral or ephemeral_range()
    candidates = range(LOWEST_PICKED, low)
    for port in random.sample(candidates, min(len(candidates), ATTEMPTS)):
        if port_free(port):
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        picked: int = s.getsockname()[1]
        return picked
