"""The `kubectl ray` plugin through the real kubectl: the session's localkube (simulate mode), one operator
process for the module, and `ray_cli(*args)`, which runs `kubectl ray ...` in a fresh namespace with this
environment's bin directory first on PATH, so kubectl finds `kubectl-ray` there as it would for a user."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

if shutil.which("kubectl") is None:
    pytest.skip("kubectl is not on the PATH", allow_module_level=True)

BIN = str(Path(sys.executable).parent)
_counter = itertools.count()

RayCli = Callable[..., subprocess.CompletedProcess[str]]


def run_plugin(kubeconfig: Path | str, *args: str, input: str | None = None, timeout: float = 120, kubectl: tuple[str, ...] = ("kubectl", "ray")) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """`kubectl ray ARGS` (or another `kubectl` prefix) as a user runs it: KUBECONFIG set, the plugin on PATH."""
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(kubeconfig),
    }
    return subprocess.run(
        [*kubectl, *args], input=input, capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.fixture(scope="module")
def operator(
    localkube: LocalKubeProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    directory = tmp_path_factory.mktemp("operator")
    process = OperatorProcess(localkube.kubeconfig, directory / "operator.log").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def api(localkube: LocalKubeProcess) -> Iterator[httpx.Client]:
    with localkube.client(timeout=30) as client:
        yield client


@pytest.fixture
def namespace(api: httpx.Client) -> Iterator[str]:
    name = f"kubectl-ray-{next(_counter)}-{os.getpid()}"
    api.post("/api/v1/namespaces", json={"metadata": {"name": name}}).raise_for_status()
    yield name
    api.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def ray_cli(localkube: LocalKubeProcess, namespace: str) -> RayCli:
    """`kubectl ray ARGS -n <namespace>` with the admin kubeconfig (KUBECONFIG, as a user sets it)."""

    def run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        # Before any `--`: what follows it is the job's entrypoint.
        cut = args.index("--") if "--" in args else len(args)
        return run_plugin(localkube.kubeconfig, *args[:cut], "-n", namespace, *args[cut:], **kwargs)

    return run
