"""A pod's volumes on the node: their directories under the pod's kubelet directory, kept up to date, and
the mount plan of each container (what `mountns.py` binds inside the container's mount namespace).

- `emptyDir`: `<pod>/volumes/empty-dir/<name>`; with `medium: Memory` a tmpfs mounted there on the host
  (as the kubelet does; `sizeLimit` is its size) when running as root, a plain directory otherwise.
- `configMap`, `secret`, `downwardAPI`, `projected`: files computed by `volumes.py`, written by
  `atomicdir.py` (the `..data` symlink swap) on setup and again on every `sync` that computes other files
  than the last written, so updates of a ConfigMap or Secret, of the pod's labels or annotations, and
  token refreshes (at 80% of a token's life, as the kubelet refreshes them) reach mounted files. Always
  mounted read-only.
- `hostPath`: the host's path itself; `type` checked (and made, for `DirectoryOrCreate` and
  `FileOrCreate`) as the kubelet does.

A volumeMount's `subPath` (or `subPathExpr`, expanded against the container's environment) mounts that
entry of the volume (made as a directory when missing in an emptyDir or hostPath); `readOnly` is honoured.
A problem raises `VolumeError` with the kubelet's message; the kubelet keeps the pod ContainerCreating and
records a FailedMount Event. `teardown` unmounts what `setup` mounted on the host, and `unmount_leftovers`
what a kubelet killed before its teardown left.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesemantics import quantity
from localkube.node import atomicdir
from localkube.node.environment import expand
from localkube.node.volumes import (
    PROJECTED_KINDS,
    SERVICE_ACCOUNT_DIR,
    File,
    Sources,
    Token,
    VolumeError,
    api_access_volume,
    kind_of,
    project,
)

# Refresh a token once this share of its life has passed, as the kubelet does.
TOKEN_REFRESH = 0.8
_HOST_PATH_CHECKS = {
    "Directory": (stat.S_ISDIR, "directory"),
    "File": (stat.S_ISREG, "file"),
    "Socket": (stat.S_ISSOCK, "socket"),
    "CharDevice": (stat.S_ISCHR, "character device"),
    "BlockDevice": (stat.S_ISBLK, "block device"),
}


@dataclass(frozen=True)
class Mount:
    """One bind of a container's mount plan."""

    source: str
    target: str
    read_only: bool
    file: bool

    def plan(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "readOnly": self.read_only, "file": self.file}


