"""Running the API server: data directory, TLS, the listening socket, kubeconfig, uvicorn, compaction.

`serve(...)` blocks until SIGINT or SIGTERM. It binds the socket itself, so with port 0 the chosen port is
known before serving starts and is written into `DIR/kubeconfig` and printed. The store is compacted
periodically, keeping the newest `compact_keep` revisions for watch resumes; older resumes get 410.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
import uvloop

from localkube.controllers.cluster import cluster_controllers
from localkube.node import logs
from localkube.node.apiaccess import ApiAccess
from localkube.node.kubelet import NodeOptions
from localkube.node.network import BRIDGES, bridge_gateways, bridge_network
from localkube.node.volumes import IssueToken, Token
from localkube.server import apiservice, errors
from localkube.server.app import App
from localkube.server.audit import AuditLog
from localkube.server.auth import Authenticator, write_kubeconfig
from localkube.server.faults import Faults
from localkube.server.podstreams import Output, ProcessNode
from localkube.server.privatefiles import private_directory
from localkube.server.proxy import Proxy
from localkube.server.rbac import bootstrap_policy
from localkube.server.registry import Registry
from localkube.server.rest import SYSTEM_NAMESPACES, Resources
from localkube.server.spdyupgrade import HttpProtocol
from localkube.server.subresources import LogText
from localkube.server.tls import ensure_tls
from localkube.storage import SpaceExceeded, Store

log = logging.getLogger("localkube")


@dataclass(frozen=True)
class ServeOptions:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 6443
    compact_interval_seconds: float = 60.0
    compact_keep: int = 50_000
    # "simulate": the in-process controllers and a simulated node; "process": pods run as local
    # processes; "none": the API server alone.
    node_mode: str = "simulate"
    # False: the controllers run but no node of localkube's own; `localkube agent` attaches one over HTTP.
    own_node: bool = True
    # The schedulers whose pods localkube's scheduler binds (`--schedulers`); others' pods stay Pending.
    schedulers: tuple[str, ...] = ("default-scheduler",)
    # For tests only: the share of resource requests refused with an injected fault (see faults.py).
    inject_faults: float = 0.0
    # kube-apiserver's --audit-log-path and --audit-policy-file (see audit.py); both or neither.
    audit_log_path: Path | None = None
    audit_policy_file: Path | None = None
    # What a process-mode container without a command runs, by image (`--image-entrypoint IMAGE=COMMAND`).
    image_entrypoints: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def build_app(
    data_dir: Path, store: Store, faults: Faults | None = None, audit: AuditLog | None = None
) -> App:
    """The application over a store, with the data directory's credentials (and `faults` injected, requests
    audited to `audit`)."""
    registry = Registry()
    resources = Resources(store, registry)
    resources.seed([*SYSTEM_NAMESPACES, *bootstrap_policy()])
    service_accounts = registry.get("", "v1", "serviceaccounts")
    assert service_accounts is not None

    def find_service_account(namespace: str, name: str) -> dict[str, object] | None:
        return store.get(service_accounts.key(namespace, name))

    def pod_logs(namespace: str, name: str, container: str, query: dict[str, str]) -> LogText:
        """A container's log from the process-mode node's files; with follow=true, a stream that ends when
        the container restarts or the pod goes."""
        key = f"/registry/core/pods/{namespace}/{name}"
        uid = ((store.get(key) or {}).get("metadata") or {}).get("uid", "")
        try:
            tail_lines = int(query["tailLines"]) if query.get("tailLines") else None
            limit_bytes = int(query["limitBytes"]) if query.get("limitBytes") else None
        except ValueError as bad:
            raise errors.bad_request(f"invalid log options: {bad}") from None
        timestamps = query.get("timestamps") == "true"
        if query.get("follow") == "true" and query.get("previous") != "true":
            return logs.follow_log(
                data_dir, namespace, name, uid, container, tail_lines=tail_lines, limit_bytes=limit_bytes,
                timestamps=timestamps, stop=lambda: store.get(key) is None,
            )  # fmt: skip
        try:
            text = logs.read_log(
                data_dir, namespace, name, uid, container, previous=query.get("previous") == "true",
                tail_lines=tail_lines, limit_bytes=limit_bytes, timestamps=timestamps,
            )  # fmt: skip
        except logs.LogNotFound as missing:
            raise errors.bad_request(str(missing)) from None
        return text.decode("utf-8", errors="replace")

    return App(
        resources,
        Authenticator(data_dir, find_service_account),
        pod_logs=pod_logs,
        pod_proxy=Proxy(store),
        faults=faults,
        audit=audit,
    )


def _attach_output(data_dir: Path, store: Store) -> Output:
    """What `kubectl attach` shows of a process-mode container: its log's new lines, one stream at a time."""

    def output(
        namespace: str, name: str, container: str, stream: str, stop: Callable[[], bool]
    ) -> AsyncIterator[bytes]:
        uid = ((store.get(f"/registry/core/pods/{namespace}/{name}") or {}).get("metadata") or {}).get(
            "uid", ""
        )
        return logs.follow_log(
            data_dir, namespace, name, uid, container, tail_lines=0, stream=stream, stop=stop
        )

    return output


async def _compact_periodically(store: Store, interval: float, keep: int) -> None:
    # The first compaction runs at start, before any request is served: a restart begins with the history
    # `keep` allows, as kube-apiserver's watch cache begins empty (so clients resuming from before it relist).
    while True:
        try:
            compacted = store.compact(keep)
            log.debug("compacted the store up to revision %d", compacted)
        except SpaceExceeded as full:
            # Compaction frees space only once it can write; it tries again at the next interval.
            log.warning("compaction skipped: %s", full)
        await asyncio.sleep(interval)


