"""The README's path, typed as a user types it: `bash scripts/up --port 0` while port 8080 is taken, an
example applied with `kubectl`, `kuberay local status`, `kuberay local down`; a second `local up` on the
same data directory refused; flags after `--` reaching the operator; `python -m` entry points.

Simulate mode: these check the launcher and the CLI, not Ray (process mode runs in test_examples_run.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.eventually import eventually
from support.local_instance import EXAMPLES, KUBECTL_POLL, REPO, LocalInstance, kuberay

STATE_TIMEOUT = 120.0


@contextlib.contextmanager
def port_8080_taken() -> Iterator[None]:
    """Holds 8080 on every interface, the operator's default metrics address (or leaves it to whoever
    already holds it: taken either way)."""
    with socket.socket() as held:
        with contextlib.suppress(OSError):
            held.bind(("0.0.0.0", 8080))
            held.listen()
        yield


def test_the_readme_walk_through(tmp_path: Path) -> None:
    data_dir = tmp_path / "first"
    with port_8080_taken():
        first = LocalInstance(data_dir, "--port", "0", command=["bash", "scripts/up"]).start()
    try:
        status = first.status()
        assert status is not None
        ns = first.namespace("walk")
        first.kubectl("apply", "-n", ns, "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
        eventually(
            lambda: first.get("raycluster", "minimal", ns).get("status", {}).get("state") == "ready",
            STATE_TIMEOUT,
            every=KUBECTL_POLL,
        )
        # The operator's endpoints are free ports the status names, and they answer there.
        probe = status["operator_health_probe"]
        assert httpx.get(f"http://{probe}/readyz", timeout=5).status_code == 200
        assert not probe.endswith(":8080") and not status["operator_metrics"].endswith(":8080")
        text = kuberay("local", "status", "--data-dir", str(data_dir))
        assert text.returncode == 0
        assert "ready" in text.stdout and status["kubeconfig"] in text.stdout
        assert status["api_server"] in text.stdout and probe in text.stdout

        # A second instance on the same directory is refused, names the holder, and leaves the first alone.
        second = subprocess.run(
            [sys.executable, "-m", "kuberay", "local", "up", "--port", "0", "--data-dir", str(data_dir)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert second.returncode == 1
        assert f"process {status['pid']}" in second.stdout + second.stderr
        assert first.status() == {**status, "phase": "ready"}
        assert first.get("raycluster", "minimal", ns)["status"]["state"] == "ready"

        down = first.down()
        assert down.returncode == 0 and str(status["pid"]) in down.stdout
        assert first.process is not None and first.process.returncode == 0
        assert first.status() is None
        assert kuberay("local", "status", "--data-dir", str(data_dir)).returncode == 3
        assert all(_gone(pid) for pid in status["children"].values())
    finally:
        first.kill()


def _gone(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "zombie" in status.read_text()
    except FileNotFoundError:
        return True


def test_a_killed_launcher_takes_its_children_along_and_frees_the_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "killed"
    local, again = LocalInstance(data_dir, "--port", "0"), LocalInstance(data_dir, "--port", "0")
    try:
        status = local.start().status()
        assert status is not None and local.process is not None
        local.process.kill()  # SIGKILL: no clean-up code runs
        local.process.wait()
        eventually(
            lambda: all(_gone(pid) for pid in status["children"].values()), STATE_TIMEOUT, every=KUBECTL_POLL
        )
        assert local.status() is None
        assert again.start().status()["pid"] != status["pid"]  # type: ignore[index]
        assert again.down().returncode == 0
    finally:
        local.kill()
        again.kill()


def test_flags_after_the_separator_reach_the_operator_and_logs_are_json(tmp_path: Path) -> None:
    local = LocalInstance(tmp_path / "flags", "--port", "0", "--log-format", "json", "--", "--enable-metrics")
    try:
        status = local.start().status()
        assert status is not None
        ns = local.namespace("flags")
        local.kubectl("apply", "-n", ns, "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
        metrics = f"http://{status['operator_metrics']}/metrics"
        # --enable-metrics turns on the control-plane metrics, which name the cluster.
        eventually(
            lambda: f'name="minimal",namespace="{ns}"' in httpx.get(metrics, timeout=5).text,
            STATE_TIMEOUT,
            every=KUBECTL_POLL,
        )
        # One format for the launcher and the operator: every line a JSON record.
        for text in (local.log(), Path(status["logs"]["operator"]).read_text()):
            records = [json.loads(line) for line in text.splitlines()]
            assert records and all({"level", "ts", "logger", "msg"} <= record.keys() for record in records)
    finally:
        local.kill()


def test_a_bad_operator_flag_is_refused_before_anything_starts(tmp_path: Path) -> None:
    data_dir = tmp_path / "bad"
    result = kuberay(
        "local", "up", "--port", "0", "--data-dir", str(data_dir), "--", "--batch-scheduler", "nope"
    )
    assert result.returncode == 2
    assert "batch-scheduler" in result.stdout + result.stderr or "nope" in result.stdout + result.stderr
    assert not (data_dir / "localkube").exists()


def test_operator_flags_without_an_operator_are_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "no-operator"
    result = kuberay(
        "local", "up", "--port", "0", "--data-dir", str(data_dir), "--no-operator", "--", "--enable-metrics"
    )
    assert result.returncode == 2
    assert "--no-operator starts no operator" in result.stdout + result.stderr
    assert not (data_dir / "localkube").exists()


@pytest.mark.parametrize("module", ["kuberay", "kuberay.cli", "kuberay.history.server", "kuberay.operator",
                                    "kuberay.operator.main", "localkube", "localkube.cli"])  # fmt: skip
def test_every_runnable_module_runs(module: str) -> None:
    """Each module a user can run with -m (it has a __main__ or an `if __name__` block) answers --help."""
    result = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "usage" in result.stdout.lower()


# Scripts with an `if __name__` block that are not commands, each for a reason.
INTERNAL_SCRIPTS = {
    "localkube.node.mountns": "run by path (python -I -S) by the process node, inside a container's namespaces",
}


def test_the_runnable_modules_are_all_listed() -> None:
    runnable = sorted(
        ".".join(path.relative_to(REPO / "src").with_suffix("").parts).removesuffix(".__main__")
        for path in (REPO / "src").rglob("*.py")
        if path.name == "__main__.py" or 'if __name__ == "__main__"' in path.read_text()
    )
    listed = test_every_runnable_module_runs.pytestmark[0].args[1]  # type: ignore[attr-defined]
    assert runnable == sorted([*listed, *INTERNAL_SCRIPTS])


def test_status_json_when_nothing_runs(tmp_path: Path) -> None:
    result = kuberay("local", "status", "--data-dir", str(tmp_path), "--output", "json")
    assert (result.returncode, json.loads(result.stdout)) == (3, {"phase": "stopped"})
    down = kuberay("local", "down", "--data-dir", str(tmp_path))
    assert down.returncode == 0 and "nothing runs" in down.stdout


def test_a_taken_api_port_is_named_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = kuberay("local", "up", "--port", str(port), "--data-dir", str(tmp_path / "taken"))
    assert result.returncode == 1
    assert f"port {port} is in use" in result.stdout + result.stderr and "--port 0" in result.stdout
    assert not (tmp_path / "taken" / "localkube.log").exists()


def test_an_operator_that_cannot_start_is_reported_with_its_log(tmp_path: Path) -> None:
    data_dir = tmp_path / "broken"
    result = kuberay("local", "up", "--port", "0", "--data-dir", str(data_dir), "--", "--metrics-addr=nonsense",
                     timeout=300)  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "waiting for the operator" in output and str(data_dir / "operator.log") in output
    assert "is ready" not in output
    assert "metrics server" in (data_dir / "operator.log").read_text()  # the log named holds the reason
    assert kuberay("local", "status", "--data-dir", str(data_dir)).returncode == 3


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("kuberay local ", {"up", "status", "down"}),
        ("kuberay local up --node-mode ", {"simulate", "process"}),
    ],
)
def test_shell_completion(words: str, expected: set[str]) -> None:
    """What bash's completion function asks of the program (typer's protocol) on Tab."""
    env = {**os.environ, "_KUBERAY_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()))}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "kuberay"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert set(result.stdout.split()) == expected
