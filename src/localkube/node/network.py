"""Pod addresses and pod networks: where a pod's processes live on the network and how they find Services.

`AddressPool` hands out one address per pod key from a network and keeps it for the pod's lifetime.

Two networks for process mode, chosen by `pod_network()`:
- `NamespaceNetwork` (root): every pod gets its own network namespace, with loopback up and an `eth0`
  that is one end of a veth pair whose other end is a port of localkube's bridge (`lk0`, 10.246.0.0/16 by
  default; a second localkube on the machine takes `lk1` and 10.245.0.0/16, and so on: a lock file under
  /run/localkube says whose a bridge is; the bridge itself holds the first address, the node's address
  as the pods see it). Pods reach
  each other and this host over the bridge, and what the host reaches through the host's NAT (`egress.py`,
  as a node's CNI bridge plugin with `ipMasq`); bridged traffic bypasses the host's iptables
  (`nf_call_iptables 0`) so a host firewall that drops forwarded packets does not split the pods. Inside a
  pod the default route is via the bridge's address, so programs that find "their" address by the route
  to a public address (Ray does) find the pod's address. Service names resolve through a hosts file per pod
  (`/etc/netns/<namespace>/hosts`, bind-mounted over `/etc/hosts` by `ip netns exec`), rewritten in place
  (same inode, so running processes see the change) whenever Endpoints change, and through the node's
  cluster DNS (`dns.py`, on the bridge's address), which the pod's resolv.conf names and which forwards
  every other name to the host's resolvers.
- `HostNetwork` (no root): processes share the host's network. Each pod still gets a distinct loopback
  address (127.244.0.0/16) as its `status.podIP`, which a process can bind explicitly; anything that binds
  all interfaces (Ray's GCS does) collides with the same port of any other pod. Where unprivileged user
  namespaces work (most Linux hosts), each command of a pod runs in a user and mount namespace of its
  own (`unshare --user --map-root-user --mount`: its processes see themselves as root) with the pod's
  hosts file bound over /etc/hosts, so Service names resolve as with namespaces; elsewhere they do not.

Invariants: an address is never given to two live pods; `destroy` kills every process left in the pod's
namespace before deleting it, so a deleted pod leaves neither a namespace, nor a veth, nor a process;
`close` does that for every pod and removes the bridge. Namespaces left by an earlier run that died
without cleaning up (same prefix) are removed when the bridge is first set up.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import ipaddress
import logging
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from localkube.node.egress import Egress, other_bridges_held
from localkube.node.errors import NodeError

log = logging.getLogger(__name__)

LOOPBACK_PODS = ipaddress.IPv4Network("127.244.0.0/16")
BRIDGE_PODS = ipaddress.IPv4Network("10.246.0.0/16")
NETNS_DIR = Path("/etc/netns")
LOCK_DIR = Path("/run/localkube")
BRIDGES = 8
CLUSTER_DOMAIN = "cluster.local"
# A user namespace in which this user is root, with a mount namespace: lets an unprivileged user bind files.
_USER_MOUNT_NAMESPACE = ("--user", "--map-root-user", "--mount")


class NetworkError(NodeError, RuntimeError):
    """A pod's network could not be set up or torn down; the message carries the failing command's output."""


class BridgeInUse(NetworkError):
    """Another localkube on this machine holds the bridge."""


class AddressPool:
    """Addresses of `network` for pods, one per key, kept for the key's life.

    A new key takes the next address never handed out, in order; once the network has been gone through,
    the address released longest ago. Both are constant time whatever the number of pods: the pool keeps
    the count of keys on each address and the released addresses in release order, rather than looking
    at every pod's address for each new one. A restarted localkube rebuilds the pool from its stored pods
    (`assign` with the address each had), and new keys then avoid those."""

    def __init__(self, network: ipaddress.IPv4Network, reserved: Iterable[str] = ()) -> None:
        self._network = network
        self._by_key: dict[str, str] = {}
        # Keys on each address: `pin` may put two keys on one address, which stays taken until both go.
        self._holders: dict[str, int] = dict.fromkeys(reserved, 1)
        self._released: OrderedDict[str, None] = OrderedDict()
        self._fresh = 0  # offsets up to this one have been handed out or skipped as taken
        self._size = network.num_addresses - 2

    def assign(self, key: str, address: str | None = None) -> str:
        """The key's address: the one it has, else `address` (kept across a restart) if free, else a new one."""
        current = self._by_key.get(key)
        if current is not None:
            return current
        if address and address not in self._holders and ipaddress.ip_address(address) in self._network:
            self._take(key, address)
            return address
        while self._fresh < self._size:
            self._fresh += 1
            candidate = str(self._network.network_address + self._fresh)
            if candidate not in self._holders:
                self._take(key, candidate)
                return candidate
        if not self._released:
            raise NetworkError(f"no free pod address left in {self._network}")
        candidate, _ = self._released.popitem(last=False)
        self._take(key, candidate)
        return candidate

    def pin(self, key: str, address: str) -> None:
        """Gives `key` exactly `address`, whoever else has it (a test that points a pod at a known server)."""
        if self._by_key.get(key) != address:
            self.release(key)
            self._take(key, address)

    def release(self, key: str) -> None:
        address = self._by_key.pop(key, None)
        if address is None:
            return
        holders = self._holders[address] - 1
        if holders:
            self._holders[address] = holders
        else:
            del self._holders[address]
            if ipaddress.ip_address(address) in self._network:  # not an address pinned from elsewhere
                self._released[address] = None

    def _take(self, key: str, address: str) -> None:
        self._by_key[key] = address
        self._holders[address] = self._holders.get(address, 0) + 1
        self._released.pop(address, None)


