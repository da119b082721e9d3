"""The cluster DNS of a node whose pods have network namespaces: what CoreDNS's `kubernetes cluster.local`
and `forward . /etc/resolv.conf` do for a real cluster.

Pods on localkube's bridge reach nothing off it, so neither the host's resolvers (often on the host's
loopback, as systemd-resolved's 127.0.0.53) nor any other. The node answers DNS itself, on the bridge's
address, port 53 (UDP and TCP), from the host's network: names under the cluster domain from the
Endpoints (`<svc>.<ns>.svc.<domain>`, the same one address the pod's hosts file gives it, and
`<hostname>.<svc>.<ns>.svc.<domain>` for endpoints with a hostname, as a headless Service's), and
`<a-b-c-d>.<ns>.pod.<domain>` as CoreDNS's `pods insecure`; a name there that is none of these is
NXDOMAIN, never asked upstream. So is the pod network's reverse zone, which no outside resolver knows.
Every other query is forwarded to the nameservers of the host's /etc/resolv.conf (read again when it
changes), one after the other: over UDP, again over TCP when the answer comes truncated, each within what
is left of `FORWARD_TIMEOUT` (less than a pod resolver's own 5 s, so a pod hears SERVFAIL rather than
nothing when every upstream fails). The wire format is dnspython's.

`resolv_conf` renders a pod's /etc/resolv.conf as the kubelet does for its `dnsPolicy` and `dnsConfig`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import dns.asyncquery
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.resolver
import dns.rrset

log = logging.getLogger(__name__)

DNS_PORT = 53
HOST_RESOLV_CONF = Path("/etc/resolv.conf")
FORWARD_TIMEOUT = 4.0
TTL = 5  # CoreDNS's kubernetes plugin's default
_UDP_LIMIT = 512  # a client without EDNS takes no larger UDP answer
# Linux's IP_FREEBIND (Python 3.11's socket module lacks the name): bind an address not yet configured.
_IP_FREEBIND = getattr(socket, "IP_FREEBIND", 15)
# The kubelet's limits on a pod's resolv.conf (validation refuses more).
_MAX_NAMESERVERS = 3
_MAX_SEARCHES = 32

Upstreams = Callable[[], list[str]]


def service_records(
    endpoints: Iterable[Mapping[str, Any]], address: Callable[[Mapping[str, Any]], str | None], domain: str
) -> dict[str, str]:
    """The A records of the cluster domain: each Service with an address (`address` picks the endpoint it
    stands for), and each endpoint that has a hostname under its Service."""
    records: dict[str, str] = {}
    for endpoint in endpoints:
        metadata = endpoint.get("metadata") or {}
        service = f"{metadata.get('name', '')}.{metadata.get('namespace', '')}.svc.{domain}."
        for subset in endpoint.get("subsets") or []:
            for field in ("addresses", "notReadyAddresses"):
                for found in subset.get(field) or []:
                    if found.get("hostname") and found.get("ip"):
                        records.setdefault(f"{found['hostname']}.{service}".lower(), str(found["ip"]))
        chosen = address(endpoint)
        if chosen is not None:
            records[service.lower()] = chosen
    return records


class ClusterDns:
    """The DNS server (see the module docstring). Its sockets are bound on construction (before the bridge
    has its address: IP_FREEBIND), so a taken port is known when the node starts; it serves from `start`."""

    def __init__(
        self,
        host: str,
        pods: ipaddress.IPv4Network,
        domain: str = "cluster.local",
        port: int = DNS_PORT,
        upstreams: Upstreams | None = None,
        upstream_port: int = DNS_PORT,
    ) -> None:
        self._zone = dns.name.from_text(domain)
        self._reverse = dns.name.from_text(_reverse_zone(pods))
        self._soa = dns.rrset.from_text(
            self._zone, TTL, "IN", "SOA", f"ns.dns.{domain}. hostmaster.{domain}. 1 7200 1800 86400 {TTL}"
        )
        self.records: Mapping[str, str] = {}
        self._upstreams = upstreams or HostResolvers(exclude=host).nameservers
        self._upstream_port = upstream_port
        self._udp, self._tcp = _bind_pair(host, port)
        self.address: tuple[str, int] = (host, self._udp.getsockname()[1])
        self._transport: asyncio.DatagramTransport | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        if self._server is not None:
            return
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.create_datagram_endpoint(lambda: _Datagrams(self), sock=self._udp)
        self._tcp.listen(64)
        self._server = await asyncio.start_server(self._stream, sock=self._tcp)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._transport is not None:
            self._transport.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        self._udp.close()
        self._tcp.close()
        self._server = self._transport = None

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def answer(self, wire: bytes, udp: bool) -> bytes | None:
        """The reply to one query (None: not a query worth a reply)."""
        try:
            query = dns.message.from_wire(wire)
        except dns.exception.DNSException:
            return None
        if query.flags & dns.flags.QR:
            return None
        if query.opcode() != dns.opcode.QUERY or len(query.question) != 1:
            response = dns.message.make_response(query)
            response.set_rcode(dns.rcode.NOTIMP if query.opcode() != dns.opcode.QUERY else dns.rcode.FORMERR)
        else:
            question = query.question[0]
            local = question.name.is_subdomain(self._zone) or question.name.is_subdomain(self._reverse)
            response = self._local(query) if local else await self._forward(query)
        limit = max(_UDP_LIMIT, query.payload if query.edns >= 0 else 0) if udp else 65535
        return response.to_wire(max_size=limit, prefer_truncation=True)

    def _local(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        question = query.question[0]
        address = self._lookup(question.name)
        if address is not None and question.rdtype in (dns.rdatatype.A, dns.rdatatype.ANY):
            response.answer.append(dns.rrset.from_text(question.name, TTL, "IN", "A", address))
            return response
        if question.name == self._zone and question.rdtype == dns.rdatatype.SOA:
            response.answer.append(self._soa)
            return response
        if address is None and question.name != self._zone:
            response.set_rcode(dns.rcode.NXDOMAIN)
        response.authority.append(self._soa)  # a negative answer names its zone, for the resolver's cache
        return response

    def _lookup(self, name: dns.name.Name) -> str | None:
        text = name.to_text().lower()
        if text in self.records:
            return self.records[text]
        labels = name.relativize(self._zone).labels if name.is_subdomain(self._zone) else ()
        if len(labels) == 3 and labels[2] == b"pod":  # <a-b-c-d>.<namespace>.pod
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                return str(ipaddress.IPv4Address(labels[0].decode().replace("-", ".")))
        return None

    async def _forward(self, query: dns.message.Message) -> dns.message.Message:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FORWARD_TIMEOUT
        for server in self._upstreams():
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):
                    response, _ = await dns.asyncquery.udp_with_fallback(
                        query, server, timeout=remaining, port=self._upstream_port
                    )
                return response
            except (TimeoutError, OSError, dns.exception.DNSException) as err:
                log.debug("upstream nameserver %s failed for %s: %r", server, query.question[0].name, err)
        response = dns.message.make_response(query)
        response.set_rcode(dns.rcode.SERVFAIL)
        return response

    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """DNS over TCP: length-prefixed queries, answered in turn, until the client closes."""
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(2), "big")
                reply = await self.answer(await reader.readexactly(size), udp=False)
                if reply is None:
                    break
                writer.write(len(reply).to_bytes(2, "big") + reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, OSError):
            pass
        finally:
            writer.close()


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, server: ClusterDns) -> None:
        self._server = server
        self._transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # The selector loop's datagram transport does not derive from the DatagramTransport it implements.
        self._transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self._server._spawn(self._reply(data, addr))

    async def _reply(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        reply = await self._server.answer(data, udp=True)
        if reply is not None and self._transport is not None and not self._transport.is_closing():
            self._transport.sendto(reply, addr)


class HostResolvers:
    """The nameservers, search list and options of the host's resolv.conf, read again when it changes."""

    def __init__(self, path: Path = HOST_RESOLV_CONF, exclude: str | None = None) -> None:
        self._path = path
        self._exclude = exclude  # the cluster DNS itself: forwarding to it would loop
        self._stamp: tuple[int, int] | None = None
        self._nameservers: list[str] = []
        self._search: list[str] = []
        self._options: list[str] = []

    def _read(self) -> None:
        try:
            stat = os.stat(self._path)
        except OSError:
            self._stamp, self._nameservers, self._search, self._options = None, [], [], []
            return
        if (stat.st_mtime_ns, stat.st_ino) == self._stamp:
            return
        self._stamp = (stat.st_mtime_ns, stat.st_ino)
        resolver = dns.resolver.Resolver(configure=False)
        try:
            resolver.read_resolv_conf(str(self._path))
        except (dns.resolver.NoResolverConfiguration, OSError, ValueError):
            self._nameservers = []
        else:
            self._nameservers = [str(n) for n in resolver.nameservers if str(n) != self._exclude]
        self._search = [s.to_text(omit_final_dot=True) for s in resolver.search]
        self._options = []
        with contextlib.suppress(OSError, UnicodeDecodeError):
            for line in self._path.read_text().splitlines():
                words = line.split()
                if words[:1] == ["options"]:
                    self._options += words[1:]

    def nameservers(self) -> list[str]:
        self._read()
        return list(self._nameservers)

    def search(self) -> list[str]:
        self._read()
        return list(self._search)

    def options(self) -> list[str]:
        self._read()
        return list(self._options)


