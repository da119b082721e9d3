"""The Ray session and node a collector serves: the session is where `<RAY_TMP_ROOT>/session_latest`
points; the node id is the dashboard's for this pod's IP (as upstream finds it), else the one the raylet
logs at start (a worker whose head's dashboard cannot be reached)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

_RAYLET_NODE_ID = re.compile(r"[Nn]ode[ _]?[Ii][Dd][:=]\s*([0-9a-f]{56})")


def session_dir(ray_root: Path) -> Path | None:
    """The live session's directory, or None before Ray made one."""
    latest = ray_root / "session_latest"
    try:
        target = latest.resolve(strict=True)
    except (FileNotFoundError, RuntimeError):
        return None
    return target if target.is_dir() else None


def node_id_from_dashboard(dashboard: str, pod_ip: str, headers: dict[str, str]) -> str | None:
    """The id of the ALIVE Ray node at `pod_ip`, as the dashboard lists it."""
    try:
        reply = httpx.get(f"{dashboard}/api/v0/nodes", params={"limit": 10000}, headers=headers, timeout=2.0)
        reply.raise_for_status()
        nodes = reply.json()["data"]["result"]["result"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None
    for node in nodes:
        if node.get("node_ip") == pod_ip and node.get("state") == "ALIVE" and node.get("node_id"):
            return str(node["node_id"])
    return None


def node_id_from_raylet(session: Path) -> str | None:
    """The node id the raylet wrote in its log when it started."""
    try:
        with (session / "logs" / "raylet.out").open(errors="replace") as f:
            head = f.read(256 * 1024)
    except OSError:
        return None
    match = _RAYLET_NODE_ID.search(head)
    return match.group(1) if match else None
