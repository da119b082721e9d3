"""A fresh localkube with the ray.io CRDs and one operator, ours or upstream's, with the same flags.

`Environment(workdir, operator="upstream"|"ours")` starts localkube (simulate mode) on `workdir/localkube`,
installs `deploy/crds`, then the operator with the flags `kuberay local up` gives ours (leader election
off, free metrics and health ports, the service proxy, JSON logs), and returns once its `/readyz`
answers. Feature gates differ: each operator is given the gates it knows (upstream's binary refuses an
unknown gate at start-up). The operator's log is `workdir/operator.log`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType

from benchmarks.peer import upstream
from benchmarks.processes import stop_group, wait_ready
from kuberay.local.launcher import LocalOptions, operator_flags
from support.localkube_process import LocalKubeProcess

REPO = Path(__file__).resolve().parents[2]
# The alpha gates the samples need, as each version names them; upstream's RayMultiHostIndexing (alpha,
# off in v1.5.0) is on by default in ours (beta in the spec's later snapshot), so it is on for both.
GATES = {
    "ours": "RayClusterNetworkPolicy=true,GCSFaultToleranceEmbeddedStorage=true,RayJobDeletionPolicy=true",
    "upstream": "RayJobDeletionPolicy=true,RayMultiHostIndexing=true",
}


class Environment:
    def __init__(self, workdir: Path, operator: str = "upstream", extra_flags: tuple[str, ...] = ()) -> None:
        assert operator in GATES, operator
        self.workdir, self.kind, self.extra_flags = workdir, operator, extra_flags
        self.localkube = LocalKubeProcess(workdir / "localkube")
        self.operator: subprocess.Popen[bytes] | None = None
        self.log = workdir / "operator.log"

    def start(self) -> Environment:
        self.localkube.start()
        self.localkube.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
        options = LocalOptions(data_dir=self.workdir, log_format="json", feature_gates=GATES[self.kind])
        flags = [*operator_flags(options, self.localkube.kubeconfig), *self.extra_flags]
        health = next(f.split("=", 1)[1] for f in flags if f.startswith("--health-probe-bind-address="))
        if self.kind == "upstream":
            command = [str(upstream.install()), *flags]
        else:
            command = [sys.executable, "-m", "kuberay.operator", *flags]
        # KUBECONFIG too: upstream reads it when its --kubeconfig flag is not registered.
        env = {**os.environ, "KUBECONFIG": str(self.localkube.kubeconfig)}
        with self.log.open("ab") as log:
            self.operator = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        if not wait_ready(self.operator, f"http://{health}/readyz", timeout=120):
            self.stop()
            raise RuntimeError(f"the {self.kind} operator did not become ready; see {self.log}")
        return self

    @property
    def operator_pid(self) -> int:
        assert self.operator is not None
        return self.operator.pid

    def stop(self) -> None:
        stop_group(self.operator)
        self.localkube.stop()

    def __enter__(self) -> Environment:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
