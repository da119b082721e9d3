import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from localkube.server.errors import ApiError
from localkube.server.proxy import Proxy, ProxyTarget, parse
from localkube.storage import Store


class _Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        reply = f"{self.path} {self.headers.get('Authorization')} {body.decode()}".encode()
        self.send_response(201)
        self.send_header("X-Echo", "yes")
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _store(tmp_path: Path, address: str, port: int) -> Store:
    store = Store(tmp_path / "db")
    service = {
        "metadata": {"name": "head", "namespace": "ray"},
        "spec": {"ports": [{"name": "dashboard", "port": 8265}]},
    }
    store.create("/registry/core/services/ray/head", service)
    subset = {"addresses": [{"ip": address}], "ports": [{"name": "dashboard", "port": port}]}
    store.create(
        "/registry/core/endpoints/ray/head",
        {"metadata": {"name": "head", "namespace": "ray"}, "subsets": [subset]},
    )
    return store


def test_parse_names_scheme_and_port() -> None:
    segments = "/api/v1/namespaces/ray/services/https:head:dashboard/proxy/api/jobs/"
    assert parse(segments) == ProxyTarget("services", "ray", "head", "https", "dashboard", "/api/jobs/")
    assert parse("/api/v1/namespaces/ray/pods/p/proxy") == ProxyTarget("pods", "ray", "p", "http", "", "/")
    assert parse("/api/v1/namespaces/ray/configmaps/c/proxy") is None


async def test_forwards_to_a_ready_endpoint_without_the_callers_credentials(
    tmp_path: Path, echo_port: int
) -> None:
    proxy = Proxy(_store(tmp_path, "127.0.0.1", echo_port))
    target = ProxyTarget("services", "ray", "head", "http", "dashboard", "/api/jobs/")
    status, headers, body = await proxy.forward(
        target, "POST", "x=1", {"Authorization": "Bearer admin"}, b"payload"
    )
    assert status == 201
    assert ("x-echo", "yes") in [(k.lower(), v) for k, v in headers]
    assert body == b"/api/jobs/?x=1 None payload"


async def test_refuses_what_it_cannot_or_must_not_reach(tmp_path: Path) -> None:
    proxy = Proxy(_store(tmp_path, "192.0.2.10", 8265))
    with pytest.raises(ApiError, match="not an address on this machine") as refused:
        await proxy.forward(
            ProxyTarget("services", "ray", "head", "http", "dashboard", "/"), "GET", "", {}, b""
        )
    assert refused.value.code == 503
    with pytest.raises(ApiError, match='no service port "metrics" found'):
        proxy.resolve(ProxyTarget("services", "ray", "head", "http", "metrics", "/"))
    empty = Store(tmp_path / "db2")
    empty.create(
        "/registry/core/services/ray/head", {"metadata": {"name": "head"}, "spec": {"ports": [{"port": 80}]}}
    )
    with pytest.raises(ApiError, match='no endpoints available for service "head"'):
        Proxy(empty).resolve(ProxyTarget("services", "ray", "head", "http", "", "/"))
