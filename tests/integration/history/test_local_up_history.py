"""`kuberay local up --history`, as the README tells a user: the History Server runs over DATA_DIR/history,
its URL printed and in `kuberay local status`, and it serves what a collector stores there; `local down`
stops it with the rest."""

from __future__ import annotations

from pathlib import Path

import httpx

from kuberay.history import layout
from kuberay.history.storage import LocalDirectory
from local_instance import LocalInstance, until

SESSION = "session_2026-03-04_05-06-07_000008_9"


def test_local_up_history_serves_the_local_directory(tmp_path: Path) -> None:
    with LocalInstance(tmp_path / "local", "--port", "0", "--history") as local:
        status = local.status()
        assert status is not None
        url, directory = status["history_server"], Path(status["history_dir"])
        assert directory == (tmp_path / "local" / "history").resolve()
        assert f"History Server: {url} (storage: the directory {directory})" in local.log()
        assert httpx.get(f"{url}/clusters").json() == []
        LocalDirectory(directory).put(layout.ClusterRef("default", "demo").metadata_key("", SESSION), b"{}")
        # The server re-lists sessions at most every few seconds.
        listed = until(lambda: httpx.get(f"{url}/clusters").json(), 30, "the session listed", every=0.5)
        assert [(c["name"], c["sessionName"]) for c in listed] == [("demo", SESSION)]
        pid = status["children"]["history-server"]
    assert not Path(f"/proc/{pid}").exists()
