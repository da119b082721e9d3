"""The real scheduler-plugins gang scheduler for tests: `scripts/tools/scheduler-plugins/build` builds its
kube-scheduler (the Coscheduling plugin compiled in) and its PodGroup controller once from the module
sigs.k8s.io/scheduler-plugins into the shared cache, beside the module's scheduling.x-k8s.io CRDs; the
session fixture `scheduler_plugins` (tests/integration/realkube/test_gang_scheduler.py) is that directory.

`SchedulerPlugins.install(home, server, directory)` runs it beside a control plane the way the module's
`as-a-second-scheduler` chart does, with both programs as host processes rather than a Deployment:
the CRDs applied, then the scheduler under the profile `scheduler-plugins-scheduler` (the schedulerName
KubeRay gives the pods of a gang-scheduled RayCluster) with Coscheduling as its queue sort and in every
extension point, and the controller that writes each PodGroup's status. Both use the control plane's admin
kubeconfig (the chart's ClusterRoles grant them as much as the API groups they read). `uninstall()` stops
them and deletes the CRDs (with their PodGroups).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from support import stopping
from support.kueue import free_port

SCHEDULER_NAME = "scheduler-plugins-scheduler"
# How long a gang's first pods wait in Permit for the rest before all are sent back to the queue: the
# chart's default is 60 s; a short wait makes a gang that cannot fit go round the queue often.
PERMIT_WAITING_SECONDS = 10


def configuration(kubeconfig: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": kubeconfig},
        "profiles": [
            {
                "schedulerName": SCHEDULER_NAME,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                },
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": PERMIT_WAITING_SECONDS}}
                ],
            }
        ],
    }


class SchedulerPlugins:
    def __init__(self, home: Path, server: Any, directory: Path) -> None:
        self.home, self.server, self.directory = home, server, directory
        self.kubeconfig = str(server.kubeconfig)
        self.processes: list[subprocess.Popen[bytes]] = []

    @classmethod
    def install(cls, home: Path, server: Any, directory: Path) -> SchedulerPlugins:
        installed = cls(home, server, directory)
        installed.server.apply_files(sorted((home / "crds").glob("*.yaml")))
        config = directory / "scheduler-config.yaml"
        config.write_text(yaml.safe_dump(configuration(installed.kubeconfig)))
        installed._spawn("kube-scheduler", [
            f"--config={config}", f"--authentication-kubeconfig={installed.kubeconfig}",
            f"--authorization-kubeconfig={installed.kubeconfig}", "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}", f"--cert-dir={directory / 'scheduler-certs'}",
        ])  # fmt: skip
        installed._spawn("controller", [
            f"--kubeconfig={installed.kubeconfig}", f"--metricsAddr=127.0.0.1:{free_port()}",
            f"--probeAddr=127.0.0.1:{free_port()}",
        ])  # fmt: skip
        return installed

    def _spawn(self, name: str, args: list[str]) -> None:
        with (self.directory / f"{name}.log").open("ab") as log:
            self.processes.append(
                subprocess.Popen([str(self.home / "bin" / name), *args], stdout=log, stderr=subprocess.STDOUT)
            )

    def check_alive(self) -> None:
        for process in self.processes:
            if process.poll() is not None:
                raise AssertionError(
                    f"{process.args[0]} exited with {process.returncode}; see {self.directory}"
                )

    def uninstall(self) -> None:
        for process in self.processes:
            stopping.stop(process)
        with self.server.client() as admin:
            for crd in sorted((self.home / "crds").glob("*.yaml")):
                (document,) = [doc for doc in yaml.safe_load_all(crd.read_text()) if doc]
                name = document["metadata"]["name"]
                admin.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
