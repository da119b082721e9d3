"""Ray's state API (`/api/v0/tasks`, `/api/v0/actors`, `/api/v0/placement_groups`, ...) over stored
answers: the collector stored the whole list; a request's filters (`filter_keys`, `filter_predicates`,
`filter_values`, Ray's query form) and `limit` are applied here as Ray's dashboard applies them, and the
task summary and timeline are computed from the stored tasks. Pure functions over parsed JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_LIMIT = 100


def reply(result: Any, msg: str = "", ok: bool = True) -> dict[str, Any]:
    """Ray's dashboard reply envelope."""
    return {"result": ok, "msg": msg, "data": {"result": result}}


def records(stored: Any) -> list[dict[str, Any]]:
    """The records of a stored list answer (`data.result.result`)."""
    try:
        found = stored["data"]["result"]["result"]
    except (KeyError, TypeError):
        return []
    return [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []


def _matches(record: Mapping[str, Any], key: str, predicate: str, value: str) -> bool:
    actual = record.get(key)
    text = str(actual).lower() if isinstance(actual, bool) else ("" if actual is None else str(actual))
    equal = text == value or (isinstance(actual, str) and actual.upper() == value.upper() and key == "state")
    return equal if predicate == "=" else not equal


def filtered(
    items: list[dict[str, Any]], keys: Sequence[str], predicates: Sequence[str], values: Sequence[str]
) -> list[dict[str, Any]]:
    if not (len(keys) == len(predicates) == len(values)):
        raise ValueError("filter_keys, filter_predicates and filter_values must come in equal numbers")
    for predicate in predicates:
        if predicate not in ("=", "!="):
            raise ValueError(f"unsupported filter predicate {predicate!r}: expected = or !=")
    return [
        r
        for r in items
        if all(_matches(r, k, p, v) for k, p, v in zip(keys, predicates, values, strict=True))
    ]


def list_result(items: list[dict[str, Any]], total: int, limit: int) -> dict[str, Any]:
    """A list answer as Ray shapes it."""
    shown = items[:limit]
    return {
        "total": total,
        "num_after_truncation": len(items),
        "num_filtered": len(items),
        "result": shown,
        "partial_failure_warning": "",
        "warnings": None,
    }


def task_summary(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """`/api/v0/tasks/summarize` by function name, from task records."""
    summary: dict[str, dict[str, Any]] = {}
    total_tasks = total_actor_tasks = total_actor_scheduled = 0
    for task in tasks:
        name = str(task.get("func_or_class_name") or task.get("name") or "")
        kind = str(task.get("type") or "NORMAL_TASK")
        entry = summary.setdefault(name, {"func_or_class_name": name, "type": kind, "state_counts": {}})
        state = str(task.get("state") or "NIL")
        entry["state_counts"][state] = entry["state_counts"].get(state, 0) + 1
        if kind == "NORMAL_TASK":
            total_tasks += 1
        elif kind == "ACTOR_TASK":
            total_actor_tasks += 1
        elif kind == "ACTOR_CREATION_TASK":
            total_actor_scheduled += 1
    cluster = {
        "summary": summary,
        "total_tasks": total_tasks,
        "total_actor_tasks": total_actor_tasks,
        "total_actor_scheduled": total_actor_scheduled,
        "summary_by": "func_name",
    }
    return {
        "total": len(tasks),
        "num_after_truncation": len(tasks),
        "num_filtered": len(tasks),
        "result": {"node_id_to_summary": {"cluster": cluster}},
        "partial_failure_warning": "",
        "warnings": None,
    }


def timeline(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Chrome trace of the tasks that ran (`/api/v0/tasks/timeline`): one complete event per task, on
    its node and worker."""
    trace = []
    for task in tasks:
        start, end = task.get("start_time_ms"), task.get("end_time_ms")
        if not isinstance(start, int | float) or not isinstance(end, int | float):
            continue
        trace.append(
            {
                "cat": str(task.get("type") or "task"),
                "name": str(task.get("func_or_class_name") or task.get("name") or ""),
                "pid": f"Node {task.get('node_id') or ''}",
                "tid": f"Worker {task.get('worker_id') or ''}",
                "ph": "X",
                "ts": start * 1000,
                "dur": (end - start) * 1000,
                "args": {"task_id": task.get("task_id"), "state": task.get("state")},
            }
        )
    return trace
