"""What a real node does to the host, noted before it starts and undone after it stops (issue 47).

A kubelet and containerd write outside the directories they are given: kubelet sets three kernel sysctls
(`vm.overcommit_memory`, `kernel.panic`, `kernel.panic_on_oops`), makes `kubepods` in every cgroup
hierarchy, writes `/var/lib/kubelet/device-plugins` whatever `--root-dir` says and bind-mounts its root
directory onto itself; containerd bind-mounts each pod's network namespace under `/run/netns` and mounts
every container's rootfs; CNI plugins keep state under `/var/lib/cni`. `HostChanges.note()` records what is
there before; `restore()` puts back the sysctls, unmounts what was mounted since under the given trees
(deepest first), removes the cgroups and paths that were not there before, and says what it did. The
network side (iptables chains, the CNI bridge, forwarding) never reaches the host: the node runs in a
network namespace of its own, deleted with everything in it (tests/support/containerkube.py).

The record is also written to a file, so that a run killed before `restore()` is repaired by the next start
(`restore_left_over`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from support.eventually import eventually

SYSCTLS = ("vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops")
# Paths a kubelet, containerd or a CNI plugin may create whatever their configuration says.
SIDE_PATHS = (
    "/var/lib/kubelet",
    "/run/containerd",
    "/var/lib/cni",
    "/var/log/pods",
    "/var/log/containers",
    "/opt/containerd",
    "/var/lib/containerd",
    "/etc/cni",
)
# containerd names each pod's network namespace so; localkube's namespaces share the directory.
POD_NETNS = Path("/run/netns")
CGROUP_ROOT = Path("/sys/fs/cgroup")
# The cgroups kubelet (cgroupfs driver) and containerd make at a hierarchy's top.
CGROUP_NAMES = ("kubepods", "k8s.io")
# A bound on a killed container's processes leaving their cgroup on a loaded machine, not a measurement.
CGROUP_EMPTY_TIMEOUT = 30.0


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def mount_points() -> list[str]:
    """The host's mount points, in mount order (the mount namespace this process is in)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        # Octal escapes (\040 for a space) as the kernel writes them.
        points.append(line.split()[4].encode().decode("unicode_escape"))
    return points


def cgroup_dirs() -> list[Path]:
    return [
        hierarchy / name
        for hierarchy in sorted(CGROUP_ROOT.iterdir())
        if hierarchy.is_dir()
        for name in CGROUP_NAMES
        if (hierarchy / name).is_dir()
    ]


@dataclass
class HostChanges:
    """The host's state before a node ran, and the trees whose new mounts are the node's."""

    record: Path
    trees: list[str]
    sysctls: dict[str, str] = field(default_factory=dict)
    existing_paths: list[str] = field(default_factory=list)
    existing_cgroups: list[str] = field(default_factory=list)
    existing_mounts: list[str] = field(default_factory=list)
    existing_pod_netns: list[str] = field(default_factory=list)

    def note(self) -> None:
        self.sysctls = {name: _sysctl_path(name).read_text().strip() for name in SYSCTLS}
        self.existing_paths = [path for path in SIDE_PATHS if os.path.lexists(path)]
        self.existing_cgroups = [str(path) for path in cgroup_dirs()]
        self.existing_mounts = mount_points()
        self.existing_pod_netns = [str(path) for path in POD_NETNS.glob("cni-*")]
        self.record.parent.mkdir(parents=True, exist_ok=True)
        self.record.write_text(json.dumps(asdict(self) | {"record": str(self.record)}))

    def restore(self) -> list[str]:
        """Undoes the node's changes (its processes must be gone); returns one line per change undone."""
        undone: list[str] = []
        for name, value in self.sysctls.items():
            path = _sysctl_path(name)
            if path.read_text().strip() != value:
                path.write_text(value)
                undone.append(f"sysctl {name} back to {value}")
        undone += self._unmount()
        undone += self._remove_cgroups()
        for netns in POD_NETNS.glob("cni-*"):
            if str(netns) not in self.existing_pod_netns:
                netns.unlink()
                undone.append(f"removed {netns}")
        for path in SIDE_PATHS:
            if path not in self.existing_paths and os.path.lexists(path):
                shutil.rmtree(path, ignore_errors=True)
                undone.append(f"removed {path}")
        self.record.unlink(missing_ok=True)
        return undone

    def _unmount(self) -> list[str]:
        before = set(self.existing_mounts)
        trees = [*self.trees, "/var/lib/kubelet", "/run/containerd"]
        ours = [
            point
            for point in mount_points()
            if point not in before
            and (
                any(point == tree or point.startswith(tree + "/") for tree in trees)
                or point.startswith(f"{POD_NETNS}/cni-")  # not localkube's namespaces beside them
            )
        ]
        undone = []
        # Deepest (and latest) first; lazily, as a mount still busy for a moment must not stop the rest.
        for point in sorted(set(ours), key=lambda p: (p.count("/"), ours.index(p)), reverse=True):
            if subprocess.run(["umount", "-l", point], capture_output=True, check=False).returncode == 0:
                undone.append(f"unmounted {point}")
        return undone

    def _remove_cgroups(self) -> list[str]:
        undone = []
        for top in cgroup_dirs():
            if str(top) in self.existing_cgroups:
                continue
            _kill_cgroup_processes(top)
            # rmdir, deepest first: a cgroup goes only once its children and processes have.
            for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                _remove_cgroup(directory)
            _remove_cgroup(top)
            undone.append(f"removed cgroup {top}")
        return undone


def _remove_cgroup(directory: Path) -> None:
    """rmdir of an emptied cgroup; busy (EBUSY) for the moment its killed processes take to exit."""

    def removed() -> bool:
        try:
            directory.rmdir()
        except FileNotFoundError:
            return True
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise
            _kill_cgroup_processes(directory)
            return False
        return True

    eventually(removed, CGROUP_EMPTY_TIMEOUT, f"cgroup {directory} emptied", every=0.2, blocking=True)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _kill_cgroup_processes(top: Path) -> None:
    for procs in top.rglob("cgroup.procs"):
        for pid in procs.read_text().split():
            _kill(int(pid))


def kill_processes_naming(trees: list[str]) -> None:
    """SIGKILL to every process whose command line names one of `trees`: the node's own processes (their
    flags name its directories) and containerd's shims (which outlive containerd by design, holding each
    container's stdio; they name its socket)."""
    needles = [tree.encode() for tree in trees]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            command = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if any(needle in command for needle in needles):
            _kill(int(proc.name))


def kill_pod_processes() -> None:
    """SIGKILL to every process in a pod's cgroup (the containers, not the shims that hold them)."""
    for top in cgroup_dirs():
        if top.name == "kubepods":
            _kill_cgroup_processes(top)


def restore_left_over(record: Path) -> list[str]:
    """Repairs what a node killed before its `restore()` left (its record says what was there before)."""
    if not record.exists():
        return []
    saved = json.loads(record.read_text())
    saved["record"] = Path(saved["record"])
    changes = HostChanges(**saved)
    kill_processes_naming(changes.trees)
    kill_pod_processes()
    return changes.restore()
