"""`/api/cluster_status` of a stored session, in both of Ray's forms.

`format=1` is the text Ray's frontend reads (Overview and a job's page split it into "Node status" and
"Resources"). The collector stores Ray's own text; a session stored before it did has only the
`format=0` answer, whose `clusterStatus` is the v1 autoscaler's state as Ray keeps it, and the text is
made from that the way Ray makes it (`ray.autoscaler._private.util.format_info_string`, non-verbose), so
the page reads the same. Times are the pod's, UTC. Pure functions over parsed JSON.
"""

from __future__ import annotations

import datetime
import re
from collections import defaultdict
from typing import Any

NO_STATUS = "No cluster status. It may take a few seconds for the Ray internal services to start up."
MAX_FAILURES_SHOWN = 20  # Ray's AUTOSCALER_MAX_FAILURES_DISPLAYED

# Ray's names of the resources a placement group's bundles hold: `CPU_group_<i>_<pg>`, `CPU_group_<pg>`.
_INDEXED = re.compile(r"(.+)_group_(\d+)_([0-9a-zA-Z]+)")
_WILDCARD = re.compile(r"(.+)_group_([0-9a-zA-Z]+)")
_MEMORY_UNITS = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def empty() -> dict[str, Any]:
    """Ray's `format=0` answer when the autoscaler wrote nothing."""
    return {
        "result": True,
        "msg": "Got cluster status.",
        "data": {"autoscalingStatus": None, "autoscalingError": None, "clusterStatus": None},
    }


def formatted_reply(text: str) -> dict[str, Any]:
    return {"result": True, "msg": "Got formatted cluster status.", "data": {"clusterStatus": text}}


def from_format0(stored: Any) -> dict[str, Any]:
    """The `format=1` answer made from a stored `format=0` answer (as Ray's `debug_status` makes it)."""
    data = (stored.get("data") if isinstance(stored, dict) else None) or {}
    status = data.get("clusterStatus")
    text = NO_STATUS
    if isinstance(status, dict):
        try:
            text = format_status(status) or NO_STATUS
        except (KeyError, TypeError, ValueError):
            text = NO_STATUS  # not the v1 shape: say so, as Ray does, rather than fail the page
    error = data.get("autoscalingError")
    return formatted_reply(text + "\n" + error if error else text)


def format_status(status: dict[str, Any]) -> str | None:
    """The v1 autoscaler's state as text; None when it lacks what Ray needs to format it."""
    load, scaler, when = (
        status.get("load_metrics_report"),
        status.get("autoscaler_report"),
        status.get("time"),
    )
    if not (load and scaler and when):
        return None
    time = datetime.datetime.fromtimestamp(float(when), datetime.UTC).replace(tzinfo=None)
    header = "=" * 8 + f" Autoscaler status: {time} " + "=" * 8
    separator = "-" * len(header)
    active = _counts(scaler.get("active_nodes"), " (no active nodes)")
    idle = _counts(scaler.get("idle_nodes"), " (no idle nodes)")
    pending = [
        f" {kind}, {count} launching" for kind, count in (scaler.get("pending_launches") or {}).items()
    ]
    pending += [
        f" {ip}: {kind}, {str(state).lower()}" for ip, kind, state in scaler.get("pending_nodes") or []
    ]
    lines = [
        header,
        "Node status",
        separator,
        "Active:",
        active,
        *([] if scaler.get("legacy") else ["Idle:", idle]),
        "Pending:",
        "\n".join(pending) if pending else " (no pending nodes)",
        "Recent failures:",
        "\n".join(_failures(scaler)) or " (no failures)",
        "",
        "Resources",
        separator,
        "Total Usage:",
        "".join(f" {line}\n" for line in _usage(load.get("usage") or {})),
        "From request_resources:",
        _constraints(load.get("request_demand") or []),
        "Pending Demands:",
        _demands(load),
    ]
    return "\n".join(lines).strip()


