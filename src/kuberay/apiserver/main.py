"""`kuberay-apiserver`: the process, with upstream's flags (Go style: `-rpcPortFlag :8887`, also with two
dashes; booleans as `-flag`, `-flag=false`), and this implementation's own: `-kubeconfig`,
`-use-kubernetes-proxy` (reach dashboards through the API server, as the operator's flag of that name),
`-auth-token-file` and `-auth-token-review`.

It prints one line per listener, `kuberay-apiserver: listening <http|grpc> <host>:<port>`, once bound
(port 0 picks a free one).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import uvicorn
from prometheus_client import CollectorRegistry, disable_created_metrics
from prometheus_client.core import REGISTRY

from kuberay.apiserver import gateway, rpc, services
from kuberay.apiserver.auth import Auth, TokenFileAuth, TokenReviewAuth
from kuberay.apiserver.backend import Backend
from kuberay.apiserver.dispatch import Dispatcher, ServerMetrics
from kuberay.controllers.dashboards import dashboard_access
from kuberay.runtime import asgiserver
from kuberay.runtime.client import Client, ConfigurationError, load_config
from kubesemantics import goparse

log = logging.getLogger("kuberay.apiserver")


def _go_bool(value: str) -> bool:
    try:
        return goparse.parse_bool(value)
    except goparse.GoParseError:
        raise argparse.ArgumentTypeError(f"invalid boolean value {value!r}") from None


def _go_duration(raw: str) -> float:
    try:
        return goparse.parse_duration(raw) / 1e9
    except goparse.GoParseError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kuberay-apiserver", description="The KubeRay APIServer (v1 gRPC and REST, v2 proxy)."
    )

    def flag(name: str, **kwargs: object) -> None:
        p.add_argument(f"-{name}", f"--{name}", dest=name.replace("-", "_"), **kwargs)  # type: ignore[arg-type]

    def switch(name: str, default: bool, text: str) -> None:
        flag(name, type=_go_bool, nargs="?", const=True, default=default, help=text)

    flag("rpcPortFlag", default=":8887", help="RPC Port")
    flag("httpPortFlag", default=":8888", help="Http Proxy Port")
    switch("collectMetricsFlag", True, "Whether to collect Prometheus metrics in API server.")
    flag("logFilePath", default="", help="Synchronize logs to local file")
    flag(
        "localSwaggerPath",
        default="",
        help="Specify the root directory for `*.swagger.json` the swagger files.",
    )
    flag("grpc_timeout", type=_go_duration, default=60.0, help="gRPC server timeout duration")
    switch("enable-api-server-v2", True, "Enable API server V2")
    flag(
        "cors-allow-origin",
        default="",
        help="Set the Access-Control-Allow-Origin response header for the HTTP proxy.",
    )
    flag(
        "kubeconfig",
        default=None,
        help="kubeconfig file (else KUBECONFIG, else in-cluster, else ~/.kube/config)",
    )
    switch("use-kubernetes-proxy", False, "Reach Ray dashboards through the API server's service proxy.")
    flag("auth-token-file", default="", help="Accept only callers whose bearer token is a line of this file.")
    switch(
        "auth-token-review",
        False,
        "Check callers' bearer tokens with a Kubernetes TokenReview and act with them.",
    )
    return p


def _address(raw: str) -> tuple[str, int]:
    host, _, port = raw.rpartition(":")
    return host or "0.0.0.0", int(port)


def _configure_logging(path: str) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        handlers.append(logging.FileHandler(path))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s", handlers=handlers,
                        force=True)  # fmt: skip


def main() -> None:
    sys.exit(run(sys.argv[1:]))


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    _configure_logging(args.logFilePath)
    disable_created_metrics()  # type: ignore[no-untyped-call]
    try:
        return asyncio.run(serve(args))
    except (ConfigurationError, OSError, ValueError) as e:
        log.error("cannot start: %s", e)
        return 1


async def serve(args: argparse.Namespace) -> int:
    config = load_config(args.kubeconfig)
    kube = Client.from_config(config, user_agent="kuberay-apiserver", field_manager="kuberay-apiserver")
    backend = Backend(kube, dashboard_access(args.use_kubernetes_proxy, args.kubeconfig))
    auth: Auth
    if args.auth_token_review:
        auth = TokenReviewAuth(backend, config)
    elif args.auth_token_file:
        auth = TokenFileAuth(backend, Path(args.auth_token_file))
    else:
        auth = Auth(backend)
    registry: CollectorRegistry | None = REGISTRY if args.collectMetricsFlag else None
    metrics = ServerMetrics(registry) if registry is not None else None
    dispatcher = Dispatcher(services.HANDLERS, metrics, args.grpc_timeout)
    health = gateway.Health()

    grpc_server = rpc.build_server(dispatcher, auth)
    rpc_host, rpc_port = _address(args.rpcPortFlag)
    bound = grpc_server.add_insecure_port(f"{rpc_host}:{rpc_port}")
    await grpc_server.start()
    print(f"kuberay-apiserver: listening grpc {rpc_host}:{bound}", flush=True)

    extra = None
    if args.enable_api_server_v2:
        from kuberay.apiserver import proxy

        extra = proxy.installer(config, kube, auth)
    app = gateway.build_app(dispatcher, auth, registry, health, cors_allow_origin=args.cors_allow_origin,
                            extra=extra, swagger_dir=args.localSwaggerPath)  # fmt: skip
    http_host, http_port = _address(args.httpPortFlag)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((http_host, http_port))
    server = asgiserver.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    http_task = await asgiserver.serve(server, [sock])
    print(f"kuberay-apiserver: listening http {http_host}:{sock.getsockname()[1]}", flush=True)
    try:
        await asyncio.wait([http_task, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
    finally:
        health.stopping = True
        server.should_exit = True
        with contextlib.suppress(Exception):
            await http_task
        await grpc_server.stop(grace=5)
        await auth.close()
        await backend.dashboards.http.aclose()
        await kube.close()
    return 0