class _Server(uvicorn.Server):
    """uvicorn re-raises a captured SIGTERM/SIGINT once serving ends, which would kill the process before
    the node agent stops its pods' processes; localkube exits by returning instead."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def _token_issuer(authenticator: Authenticator) -> IssueToken:
    def issue(namespace: str, name: str, uid: str, expiration: int, audiences: list[str]) -> Token:
        return Token(*authenticator.issue_service_account_token(namespace, name, uid, expiration, audiences))

    return issue


def serve(options: ServeOptions) -> None:
    # Only its owner may enter the data directory: it holds the keys, the tokens and the database.
    data_dir = private_directory(options.data_dir.resolve())
    tls = ensure_tls(data_dir, options.host, bridge_gateways())
    store = Store(data_dir / "state.db", group_commit=True)
    faults = Faults(options.inject_faults) if options.inject_faults > 0 else None
    audit = None
    if options.audit_log_path is not None and options.audit_policy_file is not None:
        audit = AuditLog.from_files(options.audit_log_path, options.audit_policy_file)
    app = build_app(data_dir, store, faults, audit)
    sock = _bind(options.host, options.port)
    port = sock.getsockname()[1]
    url_host = (
        "127.0.0.1" if options.host in ("0.0.0.0", "") else "[::1]" if options.host == "::" else options.host
    )
    loopback = url_host
    url_host = f"[{url_host}]" if ":" in url_host and not url_host.startswith("[") else url_host
    url = f"https://{url_host}:{port}"
    write_kubeconfig(data_dir / "kubeconfig", url, tls.ca_cert, app.authenticator.admin_token)
    print(f"localkube serving on {url} (kubeconfig: {data_dir / 'kubeconfig'})", flush=True)
    config = uvicorn.Config(
        app,
        ssl_certfile=str(tls.server_cert),
        ssl_keyfile=str(tls.server_key),
        log_level="warning",
        access_log=False,
        lifespan="off",
        # uvicorn's httptools protocol, which also switches to SPDY/3.1 (pods/exec, attach, portforward).
        http=HttpProtocol,
        # wsproto accepts kubectl's port-forward subprotocol ("SPDY/3.1+portforward.k8s.io"), which the
        # websockets library refuses as not a token.
        ws="wsproto",
        # No keepalive pings of the server's own (uvicorn pings every 20 s and drops a WebSocket whose pong
        # is 20 s late), as kube-apiserver sends none on exec, attach or a port-forward tunnel: a stream
        # lasts as long as both ends keep it. A kubectl port-forward paused or starved for 40 s lost every
        # connection it carried ("lost connection to pod"; a WebSocket inside it closed 1006).
        ws_ping_interval=None,
        ws_ping_timeout=None,
        loop="none",
        timeout_keep_alive=120,
        timeout_graceful_shutdown=2,
    )
    server = _Server(config)

    async def main() -> None:
        compaction = asyncio.create_task(
            _compact_periodically(store, options.compact_interval_seconds, options.compact_keep)
        )
        controllers = None
        attach_output = _attach_output(data_dir, store)
        # The `kubernetes` Service names this server, or, once a process node has a pod bridge, the node's
        # forwarder to it there (where those pods reach it).
        apiservice.publish(app.resources, loopback, port)
        if options.node_mode != "none":
            controllers = cluster_controllers(
                app.resources,
                NodeOptions() if options.own_node else None,
                node_mode="process" if options.node_mode == "process" else "simulate",
                data_dir=data_dir,
                schedulers=options.schedulers,
                image_entrypoints=options.image_entrypoints,
                binder=app.binder,
                api_access=ApiAccess(
                    loopback, port, tls.ca_cert.read_bytes(), _token_issuer(app.authenticator)
                ),
            )
            await controllers.start()
            if not options.own_node and app.pod_proxy is not None:
                # The node attached with `localkube agent` on this machine takes one of these bridges.
                for index in range(BRIDGES):
                    app.pod_proxy.allow(str(bridge_network(index)))
            if controllers.kubelet is not None:
                app.pod_streams.node = ProcessNode(controllers.kubelet.container_process, attach_output)
                if app.pod_proxy is not None:
                    app.pod_proxy.allow(str(controllers.kubelet.network.cidr))
            endpoint = controllers.kubelet.api_endpoint if controllers.kubelet is not None else None
            if endpoint is not None:
                apiservice.publish(app.resources, *endpoint)
        # The cyclic collector was ~18 % of a busy localkube's CPU (benchmarks.scale's replay, N = 300:
        # 1.6 of 8.7 CPU s). What start-up made (modules, schemas, the registry, the controllers' first
        # state) lives as long as the server, so it is frozen out of the full collections; and a request
        # allocates thousands of containers, so the youngest generation is collected every 7,000
        # allocations rather than 700 (0.2 CPU s together, same replay).
        gc.freeze()
        gc.set_threshold(7000, 10, 10)
        try:
            await server.serve(sockets=[sock])
        finally:
            if controllers is not None:
                await controllers.stop()
            if faults is not None:
                log.info("injected faults by status code: %s", dict(sorted(faults.injected.items())))
            compaction.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await compaction

    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    finally:
        store.close()
        sock.close()