@dataclass(frozen=True)
class Sandbox:
    """A pod's place on the network: its address, and the argv prefix that runs a command inside it.
    `private_mounts`: the prefix gives every command a mount namespace of its own (where the kubelet may
    bind the pod's own /tmp)."""

    ip: str
    exec_prefix: tuple[str, ...] = ()
    private_mounts: bool = False


class PodNetwork(Protocol):
    @property
    def cidr(self) -> ipaddress.IPv4Network:
        """Where pod addresses come from (the API server's proxy dials only such local addresses)."""
        ...

    @property
    def isolated(self) -> bool:
        """True when every pod has its own network namespace."""
        ...

    @property
    def resolves_services(self) -> bool:
        """True when pods resolve Service names (through a hosts file of their own)."""
        ...

    @property
    def host_address(self) -> str | None:
        """The node's address as seen from the pods, when it differs from the host's own."""
        ...

    def address(self, key: str, previous: str | None = None) -> str: ...

    async def create(self, key: str, uid: str) -> Sandbox: ...

    def write_hosts(self, key: str, content: str) -> None: ...

    def write_resolv(self, key: str, content: str) -> None:
        """Sets the pod's /etc/resolv.conf, where the pod has one of its own (before its first process)."""
        ...

    async def destroy(self, key: str) -> None: ...

    async def close(self) -> None: ...