@dataclass
class PodVolumes:
    """The volumes of one pod (see the module docstring). `api_access`: mount the service-account
    credentials in every container."""

    directory: Path
    sources: Sources
    api_access: bool
    may_mount: bool  # running as root: a memory-backed emptyDir is a tmpfs
    _paths: dict[str, Path] = field(default_factory=dict)
    _kinds: dict[str, str] = field(default_factory=dict)
    _tokens: dict[tuple[str, str, int, tuple[str, ...]], tuple[Token, float]] = field(default_factory=dict)
    _mounted: list[Path] = field(default_factory=list)
    _written: dict[str, dict[str, File]] = field(default_factory=dict)  # what each projected volume holds

    def volumes(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        declared = list((pod.get("spec") or {}).get("volumes") or [])
        return [*declared, api_access_volume()] if self.api_access else declared

    def setup(self, pod: Mapping[str, Any]) -> None:
        """Makes every volume's directory and content; raises VolumeError."""
        for volume in self.volumes(pod):
            name, kind = volume["name"], kind_of(volume)
            self._kinds[name] = kind
            if name in self._paths:
                continue
            try:
                self._paths[name] = self._setup(volume, kind, pod)
            except VolumeError as err:
                raise _set_up_failed(name, err) from None

    def _setup(self, volume: Mapping[str, Any], kind: str, pod: Mapping[str, Any]) -> Path:
        if kind == "emptyDir":
            return self._empty_dir(str(volume["name"]), volume["emptyDir"] or {})
        if kind == "hostPath":
            return _host_path(volume["hostPath"] or {})
        if kind in PROJECTED_KINDS:
            path: Path = self.directory / kind.lower() / str(volume["name"])
            self._project(path, volume, pod)
            return path
        raise VolumeError(f"{kind or 'no'} source is not supported by localkube")

    def sync(self, pod: Mapping[str, Any]) -> None:
        """Rewrites the projected volumes whose content changed; raises VolumeError."""
        for volume in self.volumes(pod):
            path = self._paths.get(volume["name"])
            if path is not None and kind_of(volume) in PROJECTED_KINDS:
                try:
                    self._project(path, volume, pod)
                except VolumeError as err:
                    raise _set_up_failed(volume["name"], err) from None

    def _project(self, path: Path, volume: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """Writes the volume's files unless they are what it already holds (known without reading the
        directory back: every sync of every pod comes here)."""
        files = project(volume, pod, self._sources())
        if self._written.get(volume["name"]) != files:
            atomicdir.write(path, files)
            self._written[volume["name"]] = files

    def mounts(
        self, pod: Mapping[str, Any], container: Mapping[str, Any], env: Mapping[str, str]
    ) -> list[Mount]:
        """The container's mount plan, in mountPath order (a mount inside another comes after it)."""
        declared = list(container.get("volumeMounts") or [])
        if self.api_access and not any(m.get("mountPath") == SERVICE_ACCOUNT_DIR for m in declared):
            declared.append({"name": "kube-api-access", "mountPath": SERVICE_ACCOUNT_DIR, "readOnly": True})
        plan: list[Mount] = []
        for entry in sorted(declared, key=lambda m: str(m.get("mountPath", ""))):
            name = entry.get("name", "")
            if name not in self._paths:
                raise VolumeError(f'volumeMount "{name}" names no volume of the pod')
            source = self._paths[name]
            sub_path = entry.get("subPath") or expand(str(entry.get("subPathExpr") or ""), env)
            if sub_path:
                if sub_path.startswith("/") or ".." in Path(sub_path).parts:
                    raise VolumeError(f"subPath {sub_path!r} must be relative and may not contain '..'")
                source = source / sub_path
                if not source.exists() and self._kinds[name] in ("emptyDir", "hostPath"):
                    source.mkdir(parents=True, mode=0o777)
                if not source.exists():
                    raise VolumeError(f'subPath "{sub_path}" does not exist in volume "{name}"')
            read_only = bool(entry.get("readOnly")) or self._kinds[name] in PROJECTED_KINDS
            plan.append(Mount(str(source), str(entry["mountPath"]), read_only, not source.is_dir()))
        return plan

    def teardown(self) -> None:
        """Unmounts the memory-backed emptyDirs from the host."""
        for path in self._mounted:
            subprocess.run(["umount", "--lazy", str(path)], capture_output=True, check=False)
        self._mounted.clear()

    def _empty_dir(self, name: str, spec: Mapping[str, Any]) -> Path:
        path = self.directory / "empty-dir" / name
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)
        if spec.get("medium") == "Memory" and self.may_mount and not os.path.ismount(path):
            options = "mode=1777"
            if spec.get("sizeLimit"):
                options += f",size={quantity.ceil_value(spec['sizeLimit'])}"
            result = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True
            )
            if result.returncode != 0:
                raise VolumeError(f"mounting a tmpfs for emptyDir {name!r}: {result.stderr.strip()}")
            self._mounted.append(path)
        return path

    def _sources(self) -> Sources:
        issue = self.sources.issue_token
        if issue is None:
            return self.sources

        def cached(namespace: str, name: str, uid: str, expiration: int, audiences: list[str]) -> Token:
            key = (namespace, name, expiration, tuple(audiences))
            now = time.time()
            found = self._tokens.get(key)
            if found is not None and now < found[1]:
                return found[0]
            token = issue(namespace, name, uid, expiration, audiences)
            self._tokens[key] = (token, now + TOKEN_REFRESH * (token.expiry - now))
            return token

        return Sources(self.sources.read, cached, self.sources.cluster_ca, self.sources.allocatable)


def _set_up_failed(name: str, err: VolumeError) -> VolumeError:
    """The kubelet's FailedMount message for a volume."""
    return VolumeError(f'MountVolume.SetUp failed for volume "{name}" : {err}')


def unmount_leftovers(pods_dir: Path) -> None:
    """Unmounts what an earlier kubelet on this directory mounted on the host and left (it was killed)."""
    prefix = str(pods_dir.resolve()) + "/"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix):
            subprocess.run(["umount", "--lazy", point], capture_output=True, check=False)


def _host_path(spec: Mapping[str, Any]) -> Path:
    path = Path(str(spec.get("path", "")))
    kind = spec.get("type") or ""
    if kind == "DirectoryOrCreate" and not path.exists():
        path.mkdir(parents=True, mode=0o755)
    elif kind == "FileOrCreate" and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o644)
    check = _HOST_PATH_CHECKS.get(kind.removesuffix("OrCreate"))
    if check is not None:
        try:
            mode = path.stat().st_mode
        except OSError:
            raise VolumeError(f"hostPath type check failed: {path} does not exist") from None
        if not check[0](mode):
            raise VolumeError(f"hostPath type check failed: {path} is not a {check[1]}")
    return path
