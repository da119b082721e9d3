"""Free loopback ports for the processes the tests start (the kernel picks; the port is free when returned)."""

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
