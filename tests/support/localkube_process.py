"""localkube as a subprocess for tests: start, wait until ready, stop, kill -9, restart.

`LocalKubeProcess(data_dir, port=None)` runs `python -m localkube serve` on `data_dir`. Without a port it
asks for a free one and keeps it across restarts, so kubeconfigs and clients stay valid. Its output goes to
`data_dir/localkube.log` (level from LOCALKUBE_LOG_LEVEL, default info). `client()` is an httpx client
that trusts the server's CA and sends the admin token; `apply(objects)` creates or replaces objects
through it (used to install CRDs).
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx
import yaml

from support.eventually import eventually


class LocalKubeProcess:
    def __init__(self, data_dir: Path, port: int | None = None, extra_args: Iterable[str] = ()) -> None:
        self.data_dir = data_dir
        self.port = port
        self.extra_args = list(extra_args)
        self.process: subprocess.Popen[bytes] | None = None
        self._url: str | None = None

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> LocalKubeProcess:
        """Starts the server and returns once /readyz answers 200."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "localkube", "serve", "--data-dir", str(self.data_dir),
            "--port", str(self.port if self.port is not None else 0),
            "--log-level", os.environ.get("LOCALKUBE_LOG_LEVEL", "info"), *self.extra_args,
        ]  # fmt: skip
        log_path = self.data_dir / "localkube.log"
        offset = log_path.stat().st_size if log_path.exists() else 0
        # stdout goes to the log file too: a pipe nobody drains would block the server once full.
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        self._url = self._announced_url(log_path, offset, deadline)
        self.port = int(self._url.rsplit(":", 1)[1])
        self._wait_ready(deadline)
        return self

    def _announced_url(self, log_path: Path, offset: int, deadline: float) -> str:
        process = self.process
        assert process is not None

        def announced() -> str:
            with log_path.open("rb") as log:
                log.seek(offset)
                for line in log.read().decode(errors="replace").splitlines():
                    if line.startswith("localkube serving on "):
                        return line.split()[3]
            assert process.poll() is None, f"localkube exited with {process.returncode}; see {log_path}"
            return ""

        url: str = eventually(
            announced,
            deadline - time.monotonic(),
            "localkube announcing its address",
            every=0.05,
            blocking=True,
        )
        return url

    def _wait_ready(self, deadline: float) -> None:
        def ready() -> bool:
            try:
                return (
                    httpx.get(f"{self.url}/readyz", verify=self.ssl_context(), timeout=2).status_code == 200
                )
            except httpx.TransportError:
                return False

        eventually(ready, deadline - time.monotonic(), "localkube ready", every=0.05, blocking=True)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within `timeout`."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL: the crash the store must survive."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.kill()
        self.process.wait()

    def restart(self) -> LocalKubeProcess:
        self.stop()
        return self.start()

    def __enter__(self) -> LocalKubeProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- access ---------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._url is not None, "not started"
        return self._url

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    @property
    def token(self) -> str:
        return (self.data_dir / "admin-token").read_text().strip()

    @property
    def ca_cert(self) -> Path:
        return self.data_dir / "pki" / "ca.crt"

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_cert))

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        """A client for the API that trusts the CA and sends `token` (default: the admin's)."""
        return httpx.Client(
            base_url=self.url,
            verify=self.ssl_context(),
            headers={"Authorization": f"Bearer {token or self.token}"},
            **kwargs,
        )

    def service_account_kubeconfig(self, namespace: str, account: str, target: Path) -> Path:
        """A kubeconfig at `target` that authenticates as the ServiceAccount (a TokenRequest's token)."""
        with self.client() as admin:
            response = admin.post(
                f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
            )
            response.raise_for_status()
        config = yaml.safe_load(self.kubeconfig.read_text())
        config["users"][0]["user"] = {"token": response.json()["status"]["token"]}
        target.write_text(yaml.safe_dump(config))
        return target

    def apply(self, objects: Iterable[dict[str, Any]]) -> None:
        """Creates each object, or replaces it when it exists (resources found through discovery)."""
        with self.client(timeout=30) as client:
            for obj in objects:
                path = _collection_path(client, obj)
                created = client.post(path, json=obj)
                if created.status_code == 409:
                    name = obj["metadata"]["name"]
                    current = client.get(f"{path}/{name}").json()
                    metadata = {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
                    client.put(f"{path}/{name}", json={**obj, "metadata": metadata}).raise_for_status()
                else:
                    created.raise_for_status()

    def apply_files(self, paths: Iterable[Path]) -> None:
        for path in paths:
            with path.open() as f:
                self.apply(doc for doc in yaml.load_all(f, Loader=yaml.CSafeLoader) if doc)


def _collection_path(client: httpx.Client, obj: dict[str, Any]) -> str:
    api_version, kind = obj["apiVersion"], obj["kind"]
    base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    listing = client.get(base)
    listing.raise_for_status()
    resource = next(r for r in listing.json()["resources"] if r["kind"] == kind and "/" not in r["name"])
    if not resource["namespaced"]:
        return f"{base}/{resource['name']}"
    namespace = obj.get("metadata", {}).get("namespace") or "default"
    return f"{base}/namespaces/{namespace}/{resource['name']}"