class HostNetwork:
    """Every pod on the host's network with its own loopback address (see the module docstring). With
    `files` (a directory for the pods' hosts files) and working user namespaces, each command runs in a
    user and mount namespace of its own where the pod's hosts file is bound over /etc/hosts."""

    isolated = False
    host_address = None

    def __init__(self, network: ipaddress.IPv4Network = LOOPBACK_PODS, files: Path | None = None) -> None:
        self.cidr = network
        self._pool = AddressPool(network)
        self._unshare = shutil.which("unshare")
        self._files = files if files is not None and self._user_namespaces_work() else None
        self._hosts: dict[str, Path] = {}

    @property
    def resolves_services(self) -> bool:
        return self._files is not None

    def _user_namespaces_work(self) -> bool:
        """Whether this user may make a user namespace and bind-mount in it (kernels and security modules
        can forbid either, and macOS has no namespaces)."""
        if self._unshare is None:
            return False
        with tempfile.NamedTemporaryFile() as probe:
            try:
                result = subprocess.run(
                    [
                        self._unshare,
                        *_USER_MOUNT_NAMESPACE,
                        "/bin/sh",
                        "-c",
                        'mount --bind "$0" "$0"',
                        probe.name,
                    ],
                    capture_output=True,
                    timeout=10,
                )
            except (OSError, subprocess.TimeoutExpired):
                return False
        if result.returncode != 0:
            log.warning(
                "user namespaces are not available (%s): pods will not resolve Service names",
                result.stderr.decode(errors="replace").strip(),
            )
        return result.returncode == 0

    def address(self, key: str, previous: str | None = None) -> str:
        return self._pool.assign(key, previous)

    async def create(self, key: str, uid: str) -> Sandbox:
        address = self._pool.assign(key)
        if self._files is None or self._unshare is None:
            return Sandbox(address)
        hosts = self._files / _sandbox_name("", key, uid) / "hosts"
        hosts.parent.mkdir(parents=True, exist_ok=True)
        hosts.touch()
        self._hosts[key] = hosts
        bind_hosts = ("/bin/sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts))
        return Sandbox(address, (self._unshare, *_USER_MOUNT_NAMESPACE, *bind_hosts), private_mounts=True)

    def write_hosts(self, key: str, content: str) -> None:
        if key in self._hosts:
            _rewrite_in_place(self._hosts[key], content)

    def write_resolv(self, key: str, content: str) -> None:
        pass  # the host's network and so its resolv.conf, whose resolvers the pods reach as the host does

    async def destroy(self, key: str) -> None:
        self._pool.release(key)
        hosts = self._hosts.pop(key, None)
        if hosts is not None:
            shutil.rmtree(hosts.parent, ignore_errors=True)

    async def close(self) -> None:
        pass


class NamespaceNetwork:
    """A network namespace per pod on localkube's bridge (see the module docstring). Needs root."""

    isolated = True

    def __init__(
        self, bridge: str = "lk0", network: ipaddress.IPv4Network = BRIDGE_PODS, prefix: str = "lk0-"
    ) -> None:
        if len(prefix) + 10 > 15:
            raise ValueError(f"network namespace prefix {prefix!r} is too long for an interface name")
        ip = shutil.which("ip")
        if ip is None:
            raise NetworkError("the ip command (iproute2) is needed for pod network namespaces")
        self._ip = ip
        self._bridge = bridge
        self._network = network
        self.cidr = network
        self._gateway = str(network.network_address + 1)
        self._prefix = prefix
        self._pool = AddressPool(network, reserved=[self._gateway])
        self._netns: dict[str, str] = {}
        self._bridge_ready = False
        self._egress = Egress(bridge, network, LOCK_DIR)
        self._lock = asyncio.Lock()
        # Held for this network's life: a second localkube must not take the bridge over (and would, on
        # setup, remove this one's namespaces as leftovers).
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        self._claim: IO[str] | None = (LOCK_DIR / f"{bridge}.lock").open("w")
        try:
            fcntl.flock(self._claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._claim.close()
            raise BridgeInUse(f"bridge {bridge} is used by another localkube on this machine") from None

    @property
    def host_address(self) -> str:
        return self._gateway

    def address(self, key: str, previous: str | None = None) -> str:
        return self._pool.assign(key, previous)

    @property
    def resolves_services(self) -> bool:
        return True

    async def create(self, key: str, uid: str) -> Sandbox:
        address = self._pool.assign(key)
        netns = _sandbox_name(self._prefix, key, uid)
        async with self._lock:
            if not self._bridge_ready:
                await self._setup_bridge()
                self._bridge_ready = True
            self._netns[key] = netns
            await self._remove_netns(netns)  # a namespace left half-made by an earlier attempt
            (NETNS_DIR / netns).mkdir(parents=True, exist_ok=True)
            # Until the kubelet writes the pod's own (`write_resolv`): a query fails at once on loopback
            # instead of waiting for a server that is not there.
            (NETNS_DIR / netns / "resolv.conf").write_text("nameserver 127.0.0.1\n")
            (NETNS_DIR / netns / "hosts").touch()
            prefix_length = self._network.prefixlen
            await self._run(
                ["netns", "add", netns],
                ["link", "add", netns, "type", "veth", "peer", "name", "eth0", "netns", netns],
                ["link", "set", netns, "master", self._bridge, "up"],
                ["-n", netns, "addr", "add", f"{address}/{prefix_length}", "dev", "eth0"],
                ["-n", netns, "link", "set", "eth0", "up"],
                ["-n", netns, "link", "set", "lo", "up"],
                ["-n", netns, "route", "add", "default", "via", self._gateway, "dev", "eth0"],
            )
        return Sandbox(address, (self._ip, "netns", "exec", netns), private_mounts=True)

    def write_hosts(self, key: str, content: str) -> None:
        netns = self._netns.get(key)
        if netns is not None:
            _rewrite_in_place(NETNS_DIR / netns / "hosts", content)

    def write_resolv(self, key: str, content: str) -> None:
        netns = self._netns.get(key)
        if netns is not None:
            _rewrite_in_place(NETNS_DIR / netns / "resolv.conf", content)

    async def destroy(self, key: str) -> None:
        netns = self._netns.pop(key, None)
        self._pool.release(key)
        if netns is not None:
            async with self._lock:
                await self._remove_netns(netns)

    async def close(self) -> None:
        for key in list(self._netns):
            await self.destroy(key)
        if self._bridge_ready:
            await self._run(["link", "del", self._bridge], check=False)
            await self._egress.close(others_held=other_bridges_held(LOCK_DIR, self._bridge))
            self._bridge_ready = False
        if self._claim is not None:
            self._claim.close()
            self._claim = None

    async def _setup_bridge(self) -> None:
        listing = await self._output(["netns", "list"])
        for line in listing.splitlines():
            name = line.split(" ", 1)[0]
            if name.startswith(self._prefix):
                log.info("removing network namespace %s left by an earlier run", name)
                await self._remove_netns(name)
        exists = await self._run(["link", "show", self._bridge], check=False)
        if not exists:
            await self._run(
                ["link", "add", self._bridge, "type", "bridge", "nf_call_iptables", "0",
                 "nf_call_ip6tables", "0", "nf_call_arptables", "0"],
                ["addr", "add", f"{self._gateway}/{self._network.prefixlen}", "dev", self._bridge],
            )  # fmt: skip
        # A bridge without an address of its own takes the lowest of its ports' (the pods' veths), so its
        # MAC changes as pods come and go, and pods that cached the old one in their ARP table lose the
        # node's address (the API server's forwarder) until the entry ages out: set one, and it stays.
        await self._run(["link", "set", self._bridge, "address", bridge_mac(self._bridge), "up"])
        await self._egress.open()

    async def _remove_netns(self, netns: str) -> None:
        """Kills whatever still runs in the namespace, then deletes it (its veth goes with it)."""
        for pid in (await self._output(["netns", "pids", netns])).split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        await self._run(["netns", "del", netns], check=False)
        await self._run(["link", "del", netns], check=False)  # a host end left by a half-made pod
        shutil.rmtree(NETNS_DIR / netns, ignore_errors=True)

    async def _output(self, args: list[str]) -> str:
        process = await asyncio.create_subprocess_exec(
            self._ip, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
        out, _ = await process.communicate()
        return out.decode()

    async def _run(self, *commands: list[str], check: bool = True) -> bool:
        for args in commands:
            process = await asyncio.create_subprocess_exec(
                self._ip, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
            )
            _, err = await process.communicate()
            if process.returncode != 0:
                if check:
                    raise NetworkError(f"ip {shlex.join(args)}: {err.decode().strip()}")
                return False
        return True


def bridge_mac(bridge: str) -> str:
    """A fixed MAC for the bridge named `bridge`: locally administered, unicast, from the name's hash."""
    digest = hashlib.sha256(bridge.encode()).digest()
    return ":".join(f"{b:02x}" for b in (0x02, *digest[:5]))


def _sandbox_name(prefix: str, key: str, uid: str) -> str:
    """A pod's network namespace (and host-side veth) name: short enough for an interface name."""
    return prefix + hashlib.sha256(f"{key}/{uid}".encode()).hexdigest()[:10]


def _rewrite_in_place(path: Path, content: str) -> None:
    """Rewrites a hosts file keeping its inode: that very inode is bind-mounted over the pods' /etc/hosts."""
    with contextlib.suppress(FileNotFoundError), path.open("r+b") as f:
        if f.read() != content.encode():
            f.seek(0)
            f.truncate()
            f.write(content.encode())


def bridge_network(index: int) -> ipaddress.IPv4Network:
    """The pod network of bridge `lk<index>`: 10.246.0.0/16, then 10.245.0.0/16, and so on."""
    return ipaddress.IPv4Network((int(BRIDGE_PODS.network_address) - (index << 16), 16))


def bridge_gateways() -> list[str]:
    """The node's address on each bridge a localkube may take (the API server's certificate names them)."""
    return [str(bridge_network(index).network_address + 1) for index in range(BRIDGES)]


def pod_network(files: Path | None = None, isolated: bool | None = None) -> PodNetwork:
    """The namespace network when running as root (or when asked), else the host network (with `files`,
    the directory for its pods' hosts files). Each localkube
    on the machine takes the first free bridge: lk0 with 10.246.0.0/16, lk1 with 10.245.0.0/16, and so on."""
    if isolated is None:
        isolated = os.geteuid() == 0 and shutil.which("ip") is not None
    if not isolated:
        return HostNetwork(files=files)
    for index in range(BRIDGES):
        try:
            return NamespaceNetwork(f"lk{index}", bridge_network(index), f"lk{index}-")
        except BridgeInUse:
            continue
    raise NetworkError(f"all {BRIDGES} localkube bridges (lk0 to lk{BRIDGES - 1}) are in use on this machine")


def hosts_file(
    pod: Mapping[str, Any], pod_ip: str, endpoints: Iterable[Mapping[str, Any]], domain: str = CLUSTER_DOMAIN
) -> str:
    """A pod's /etc/hosts: the kubelet's header and the pod's own name, then one line per Service with an
    address (its first ready endpoint, else its first not-ready one: there is no kube-proxy, so a name
    stands for one backing pod), under `<svc>.<ns>.svc.<domain>`, `<svc>.<ns>.svc`, `<svc>.<ns>`, and
    the bare `<svc>` for Services in the pod's own namespace."""
    metadata = pod.get("metadata") or {}
    namespace = metadata.get("namespace", "")
    hostname = (pod.get("spec") or {}).get("hostname") or metadata.get("name", "")
    lines = [
        "# Kubernetes-managed hosts file (localkube).",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        f"{pod_ip}\t{hostname}",
    ]
    for endpoint in sorted(endpoints, key=lambda e: (e["metadata"]["namespace"], e["metadata"]["name"])):
        address = service_address(endpoint)
        if address is None:
            continue
        name, ns = endpoint["metadata"]["name"], endpoint["metadata"]["namespace"]
        names = [f"{name}.{ns}.svc.{domain}", f"{name}.{ns}.svc", f"{name}.{ns}"]
        if ns == namespace:
            names.append(name)
        lines.append(f"{address}\t{' '.join(names)}")
    return "\n".join(lines) + "\n"


def service_address(endpoints: Mapping[str, Any]) -> str | None:
    """The one address a Service's name stands for: its first ready endpoint, else its first not-ready one."""
    for field in ("addresses", "notReadyAddresses"):
        for subset in endpoints.get("subsets") or []:
            for address in subset.get(field) or []:
                if address.get("ip"):
                    return str(address["ip"])
    return None