def _counts(counts: dict[str, int] | None, none: str) -> str:
    return "\n".join(f" {count} {kind}" for kind, count in counts.items()) if counts else none


def _failures(scaler: dict[str, Any]) -> list[str]:
    lines = [f" {kind}: NodeTerminated (ip: {ip})" for ip, kind in scaler.get("failed_nodes") or []]
    records = ((scaler.get("node_availability_summary") or {}).get("node_availabilities") or {}).values()
    for record in sorted(records, key=lambda r: r["last_checked_timestamp"]):
        if record.get("is_available"):
            continue
        info = record.get("unavailable_node_information") or {}
        at = datetime.datetime.fromtimestamp(record["last_checked_timestamp"], datetime.UTC)
        lines.append(f" {record['node_type']}: {info.get('category')} (latest_attempt: {at:%H:%M:%S})")
    return lines[:-MAX_FAILURES_SHOWN:-1]  # Ray's slice: newest first, the oldest one never shown


def _pg_resource(name: str) -> tuple[str, str | None, bool]:
    """(resource, placement group, counted): indexed bundle resources repeat the wildcard ones."""
    if m := _INDEXED.match(name):
        return m.group(1), m.group(3), False
    if m := _WILDCARD.match(name):
        return m.group(1), m.group(2), True
    return name, None, True


def _memory(amount: float) -> str:
    for unit, size in _MEMORY_UNITS:
        if amount >= size:
            return f"{amount / size:.2f}{unit}"
    return f"{int(amount)}B"


def _usage(usage: dict[str, list[float]]) -> list[str]:
    pg_used: dict[str, float] = {}
    pg_total: dict[str, float] = defaultdict(float)
    for name, (used, total) in usage.items():
        resource, group, counted = _pg_resource(name)
        if group:
            pg_used.setdefault(resource, 0)
            if counted:
                pg_used[resource] += used
                pg_total[resource] += total
    lines = []
    for name, (used, total) in sorted(usage.items()):
        if "node:" in name or _pg_resource(name)[1] or name.startswith("accelerator_type:"):
            continue
        in_pg = name in pg_used
        if in_pg:
            used = used - pg_total[name] + pg_used[name]  # reserved by groups counts as used only as used
        show = _memory if name in ("memory", "object_store_memory") else (lambda v: f"{v}")
        line = f"{show(used)}/{show(total)} {name}"
        if in_pg:
            line += f" ({show(pg_used[name])} used of {show(pg_total[name])} reserved in placement groups)"
        lines.append(line)
    return lines


def _constraints(requests: list[list[Any]]) -> str:
    lines = [f" {bundle}: {count} from request_resources()" for bundle, count in requests]
    return "\n".join(lines) if lines else " (none)"


def _demands(load: dict[str, Any]) -> str:
    demand: dict[tuple[tuple[str, float], ...], int] = defaultdict(int)
    pg_demand: dict[tuple[tuple[str, float], ...], int] = defaultdict(int)
    for bundle, count in load.get("resource_demand") or []:
        shape = {_pg_resource(name)[0]: amount for name, amount in bundle.items()}
        in_pg = any(_pg_resource(name)[1] for name in bundle)
        if in_pg:
            shape.pop("bundle", None)  # Ray's internal marker of placement group scheduling
        if not shape:
            continue
        key = tuple(sorted(shape.items()))
        demand[key] += count
        if in_pg:
            pg_demand[key] += count
    lines = []
    for key, count in demand.items():
        line = f" {dict(key)}: {count}+ pending tasks/actors"
        if key in pg_demand:
            line += f" ({pg_demand[key]}+ using placement groups)"
        lines.append(line)
    for group, count in load.get("pg_demand") or []:
        shapes = ", ".join(f"{bundle} * {n}" for bundle, n in group["bundles"])
        lines.append(f" {shapes} ({group['strategy']}): {count}+ pending placement groups")
    return "\n".join(lines) if lines else " (no resource demands)"
