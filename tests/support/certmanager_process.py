"""The real cert-manager for tests: `scripts/tools/cert-manager/build` builds its controller once from
cert-manager's Go module (pinned version) into the shared cache, beside the module's CRDs; the session
fixture `cert_manager` (tests/conftest.py) is that directory.

`CertManager.install(home, kubeconfig, log)` installs it on a control plane as a user would (see
examples/ray-cluster.mtls.yaml): `kubectl apply --server-side` of the CRDs (too large for the last-applied
annotation of a client-side apply), then the controller against that kubeconfig. `stop()` and `start()`
take the controller away and back (a cert-manager that issues nothing for a while). `uninstall()` stops the
controller and deletes the CRDs (and with them every Issuer and Certificate), so an operator started
later on that control plane finds no cert-manager.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from support import kubectl, stopping
from support.eventually import eventually


class CertManager:
    def __init__(self, home: Path, kubeconfig: Path | str, log: Path) -> None:
        self.home, self.kubeconfig, self.log = home, str(kubeconfig), log
        self.crds = home / "crds"
        self.process: subprocess.Popen[bytes] | None = None

    def kubectl(self, *args: str) -> str:
        return kubectl.run(self.kubeconfig, *args)

    def crd_names(self) -> list[str]:
        return [
            yaml.safe_load(path.read_text())["metadata"]["name"] for path in sorted(self.crds.glob("*.yaml"))
        ]

    @classmethod
    def install(cls, home: Path, kubeconfig: Path | str, log: Path) -> CertManager:
        manager = cls(home, kubeconfig, log)
        manager.kubectl("apply", "--server-side", "-f", str(manager.crds))
        # Not `kubectl wait`: it fails, rather than waits, on a CRD the API server has not given conditions yet.
        established = '{range .items[*]}{.status.conditions[?(@.type=="Established")].status}{"\\n"}{end}'
        names = [f"crd/{name}" for name in manager.crd_names()]
        eventually(
            lambda: (
                manager.kubectl("get", *names, "-o", f"jsonpath={established}").split()
                == ["True"] * len(names)
            ),
            60,
            "cert-manager's CRDs established",
            every=0.2,
            blocking=True,
        )
        return manager.start()

    def start(self) -> CertManager:
        """Starts the controller (again, after `stop`)."""
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [str(self.home / "bin" / "cert-manager-controller"), f"--kubeconfig={self.kubeconfig}"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return self

    def stop(self) -> None:
        """Stops the controller; its CRDs and objects stay (nothing issues certificates meanwhile)."""
        stopping.stop(self.process)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def uninstall(self) -> None:
        self.stop()
        names = [
            yaml.safe_load(path.read_text())["metadata"]["name"] for path in sorted(self.crds.glob("*.yaml"))
        ]
        # Waits until they are gone: the next module on the same control plane either installs them again
        # (an apply beside a CRD still being deleted is refused) or must find cert-manager not served.
        self.kubectl("delete", "crd", "--ignore-not-found", "--wait=true", "--timeout=90s", *names)
