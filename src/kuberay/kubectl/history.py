"""`kubectl ray history [TYPE/NAME]` and `kubectl ray session --history TYPE/NAME`: the sessions the History
Server stored, and its Ray dashboard for one of them.

The server is `--history-server URL` (or `$KUBERAY_HISTORY_SERVER`, e.g. the URL `kuberay local up --history`
prints); without one, the in-cluster Service `kuberay-history-server` (port 8080, namespace
`--history-namespace`, `ray-system` by default, as deploy/ and the Helm chart install it) is reached through
`kubectl port-forward` for the command's duration. A token (`--history-token`, `$KUBERAY_HISTORY_TOKEN`)
is sent as a bearer token. Sessions are listed in the current namespace (`-A`: all), newest first; TYPE/NAME
is a RayCluster (by its name), a RayJob or a RayService (by theirs, the clusters they made).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click
import httpx

from kuberay.kubectl import printer, session
from kuberay.kubectl.kube import Kube, KubeFlags, PluginError

SERVER_ENV = "KUBERAY_HISTORY_SERVER"
TOKEN_ENV = "KUBERAY_HISTORY_TOKEN"
SERVICE = "kuberay-history-server"
SERVICE_PORT = 8080
DEFAULT_NAMESPACE = "ray-system"
T = TypeVar("T")


@dataclass(frozen=True)
class Server:
    url: str  # "" : the in-cluster Service, port-forwarded
    namespace: str
    token: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


@contextlib.asynccontextmanager
async def reach(server: Server, kube: Kube, flags: KubeFlags) -> AsyncIterator[str]:
    """The server's base URL, port-forwarding its Service while needed."""
    if server.url:
        yield server.url.rstrip("/")
        return
    process, address = await session.forward_in_background(
        flags,
        flags.context or kube.context,
        server.namespace,
        SERVICE,
        SERVICE_PORT,
        "/readz",
        progress=False,
    )
    try:
        yield address
    finally:
        await session.stop(process)


def _owner(info: dict[str, Any]) -> tuple[str, str]:
    """(type, name) by which a stored session is asked for."""
    kind = info.get("ownerKind") or "raycluster"
    return kind, str(info.get("ownerName") or info.get("name") or "")


async def _sessions(base: str, server: Server) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=base, headers=server.headers(), timeout=30) as http:
        try:
            reply = await http.get("/clusters")
        except httpx.HTTPError as e:
            raise PluginError(f"cannot reach the History Server at {base}: {e}") from e
    if reply.status_code == 401:
        raise PluginError(
            f"the History Server at {base} wants a token: pass --history-token or set {TOKEN_ENV}"
        )
    if reply.status_code != 200:
        raise PluginError(f"the History Server at {base} answered {reply.status_code}: {reply.text.strip()}")
    found: list[dict[str, Any]] = reply.json()
    return found


def selected(
    infos: list[dict[str, Any]], namespace: str | None, target: tuple[str, str] | None
) -> list[dict[str, Any]]:
    """The sessions in `namespace` (None: all) of `target` (None: any), as the server orders them."""
    return [
        info
        for info in infos
        if (namespace is None or info.get("namespace") == namespace)
        and (target is None or _owner(info) == target)
    ]


async def list_sessions(
    kube: Kube, flags: KubeFlags, server: Server, target: tuple[str, str] | None, all_namespaces: bool
) -> str:
    async with reach(server, kube, flags) as base:
        infos = selected(await _sessions(base, server), None if all_namespaces else kube.namespace, target)
    if not infos:
        where = "any namespace" if all_namespaces else f"namespace {kube.namespace}"
        what = f"{target[0]}/{target[1]}" if target else "any cluster"
        return f"No stored sessions of {what} in {where}.\n"
    rows = [
        [info["namespace"], "/".join(_owner(info)), info["name"], info["sessionName"], info["createTime"]]
        for info in infos
    ]
    return printer.table(["NAMESPACE", "TYPE/NAME", "RAY CLUSTER", "SESSION", "CREATED"], rows)


async def open_session(kube: Kube, flags: KubeFlags, server: Server, target: tuple[str, str]) -> None:
    """Prints the link to Ray's dashboard of the newest stored session of `target`; a port-forward is kept
    until Ctrl-C."""
    async with reach(server, kube, flags) as base:
        infos = selected(await _sessions(base, server), kube.namespace, target)
        if not infos:
            raise PluginError(f"no stored session of {target[0]}/{target[1]} in namespace {kube.namespace}")
        info = infos[0]
        link = f"{base}/enter_cluster/{kube.namespace}/{target[0]}/{target[1]}/{info['sessionName']}?redirect=true"
        print(
            f"History Server dashboard of {target[0]}/{target[1]} (session {info['sessionName']}):",
            flush=True,
        )
        print(link, flush=True)
        if not server.url:
            print("Forwarding until Ctrl-C.", flush=True)
            await asyncio.Event().wait()  # the forward lives until the user interrupts


def server_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for decl, help_text in (
        (
            "--history-server",
            f"the History Server's URL (default: ${SERVER_ENV}, else the in-cluster Service)",
        ),
        ("--history-namespace", f"the namespace of the in-cluster Service (default {DEFAULT_NAMESPACE})"),
        ("--history-token", f"the History Server's token (default: ${TOKEN_ENV})"),
    ):
        f = click.option(decl, default=None, help=help_text)(f)
    return f


def server_from(url: str | None, namespace: str | None, token: str | None) -> Server:
    return Server(
        url=url or os.environ.get(SERVER_ENV, ""),
        namespace=namespace or DEFAULT_NAMESPACE,
        token=token or os.environ.get(TOKEN_ENV, ""),
    )


def register(
    group: click.Group,
    run: Callable[[Callable[[Kube], Awaitable[Any]]], Any],
    flags: Callable[[], KubeFlags],
    kube_options: Callable[[Any], Any],
    parse_target: Callable[[str], tuple[str, str]],
) -> None:
    """Adds `history` to `kubectl ray`."""

    @group.command("history")
    @click.argument("target", required=False)
    @click.option("-A", "--all-namespaces", is_flag=True, help="sessions of every namespace")
    @server_options
    @kube_options
    def history_command(
        target: str | None,
        all_namespaces: bool,
        history_server: str | None,
        history_namespace: str | None,
        history_token: str | None,
    ) -> None:
        """List the sessions the History Server stored (of TYPE/NAME: raycluster, rayjob, rayservice)."""
        wanted = parse_target(target) if target else None
        server = server_from(history_server, history_namespace, history_token)
        click.echo(run(lambda k: list_sessions(k, flags(), server, wanted, all_namespaces)), nl=False)
