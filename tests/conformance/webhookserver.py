"""A small admission webhook server for tests: real HTTPS on 127.0.0.1 with a certificate of its own CA,
answering AdmissionReviews by path, and recording every review it gets.

    /allow            allowed
    /deny             refused with a 403 status and the message `no thanks`
    /label            allowed with a JSONPatch adding the label `mutated: "yes"`
    /annotate         allowed with a JSONPatch adding the annotation `annotated: "yes"`
    /slow             answers after 3 s (longer than a 1 s timeoutSeconds)
    /wrong-uid        answers with another uid
    /warn             allowed with the warning `mind the "gap"`
"""

from __future__ import annotations

import base64
import ipaddress
import json
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509

from localkube.server import tls


def make_certificates(directory: Path, dns_names: list[str]) -> bytes:
    """A CA and a serving certificate for `dns_names` and 127.0.0.1 (`tls.crt`, `tls.key` in `directory`,
    as controller-runtime reads them); returns the CA's PEM."""
    directory.mkdir(parents=True, exist_ok=True)
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    ca, cert, key = tls.issue("test webhook CA", dns_names[0], names)
    (directory / "tls.crt").write_bytes(cert)
    (directory / "tls.key").write_bytes(key)
    return ca


@dataclass
class WebhookServer:
    """The server (started by `start`, stopped by `stop`) and the reviews it received, by path."""

    cert_dir: Path
    received: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    def start(self) -> WebhookServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                path = self.path.split("?")[0]
                review = json.loads(self.rfile.read(int(self.headers["content-length"])))
                owner.received.setdefault(path, []).append(review)
                request = review["request"]
                response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
                if path == "/deny":
                    response = {
                        "uid": request["uid"],
                        "allowed": False,
                        "status": {"code": 403, "reason": "Forbidden", "message": "no thanks"},
                    }
                elif path == "/label":
                    ops = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
                    if (request["object"]["metadata"].get("labels")) is not None:
                        ops = [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]
                    response["patchType"] = "JSONPatch"
                    response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
                elif path == "/annotate":
                    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"annotated": "yes"}}]
                    response["patchType"] = "JSONPatch"
                    response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
                elif path == "/slow":
                    time.sleep(3)
                elif path == "/warn":
                    response["warnings"] = ['mind the "gap"']
                elif path == "/wrong-uid":
                    response["uid"] = "not-the-uid"
                body = json.dumps(
                    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_dir / "tls.crt", self.cert_dir / "tls.key")
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.daemon_threads = True
        self._server = server
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
