"""`localkube agent`: localkube's node run against any Kubernetes API server over HTTP, as KWOK does.

The same kubelets that localkube runs in its own process (`SimulatedKubelet`, `ProcessKubelet`) work here
on a `RemoteStore` (the node's pods and what they read, cached from the server's watches; status written
through `pods/status`) driven by localkube's controller runner, while `Heartbeat` registers the Node and
renews its Lease. In process mode the pods reach the API server the kubeconfig names, with a
service-account token minted by the TokenRequest API (`serviceaccounts/token`) and the kubeconfig's CA.

Shutdown (SIGINT, SIGTERM): the runner stops, a process node stops its pods' processes (the pod objects
stay, as a kubelet's restart leaves them), and the queued writes are sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kubesemantics import times
from localkube.controllers.runner import Runner
from localkube.node.apiaccess import ApiAccess
from localkube.node.apiclient import ApiClient, cluster_ca, load_config, server_address
from localkube.node.heartbeat import LEASE_SECONDS, Heartbeat
from localkube.node.kubelet import NodeOptions, SimulatedKubelet
from localkube.node.process import ProcessKubelet, ProcessOptions
from localkube.node.remote import Kind, RemoteStore
from localkube.node.volumes import IssueToken, Token

log = logging.getLogger(__name__)

AgentMode = Literal["simulate", "process"]
# What a process node's pods read besides themselves: env and volume sources, and Services' endpoints
# for their hosts files.
PROCESS_KINDS = ("configmaps", "secrets", "serviceaccounts", "endpoints")


@dataclass(frozen=True)
class AgentOptions:
    kubeconfig: str
    node_mode: AgentMode
    node_name: str
    data_dir: Path | None = None  # process mode: container logs and the pods' kubelet directories
    lease_seconds: int = LEASE_SECONDS


def token_issuer(client: ApiClient) -> IssueToken:
    """Mints service-account tokens through the TokenRequest API (`serviceaccounts/token`)."""

    def issue(namespace: str, name: str, uid: str, expiration: int, audiences: list[str]) -> Token:
        spec: dict[str, object] = {"expirationSeconds": expiration}
        if audiences:
            spec["audiences"] = audiences
        answer = client.request_now(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        status = answer.get("status") or {}
        expiry = _unix_seconds(str(status.get("expirationTimestamp") or ""))
        return Token(str(status.get("token") or ""), expiry)

    return issue


def _unix_seconds(stamp: str) -> int:
    return int(times.parse_time(stamp).timestamp())


async def run(options: AgentOptions, stopping: asyncio.Event) -> None:
    """Runs the node until `stopping` is set."""
    config = load_config(options.kubeconfig)
    client = ApiClient(config)
    node = NodeOptions(name=options.node_name)
    pods = Kind("pods", f"spec.nodeName={options.node_name}")
    kinds = [pods] if options.node_mode == "simulate" else [pods, *(Kind(p) for p in PROCESS_KINDS)]
    remote = RemoteStore(client, kinds)
    kubelet: SimulatedKubelet | ProcessKubelet
    if options.node_mode == "process":
        if options.data_dir is None:
            raise ValueError("--node-mode process needs --data-dir (container logs live there)")
        host, port = server_address(config)
        access = ApiAccess(host, port, cluster_ca(config), token_issuer(client))
        kubelet = ProcessKubelet(remote, node, ProcessOptions(data_dir=options.data_dir, api=access))
    else:
        kubelet = SimulatedKubelet(remote, node)
    heartbeat = Heartbeat(client, kubelet.node_options, options.lease_seconds)
    registered = await heartbeat.register()
    await remote.start()
    runner = Runner(remote, [kubelet])
    await runner.start()
    beating = asyncio.create_task(heartbeat.run(registered))
    log.info(
        "node %s (%s) is running against %s", options.node_name, options.node_mode, config.cluster.server
    )
    try:
        # A heartbeat that fails for good (failed renewals are retried, not this) ends the agent loudly.
        stop = asyncio.create_task(stopping.wait())
        await asyncio.wait((stop, beating), return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if beating.done():
            beating.result()
    finally:
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating
        await runner.stop()
        if isinstance(kubelet, ProcessKubelet):
            await kubelet.shutdown()
        await remote.stop()
        await client.close()


def main(options: AgentOptions) -> None:
    """Runs the agent until SIGINT or SIGTERM."""

    async def serve() -> None:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopping.set)
        await run(options, stopping)

    asyncio.run(serve())
