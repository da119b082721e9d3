"""A volume directory updated as the kubelet's atomic writer updates it, so a reader never sees half of an
update: the files live in a hidden timestamped directory (`..2026_12_01_00_00_00.123456789`), `..data` is a
symlink to the current one, and every top-level name of the volume is a symlink through `..data`. An
update writes a new timestamped directory, points a new symlink at it and renames that over `..data` (one
atomic step), then fixes the top-level names and removes the old directory. A bind mount of the volume
directory therefore shows every update; a `subPath` mount of one file (bound to the file itself) does not,
as on a real node.
"""

from __future__ import annotations

import datetime
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from localkube.node.volumes import File

DATA = "..data"


def current(directory: Path) -> dict[str, File]:
    """The files the volume directory holds now (empty before its first write)."""
    data = directory / DATA
    if not data.is_symlink():
        return {}
    found: dict[str, File] = {}
    for root, _, names in os.walk(data, followlinks=False):
        for name in names:
            path = Path(root, name)
            found[str(path.relative_to(data))] = File(path.read_bytes(), path.stat().st_mode & 0o7777)
    return found


def write(directory: Path, files: Mapping[str, File]) -> bool:
    """Makes the volume directory hold exactly `files`; True when it changed anything."""
    directory.mkdir(parents=True, exist_ok=True)
    if current(directory) == dict(files) and (directory / DATA).is_symlink():
        return False
    stamp = datetime.datetime.now(datetime.UTC).strftime("..%Y_%m_%d_%H_%M_%S.%f")
    staged = directory / stamp
    staged.mkdir()
    for relative, file in files.items():
        path = staged / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(file.content)
        path.chmod(file.mode)
    staged.chmod(0o755)
    previous = os.readlink(directory / DATA) if (directory / DATA).is_symlink() else None
    link = directory / "..data_tmp"
    link.unlink(missing_ok=True)
    link.symlink_to(stamp)
    link.rename(directory / DATA)
    names = {relative.split("/", 1)[0] for relative in files}
    for name in names:
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(f"{DATA}/{name}")
    for entry in directory.iterdir():
        if entry.name.startswith(".."):
            if entry.name not in (DATA, stamp) and entry.name == previous:
                shutil.rmtree(entry, ignore_errors=True)
        elif entry.name not in names:
            entry.unlink()
    return True