def resolv_conf(
    pod: Mapping[str, Any], nameserver: str, host: HostResolvers, domain: str = "cluster.local"
) -> str:
    """A pod's /etc/resolv.conf as the kubelet writes it. ClusterFirst (the default) names the cluster DNS
    and searches the pod's namespace, `svc` and the domain before the host's list, with `ndots:5`;
    Default takes the host's search list and options, with the cluster DNS as its nameserver (the only
    one a pod on the bridge reaches, and it forwards); None only `dnsConfig`; `dnsConfig` is added to
    either, its options replacing those of the same name."""
    spec = pod.get("spec") or {}
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    config = spec.get("dnsConfig") or {}
    nameservers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    if policy in ("ClusterFirst", "ClusterFirstWithHostNet"):
        nameservers = [nameserver]
        searches = [f"{namespace}.svc.{domain}", f"svc.{domain}", domain, *host.search()]
        options = ["ndots:5"]
    elif policy == "Default":
        nameservers, searches, options = [nameserver], host.search(), host.options()
    nameservers += [str(n) for n in config.get("nameservers") or []]
    for search in config.get("searches") or []:
        if search not in searches:
            searches.append(str(search))
    for option in config.get("options") or []:
        name = str(option.get("name", ""))
        options = [o for o in options if o.split(":", 1)[0] != name]
        options.append(f"{name}:{option['value']}" if option.get("value") is not None else name)
    lines = [f"search {' '.join(searches[:_MAX_SEARCHES])}"] if searches else []
    lines += [f"nameserver {n}" for n in nameservers[:_MAX_NAMESERVERS]]
    lines += [f"options {' '.join(options)}"] if options else []
    return "\n".join(lines) + "\n"


def _reverse_zone(network: ipaddress.IPv4Network) -> str:
    """The in-addr.arpa zone of a network on an octet boundary (10.246.0.0/16: 246.10.in-addr.arpa)."""
    octets = str(network.network_address).split(".")[: network.prefixlen // 8]
    return ".".join(reversed(octets)) + ".in-addr.arpa."


# Port 0 lets the kernel choose the UDP port; the same TCP port may be taken by anyone meanwhile.
_BIND_ATTEMPTS = 20


def _bind_pair(host: str, port: int) -> tuple[socket.socket, socket.socket]:
    """A UDP and a TCP socket on one port: `port`, or (0) a free one the two share."""
    attempts = 0
    while True:
        udp = _bind(host, port, socket.SOCK_DGRAM)
        try:
            return udp, _bind(host, udp.getsockname()[1], socket.SOCK_STREAM)
        except OSError as error:
            udp.close()
            attempts += 1
            if port != 0 or error.errno != errno.EADDRINUSE or attempts == _BIND_ATTEMPTS:
                raise


def _bind(host: str, port: int, kind: socket.SocketKind) -> socket.socket:
    sock = socket.socket(socket.AF_INET, kind)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_IP, _IP_FREEBIND, 1)
        sock.bind((host, port))
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
