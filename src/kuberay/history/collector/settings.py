"""The collector's settings: from the env the operator gives the sidecar (upstream's names), with flags
only for what upstream has as flags. Defaults live here."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kuberay.history.errors import HistoryServerError
from kuberay.history.layout import ClusterRef
from kubesemantics import goparse

# Upstream's `--event-max-disk-mb` and its default: the bound of the event spool (`events`).
EVENT_MAX_DISK_MB = 200
MIB = 1024 * 1024


class CollectorSettingsError(HistoryServerError, ValueError):
    """A variable with a value the collector cannot use; the message names it."""


@dataclass(frozen=True)
class Settings:
    cluster: ClusterRef
    head: bool
    ray_root: Path  # RAY_TMP_ROOT: where Ray keeps its sessions
    events_port: int
    dashboard: str  # the head's dashboard, for snapshots and to learn this node's Ray id
    pod_ip: str
    storage_root: str  # STORAGE_ROOT_DIR: a prefix for every key
    push_interval: float  # seconds between two uploads of what changed
    poll_interval: float  # seconds between two snapshots of the dashboard
    flush_timeout: float  # the bound on the final upload after SIGTERM
    auth_token: str  # RAY_AUTH_TOKEN for a dashboard with token auth; sent to the collector's peers only
    event_max_disk_bytes: int = EVENT_MAX_DISK_MB * MIB  # --event-max-disk-mb: the event spool's bound


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw) if raw.replace(".", "", 1).isdigit() else goparse.parse_duration(raw) / 1e9
    except goparse.GoParseError as e:
        raise CollectorSettingsError(f"{name}: {e}") from e


def _head_dashboard(env: Mapping[str, str]) -> str:
    """The head's dashboard from FQ_RAY_IP, as upstream builds it: its scheme if it has one, else http; its
    port if it has one, else RAY_DASHBOARD_PORT or 8265."""
    address = env.get("FQ_RAY_IP", "")
    if not address:
        return "http://localhost:8265"
    scheme = "https://" if address.startswith("https://") else "http://"
    address = address.removeprefix("https://").removeprefix("http://")
    if ":" not in address:
        address += ":" + (env.get("RAY_DASHBOARD_PORT") or "8265")
    return scheme + address


def from_env(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    name = env.get("RAY_CLUSTER_NAME", "")
    if not name:
        raise CollectorSettingsError("RAY_CLUSTER_NAME must be set")
    role = env.get("RAY_ROLE", "Worker")
    head = role.lower() == "head"
    port_raw = env.get("EVENTS_PORT", "8084")
    if not port_raw.isdigit():
        raise CollectorSettingsError(f"EVENTS_PORT: {port_raw!r} is not a port number")
    dashboard = env.get("RAY_DASHBOARD_ADDRESS", "") or _head_dashboard(env)
    return Settings(
        cluster=ClusterRef(
            namespace=env.get("RAY_CLUSTER_NAMESPACE", "default"),
            name=name,
            owner_kind=env.get("OWNER_KIND", ""),
            owner_name=env.get("OWNER_NAME", ""),
        ),
        head=head,
        ray_root=Path(env.get("RAY_TMP_ROOT", "/tmp/ray")),
        events_port=int(port_raw),
        dashboard=dashboard.rstrip("/"),
        pod_ip=env.get("POD_IP", ""),
        storage_root=env.get("STORAGE_ROOT_DIR", ""),
        push_interval=_seconds(env, "PUSH_INTERVAL", 5.0),
        poll_interval=_seconds(env, "RAY_COLLECTOR_POLL_INTERVAL", 2.0),
        flush_timeout=_seconds(env, "RAY_COLLECTOR_FLUSH_TIMEOUT", 20.0),
        auth_token=env.get("RAY_AUTH_TOKEN", ""),
    )
