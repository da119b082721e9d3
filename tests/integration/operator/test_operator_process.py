import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from kuberay.local.ports import free_port
from kuberay.runtime.resources import CONFIG_MAP, LEASE
from support.eventually import eventually

from ..runtime.kube import client_for, new_namespace

TOY = Path(__file__).with_name("toy_operator.py")
LEASE_SECONDS, RENEW_SECONDS, RETRY_SECONDS = 4.0, 3.0, 0.5


class Operator:
    def __init__(
        self,
        tmp_path: Path,
        localkube,
        namespace: str,
        name: str,
        *extra: str,
        program: list[str] | None = None,
    ):
        self.metrics_port, self.probe_port = free_port(), free_port()
        self.log = tmp_path / f"{name}.log"
        argv = [
            *(program or [sys.executable, str(TOY)]),
            f"--kubeconfig={localkube.kubeconfig}",
            f"--metrics-addr=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.probe_port}",
            f"--watch-namespace={namespace}",
            f"--leader-election-namespace={namespace}",
            f"--leader-election-lease-duration={LEASE_SECONDS}",
            f"--leader-election-renew-deadline={RENEW_SECONDS}",
            f"--leader-election-retry-period={RETRY_SECONDS}",
            *extra,
        ]  # fmt: skip
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self.log.read_text()

    def get(self, port: int, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(30)


def leads(operator: Operator) -> bool:
    return "successfully acquired lease" in operator.output()


async def test_one_operator_leads_and_the_other_takes_over_within_the_lease(localkube, tmp_path):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    first = Operator(tmp_path, localkube, namespace, "first")
    try:
        await eventually(lambda: leads(first))
        second = Operator(tmp_path, localkube, namespace, "second")
        try:
            await eventually(lambda: second.get(second.probe_port, "/readyz")[0] == 200)
            await client.create(
                CONFIG_MAP, {"metadata": {"name": "toy", "namespace": namespace, "labels": {"toy": "yes"}}}
            )

            async def reconciled_by(operator: Operator) -> bool:
                cm = await client.get(CONFIG_MAP, "toy", namespace)
                annotations = cm["metadata"].get("annotations") or {}
                return annotations.get("toy/reconciled-by") == str(operator.process.pid)

            await eventually(lambda: reconciled_by(first), 10, "the toy reconciled by the first")
            assert not leads(second) and "toy reconciled" not in second.output()

            first.process.kill()
            killed = time.monotonic()
            await eventually(lambda: leads(second), timeout=LEASE_SECONDS * 3)
            # client-go's bound: the lease duration, plus a retry period to notice, plus scheduling slack.
            assert time.monotonic() - killed < LEASE_SECONDS + 2 * RETRY_SECONDS + 1.5
            await client.patch(CONFIG_MAP, "toy", {"data": {"changed": "yes"}}, namespace)
            await eventually(lambda: reconciled_by(second), 10, "the toy reconciled by the second")
            lease = await client.get(LEASE, "ray-operator-leader", namespace)
            assert lease["spec"]["leaseTransitions"] == 1
        finally:
            assert second.stop() == 0
        lease = await client.get(LEASE, "ray-operator-leader", namespace)
        assert lease["spec"]["holderIdentity"] == ""  # released on a graceful stop
    finally:
        first.stop()
        await client.close()


async def test_metrics_and_probes_answer(localkube, tmp_path):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    operator = Operator(tmp_path, localkube, namespace, "solo", "--enable-leader-election=false")
    try:
        await eventually(lambda: operator.get(operator.probe_port, "/readyz") == (200, "ok"))
        assert operator.get(operator.probe_port, "/healthz") == (200, "ok")
        await client.create(
            CONFIG_MAP, {"metadata": {"name": "toy", "namespace": namespace, "labels": {"toy": "yes"}}}
        )
        success = 'controller_runtime_reconcile_total{controller="toy",result="success"}'
        await eventually(lambda: success in operator.get(operator.metrics_port, "/metrics")[1])
        status, metrics = operator.get(operator.metrics_port, "/metrics")
        assert status == 200
        for name in [
            'controller_runtime_reconcile_total{controller="toy",result="success"}',
            "controller_runtime_reconcile_errors_total",
            'controller_runtime_reconcile_time_seconds_bucket{controller="toy"',
            'controller_runtime_max_concurrent_reconciles{controller="toy"} 1.0',
            'controller_runtime_active_workers{controller="toy"}',
            'workqueue_adds_total{controller="toy",name="toy"}',
            "workqueue_depth",
            "workqueue_queue_duration_seconds_bucket",
            "workqueue_work_duration_seconds_bucket",
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
            "workqueue_retries_total",
        ]:
            assert name in metrics, name
        assert operator.get(operator.probe_port, "/nope")[0] == 404
    finally:
        assert operator.stop() == 0
        await client.close()
    assert '"reconcileID"' in operator.output()  # JSON lines carry the reconcile id


async def test_the_operator_runs_leads_and_stops_cleanly_with_no_controllers(localkube, tmp_path):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    program = [sys.executable, "-m", "kuberay.operator.main"]
    operator = Operator(
        tmp_path, localkube, namespace, "bare", "--log-stdout-encoder=console", program=program
    )
    try:
        await eventually(lambda: leads(operator))
        assert operator.get(operator.probe_port, "/readyz") == (200, "ok")
        status, metrics = operator.get(operator.metrics_port, "/metrics")
        assert status == 200 and "# TYPE controller_runtime_reconcile_total counter" in metrics
    finally:
        assert operator.stop() == 0
        await client.close()
    assert "\tINFO\t" in operator.output()  # the console encoder


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["--feature-gates=Bogus=true"], "unrecognized feature gate: Bogus"),
        (
            ["--feature-gates", "RayCronJob=yes"],
            'invalid value of RayCronJob=yes, err: strconv.ParseBool: parsing "yes"',
        ),
        (["--config=/nonexistent/config.yaml"], "failed to read config file"),
        (["--reconcile-concurrency=many"], "invalid int value: 'many'"),
    ],
)
def test_bad_settings_exit_2_with_one_line(argv, message):
    done = subprocess.run(
        [sys.executable, "-m", "kuberay.operator.main", *argv], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert done.stdout == ""


def test_a_bad_config_file_exits_2(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nreconcileConcurency: 2\n")
    done = subprocess.run(
        [sys.executable, "-m", "kuberay.operator.main", f"--config={config}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "reconcileConcurency: unknown field" in done.stderr


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        ("RAYSERVICE_UPGRADE_TIMEOUT_SECONDS", "5m", "RAYSERVICE_UPGRADE_TIMEOUT_SECONDS='5m': must be an integer "
                                                     "number of seconds"),
        ("KUBERAY_FEATURE_NOSUCHGATE", "true", "KUBERAY_FEATURE_NOSUCHGATE: unrecognized feature gate: NOSUCHGATE"),
        ("KUBERAY_FEATURE_RAYCRONJOB", "maybe", "KUBERAY_FEATURE_RAYCRONJOB: invalid value of RayCronJob=maybe, err: "
                                                "strconv.ParseBool: parsing \"maybe\": invalid syntax"),
    ],
)  # fmt: skip
def test_a_bad_environment_value_exits_2_with_one_line(variable, value, line):
    environ = {**os.environ, variable: value}
    done = subprocess.run(
        [sys.executable, "-m", "kuberay.operator.main"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
    )
    assert done.returncode == 2
    [printed] = done.stderr.splitlines()
    assert printed.startswith(f"kuberay-operator: invalid environment variable {line}")
