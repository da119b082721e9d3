"""Answers for pages whose snapshot a session lacks, and stored answers mended for Ray's frontend.

A session that never ran Serve, Ray Data or a placement group has no snapshot of those pages (or one the
collector never got to take); Ray answers them with empty shapes, and its frontend errors on a 404 (Serve's
page calls `Object.values` on `applications`). Upstream answers the same empty shapes for the same paths,
and 404 for any other path. Pure functions over parsed JSON.
"""

from __future__ import annotations

from typing import Any

from kuberay.history.server import stateapi

DATASETS_PREFIX = "/api/data/datasets/"


def empty_answer(path: str) -> Any | None:
    """Ray's empty answer of `path`, or None when a missing snapshot of it should stay a 404."""
    trimmed = path.rstrip("/")
    if trimmed == "/api/serve/applications":
        # No `http_options` either: Ray's Serve page then says Serve was not started, as it does live.
        return {"applications": {}}
    if trimmed == "/api/v0/placement_groups":
        return stateapi.reply(stateapi.list_result([], 0, stateapi.DEFAULT_LIMIT))
    job = trimmed.removeprefix(DATASETS_PREFIX)
    if trimmed.startswith(DATASETS_PREFIX) and job and "/" not in job:
        # Ray answers this too once a finished job's dataset stats are evicted.
        return {"datasets": []}
    return None


def placement_group(record: dict[str, Any]) -> dict[str, Any]:
    """A stored placement group with `bundles`, which Ray 2.56's table maps over unguarded."""
    return record if "bundles" in record else record | {"bundles": []}
