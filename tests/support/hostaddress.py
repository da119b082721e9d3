"""This machine's address on its default route, for a server the real control plane must reach on an address
that is not loopback (its EndpointSlices refuse 127.0.0.0/8, its service proxy dials global unicast only):
Kueue's webhook server and a Ray head's dashboard (tests/e2e/kueue)."""

from __future__ import annotations

import fcntl
import socket
import struct

_SIOCGIFADDR = 0x8915  # linux/sockios.h: an interface's IPv4 address
_RTF_GATEWAY = 0x2


def host_address() -> str:
    """This machine's IPv4 address on the interface of its default route: an address the API server can dial
    and that, unlike loopback, an Endpoints or EndpointSlice may hold. From /proc/net/route and one ioctl,
    so nothing is sent anywhere."""
    with open("/proc/net/route") as routes:
        rows = [line.split() for line in routes.read().splitlines()[1:]]
    defaults = [
        row[0] for row in rows if len(row) > 3 and row[1] == "00000000" and int(row[3], 16) & _RTF_GATEWAY
    ]
    if not defaults:
        raise RuntimeError("no default route: no address of this machine but loopback to serve on")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("256s", defaults[0][:15].encode())
        answer = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, request)
    # struct ifreq: the 16 bytes of the name, then a sockaddr_in (family, port, then the address).
    return socket.inet_ntoa(answer[20:24])
