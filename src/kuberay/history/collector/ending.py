"""The end of a session: one final snapshot of the head's dashboard, taken while the dashboard is still up.

When a pod is deleted the kubelet signals every container at once, so a collector that snapshots on its own
SIGTERM races the dashboard's exit (and a RayJob deleted at once by `ttlSecondsAfterFinished: 0` could be
stored RUNNING). The operator therefore gives the head's Ray container a preStop hook that asks this
collector (`GET /v1/final-snapshot` on the events port) and waits: the kubelet sends that container SIGTERM
only once the hook returns. Whoever comes first, the hook or the collector's own SIGTERM, starts the one
final snapshot; the other waits for the same. After it the collector polls the dashboard no more for that
session (what a dashboard says while it goes is not the cluster's last word), but keeps uploading logs and
events until its own SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from kuberay.api import constants

log = logging.getLogger("kuberay.history.collector")

FINAL_SNAPSHOT_PATH = constants.COLLECTOR_FINAL_SNAPSHOT_PATH

# What `final_snapshot` says: the record's `finalSnapshot` (None: nothing to snapshot, a worker or a node
# whose Ray has not started).
Result = dict[str, Any] | None


class Finale:
    """The one final snapshot, run by `take(reason)` in a thread, shared by every caller."""

    def __init__(self, take: Callable[[str], Result], timeout: float) -> None:
        self._take = take
        self.timeout = timeout  # what a caller waits at most (the collector's flush bound)
        self._task: asyncio.Future[Result] | None = None

    @property
    def started(self) -> bool:
        return self._task is not None

    async def wait(self, reason: str, timeout: float | None = None) -> tuple[bool, Result]:
        """Starts the final snapshot for `reason` unless it is under way or done, and waits for it within
        the bound: (True, its result), or (False, None) when it did not finish in time or failed."""
        if self._task is None:
            self._task = asyncio.ensure_future(asyncio.to_thread(self._take, reason))
        try:
            result = await asyncio.wait_for(
                asyncio.shield(self._task), self.timeout if timeout is None else timeout
            )
        except TimeoutError:
            log.error("final snapshot did not finish within %s s", self.timeout)
            return False, None
        except Exception:  # the caller goes on (the hook returns, the flush uploads what it can)
            log.exception("final snapshot failed")
            return False, None
        return True, result

    async def route(self, request: Request) -> Response:
        """The preStop hook's call: 200 once the final snapshot is stored, 500 when the dashboard did not
        answer it (the hook then fails, which the kubelet reports in an Event), 504 past the bound."""
        done, result = await self.wait("preStop")
        if not done:
            return JSONResponse({"error": "the final snapshot did not finish"}, status_code=504)
        body = {"finalSnapshot": result}
        return JSONResponse(body, status_code=200 if result is None or result.get("succeeded") else 500)
