"""Pods on a localkube bridge reach what the host reaches, from the host's address, as pods on a node do
through the CNI bridge plugin's `ipMasq`: a Ray job's `runtime_env` pip-installs from the package index, a
driver downloads its data.

What it changes on the host, and how that is undone:
- `net.ipv4.ip_forward` set to 1 (a routed packet is forwarded by the interface it arrives on, and the
  answers to a pod arrive on the host's uplink, so the bridge's own `forwarding` is not enough). The value
  found before is kept in `/run/localkube/ip_forward.before` by the first bridge to open, and written back
  by the last to close (the lock files of the bridges say which are still held).
- Three iptables rules per bridge, each tagged with the comment `localkube <bridge>`: a MASQUERADE of the
  pod network's traffic leaving by any other interface, and two FORWARD accepts (out of the bridge; back in,
  for connections it started) ahead of a host firewall that drops forwarded packets by default.
A localkube killed before closing leaves both; the next one to open the same bridge removes the tagged rules
first, and the saved forwarding value stays until a last close restores it.

Without iptables (or where the kernel refuses NAT) pods keep the bridge only, as before: a warning says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import ipaddress
import logging
import shlex
import shutil
from pathlib import Path

log = logging.getLogger(__name__)

IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")
SAVED_NAME = "ip_forward.before"


class Egress:
    """The NAT and forwarding that let the pods of one bridge out (see the module docstring)."""

    def __init__(
        self, bridge: str, network: ipaddress.IPv4Network, lock_dir: Path, ip_forward: Path = IP_FORWARD
    ) -> None:
        self._bridge = bridge
        self._tag = f"localkube {bridge}"
        self._rules = (
            ("nat", "POSTROUTING", ["-s", str(network), "!", "-o", bridge, "-j", "MASQUERADE"]),
            ("filter", "FORWARD", ["-i", bridge, "-j", "ACCEPT"]),
            ("filter", "FORWARD",
             ["-o", bridge, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"]),
        )  # fmt: skip
        self._lock_dir = lock_dir
        self._saved = lock_dir / SAVED_NAME
        self._ip_forward = ip_forward
        self._iptables = shutil.which("iptables")
        self.opened = False

    async def open(self) -> None:
        if self._iptables is None:
            log.warning("iptables not found: pods on %s reach nothing off the bridge", self._bridge)
            return
        await self._remove_rules()
        try:
            for table, chain, rule in self._rules:
                verb = "-A" if table == "nat" else "-I"
                await self._iptables_run(
                    ["-t", table, verb, chain, *rule, "-m", "comment", "--comment", self._tag]
                )
        except OSError as error:
            log.warning("pods on %s reach nothing off the bridge: %s", self._bridge, error)
            await self._remove_rules()
            return
        if not self._saved.exists():
            self._saved.write_text(self._ip_forward.read_text())
        self._ip_forward.write_text("1\n")
        self.opened = True

    async def close(self, others_held: bool) -> None:
        """Removes this bridge's rules; with no other bridge held (`others_held`), puts forwarding back."""
        if not self.opened:
            return
        self.opened = False
        await self._remove_rules()
        if not others_held and self._saved.exists():
            self._ip_forward.write_text(self._saved.read_text())
            self._saved.unlink()

    async def _remove_rules(self) -> None:
        for table, chain in {(table, chain) for table, chain, _ in self._rules}:
            listing = await self._iptables_output(["-t", table, "-S", chain])
            for line in listing.splitlines():
                words = shlex.split(line)
                if words[:2] == ["-A", chain] and self._tag in words:
                    with contextlib.suppress(OSError):
                        await self._iptables_run(["-t", table, "-D", *words[1:]])

    async def _iptables_output(self, args: list[str]) -> str:
        assert self._iptables is not None
        process = await asyncio.create_subprocess_exec(
            self._iptables, "-w", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
        out, _ = await process.communicate()
        return out.decode() if process.returncode == 0 else ""

    async def _iptables_run(self, args: list[str]) -> None:
        assert self._iptables is not None
        process = await asyncio.create_subprocess_exec(
            self._iptables, "-w", *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        _, err = await process.communicate()
        if process.returncode != 0:
            raise OSError(f"iptables {shlex.join(args)}: {err.decode().strip()}")


def other_bridges_held(lock_dir: Path, own: str) -> bool:
    """Whether a bridge other than `own` is held by a live localkube (its lock file is locked)."""
    for lock in lock_dir.glob("*.lock"):
        if lock.stem == own:
            continue
        with contextlib.suppress(OSError), lock.open("r") as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
    return False
