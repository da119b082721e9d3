"""`kuberay local up --node-mode process --history`, as the README tells a user: the History Server runs over
DATA_DIR/history, its URL printed and in `kuberay local status`, and it serves what a collector stores
there; the collector's image runs without a command (its entrypoint, as the operator's injected sidecar
has none); `local down` stops it with the rest. No Ray runs: the collector waits for a Ray session."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from kuberay.history import layout
from kuberay.history.storage import LocalDirectory
from support.eventually import eventually
from support.local_instance import LocalInstance

SESSION = "session_2026-03-04_05-06-07_000008_9"


def test_local_up_history_serves_the_local_directory(tmp_path: Path) -> None:
    with LocalInstance(tmp_path / "local", "--port", "0", "--node-mode", "process", "--history") as local:
        status = local.status()
        assert status is not None
        url, directory = status["history_server"], Path(status["history_dir"])
        assert directory == (tmp_path / "local" / "history").resolve()
        assert f"History Server: {url} (storage: the directory {directory})" in local.log()
        assert httpx.get(f"{url}/clusters").json() == []
        LocalDirectory(directory).put(layout.ClusterRef("default", "demo").metadata_key("", SESSION), b"{}")
        # The server re-lists sessions at most every few seconds.
        listed = eventually(lambda: httpx.get(f"{url}/clusters").json(), 30, "the session listed", every=0.5)
        assert [(c["name"], c["sessionName"]) for c in listed] == [("demo", SESSION)]
        pid = status["children"]["history-server"]
        # The sidecar the operator injects names only the image: process mode runs its entrypoint.
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "collector", "namespace": "default"},
               "spec": {"containers": [{"name": "ray-history-collector", "image": "kuberay-history-collector:latest",
                                        "env": [{"name": "RAY_CLUSTER_NAME", "value": "demo"},
                                                {"name": "STORAGE_BACKEND", "value": "local"},
                                                {"name": "STORAGE_LOCAL_DIR", "value": str(directory)}]}]}}  # fmt: skip
        local.kubectl("apply", "-f", "-", input=json.dumps(pod))
        local.kubectl("wait", "pod/collector", "--for=condition=Ready", "--timeout=120s")
        eventually(
            lambda: local.kubectl("logs", "collector", check=False) or None,
            60,
            "the collector's log",
            every=1,
        )
        local.kubectl("delete", "pod", "collector", "--wait=true", "--timeout=60s")
    assert not Path(f"/proc/{pid}").exists()
