"""Upstream's operator binary: built once with `go install` into a cache directory outside the repository.

    python -m benchmarks.peer.upstream          # builds it if missing, prints its path and the build time

The binary lands in `$KUBERAY_TOOLS_DIR` (default `~/.cache/kuberay-tools`)`/upstream-v1.5.0/ray-operator`
and is reused while present. Nothing of its source enters the repository: `go install module@version`
fetches it through the Go module proxy (`go env GOPROXY`) into Go's own module cache. The build compiles
client-go and controller-runtime: minutes on a small, busy machine, so it runs under `nice`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

MODULE = "github.com/ray-project/kuberay/ray-operator"
VERSION = "v1.5.0"


def cache_dir() -> Path:
    # The cache scripts/tools/gobuild.sh fills for Helm and the control plane.
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    root = os.environ.get("KUBERAY_TOOLS_DIR") or Path(cache) / "kuberay-tools"
    return Path(root) / f"upstream-{VERSION}"


def binary() -> Path:
    # `go install` names the binary after the module's last path element.
    return cache_dir() / MODULE.rsplit("/", 1)[1]


def install() -> Path:
    """The binary's path, building it first when it is missing (build time printed to stderr)."""
    target = binary()
    if target.exists():
        return target
    go = shutil.which("go")
    if go is None:
        raise SystemExit("upstream's operator is built with Go, and `go` is not on the PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    # -buildvcs=false: the build runs outside any checkout; GOFLAGS from the caller still apply.
    env = {**os.environ, "GOBIN": str(target.parent), "GOFLAGS": os.environ.get("GOFLAGS", "-buildvcs=false")}
    proxy = subprocess.run([go, "env", "GOPROXY"], capture_output=True, text=True, env=env).stdout.strip()
    print(f"building {MODULE}@{VERSION} (GOPROXY={proxy}) into {target.parent}", file=sys.stderr)
    started = time.monotonic()
    command = ["nice", "-n", "10", go, "install", f"{MODULE}@{VERSION}"]
    subprocess.run(command, env=env, cwd=target.parent, check=True)
    print(f"built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return target


if __name__ == "__main__":
    print(install())
