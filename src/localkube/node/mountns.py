"""Runs inside a container's own mount namespace, before its command: mounts the container's volumes at
their paths, gives the container a PID namespace of its own, then runs the command. A script of the
standard library alone (started as `python -I -S mountns.py PLAN ARGV...`), so that starting a container
costs no package import.

PLAN is a JSON file: `{"stage": DIR, "mounts": [{"source", "target", "readOnly", "file"}]}`. Each source is
bound at its target, read-only when asked. A target that does not exist is made inside this namespace
only: its deepest existing ancestor is covered with a tmpfs on which every entry of the original is bound
back (submounts included; symlinks copied), so the missing directories (or the empty file a file is bound
on) are made on the tmpfs, never in the host's tree; `stage` (a directory of the pod's own) holds the
original while it is being bound back. The namespace, and every mount in it, goes when its last process
exits. Mount failures print the reason and exit 128 (the container's run ends with that code). PLAN is
removed once the container is set up: the kubelet runs its hooks and probes from then on.

The PID namespace: this process stays outside it (it is the process the kubelet started and signals, and
it exits with the command's exit code); its child is the namespace's init, which mounts a /proc of the
namespace (so `ps`, `pkill` and `ray stop` in the container see only its processes), runs the command
and reaps orphans, and ends when the command ends (taking what is left in the namespace with it, as a
container's end does). Signals the kubelet sends to the process group reach the command directly; this
process and the init outlive them until the command exits.
"""

import ctypes
import json
import os
import signal
import sys
import tempfile

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MNT_DETACH = 2
CLONE_NEWPID = 0x20000000
_INIT = "--init"
_COMMAND = "LOCALKUBE_CONTAINER_COMMAND"  # how the helper hands the command to the init
_READY = "LOCALKUBE_CONTAINER_READY"  # the pipe on which the init says it is ready
# What the kubelet sends a container's process group: this process and the init must outlive it.
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
# statvfs flags that a read-only remount of a bind must keep (a user namespace may not drop them).
_LOCKED = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC}

_libc = ctypes.CDLL(None, use_errno=True)


class MountError(Exception):
    pass


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(
        source.encode() if source else None,
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    ):
        err = ctypes.get_errno()
        raise MountError(f"mount {source or fstype} on {target}: {os.strerror(err)}")


def _detach(target: str) -> None:
    if _libc.umount2(target.encode(), MNT_DETACH):
        raise MountError(f"umount {target}: {os.strerror(ctypes.get_errno())}")


class Namespace:
    def __init__(self, stage: str) -> None:
        self._stage = stage
        self._ours: set[int] = set()  # devices of the tmpfs this namespace laid over host directories

    def point(self, target: str, is_file: bool) -> str:
        """Makes `target` exist (see the module docstring) and returns it."""
        if os.path.exists(target):
            if os.path.isdir(target) == is_file:
                kind = "a directory" if is_file else "not a directory"
                raise MountError(f"cannot mount on {target}: it is {kind}")
            return target
        existing = os.path.dirname(target)
        while not os.path.exists(existing):
            existing = os.path.dirname(existing)
        ancestor = os.path.realpath(existing)
        if ancestor == "/":
            raise MountError(f"cannot make the mount point {target}: no top-level directory to hold it")
        if os.stat(ancestor).st_dev not in self._ours:
            self._cover(ancestor)
        made = os.path.join(ancestor, os.path.relpath(target, existing))
        os.makedirs(os.path.dirname(made) if is_file else made, exist_ok=True)
        if is_file:
            open(made, "a").close()
        return made

    def _cover(self, directory: str) -> None:
        info = os.stat(directory)
        stage = tempfile.mkdtemp(dir=self._stage)
        _mount(directory, stage, None, MS_BIND | MS_REC)
        # Through a descriptor: the stage itself may lie under the directory about to be covered.
        held = os.open(stage, os.O_RDONLY | os.O_DIRECTORY)
        original_root = f"/proc/self/fd/{held}"
        _mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={info.st_mode & 0o7777:o}")
        os.chown(directory, info.st_uid, info.st_gid)
        for name in os.listdir(held):
            original, copy = os.path.join(original_root, name), os.path.join(directory, name)
            if os.path.islink(original):
                os.symlink(os.readlink(original), copy)
                continue
            if os.path.isdir(original):
                os.mkdir(copy)
            else:
                open(copy, "a").close()
            _mount(original, copy, None, MS_BIND | MS_REC)
        _detach(original_root)
        os.close(held)
        self._ours.add(os.stat(directory).st_dev)

    def bind(self, source: str, target: str, read_only: bool, is_file: bool) -> None:
        made = self.point(target, is_file)
        _mount(source, made, None, MS_BIND | MS_REC)
        if read_only:
            flags = os.statvfs(made).f_flag
            locked = sum(ms for st, ms in _LOCKED.items() if flags & st)
            _mount(None, made, None, MS_BIND | MS_REMOUNT | MS_RDONLY | locked)


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _init() -> None:
    """The PID namespace's init: its own /proc, the command as its child, orphans reaped until it exits."""
    argv = json.loads(os.environ.pop(_COMMAND))
    ready = int(os.environ.pop(_READY))
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except MountError as err:  # the container still runs; it sees the host's processes
        print(f"localkube: the container keeps the host's /proc: {err}", file=sys.stderr)
    os.write(ready, b"1")
    os.close(ready)
    command = os.fork()
    if command == 0:
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        os.execv(argv[0], argv)
    while True:
        pid, status = os.wait()
        if pid == command:
            os._exit(_exit_code(status))


def main(argv: list[str]) -> None:
    with open(argv[1]) as f:
        plan = json.load(f)
    namespace = Namespace(plan["stage"])
    try:
        for mount in plan["mounts"]:
            namespace.bind(mount["source"], mount["target"], mount["readOnly"], mount["file"])
    except (MountError, OSError) as err:
        print(f"localkube: setting up the container's volumes failed: {err}", file=sys.stderr)
        sys.exit(128)
    if _libc.unshare(CLONE_NEWPID):
        print(f"localkube: no PID namespace: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        os.unlink(argv[1])
        os.execv(argv[2], argv[2:])
    for sig in _STOP_SIGNALS:
        signal.signal(sig, lambda *_: None)
    ready, ready_writer = os.pipe()
    init = os.fork()
    if init == 0:
        # A fresh interpreter whose command line names none of the command's arguments, so that a
        # `pkill -f` in the container never matches its init.
        os.close(ready)
        os.set_inheritable(ready_writer, True)
        os.environ[_COMMAND] = json.dumps(argv[2:])
        os.environ[_READY] = str(ready_writer)
        os.execv(sys.executable, [sys.executable, "-I", "-S", __file__, _INIT])
    os.close(ready_writer)
    os.read(ready, 1)  # the init has its /proc (or died): the container is set up
    os.close(ready)
    os.unlink(argv[1])
    while True:
        try:
            _, status = os.waitpid(init, 0)
        except InterruptedError:
            continue
        sys.exit(_exit_code(status))


if __name__ == "__main__":
    if sys.argv[1:] == [_INIT]:
        _init()
    else:
        main(sys.argv)
