"""The real cert-manager for tests: `scripts/tools/cert-manager/build` builds its controller once from
cert-manager's Go module (pinned version) into the shared cache, beside the module's CRDs.

`CertManager.install(server, log)` applies those CRDs to a control plane (localkube or realkube: anything
with `apply_files` and a `kubeconfig`) and starts the controller against it with the admin kubeconfig, as
an operator of the cluster installs cert-manager; `uninstall()` stops it and deletes the CRDs (and with
them every Issuer and Certificate), so an operator started later finds no cert-manager.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import yaml

import toolbuild

TOOL = "cert_manager"


def built() -> tuple[Path, float]:
    """The build's directory (building it when missing) and the seconds that took."""
    return toolbuild.ensure(TOOL)


class CertManager:
    def __init__(self, home: Path, server: Any, log: Path) -> None:
        self.home, self.server, self.log = home, server, log
        self.crds = sorted((home / "crds").glob("*.yaml"))
        self.process: subprocess.Popen[bytes] | None = None

    @classmethod
    def install(cls, home: Path, server: Any, log: Path) -> CertManager:
        manager = cls(home, server, log)
        server.apply_files(manager.crds)
        with log.open("ab") as out:
            manager.process = subprocess.Popen(
                [str(home / "bin" / "cert-manager-controller"), f"--kubeconfig={server.kubeconfig}"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return manager

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def uninstall(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        names = [yaml.safe_load(path.read_text())["metadata"]["name"] for path in self.crds]
        subprocess.run(
            [
                "kubectl",
                f"--kubeconfig={self.server.kubeconfig}",
                "delete",
                "crd",
                "--ignore-not-found",
                "--wait=false",
                *names,
            ],
            capture_output=True,
            check=True,
            timeout=120,
        )
