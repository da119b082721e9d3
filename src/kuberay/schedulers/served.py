"""Whether the API server serves a scheduler's foreign kind (its CRD is installed), and saying once when not.

A plugin asks before it writes a PodGroup or the like. The answer comes from a list of at most one object
(a served kind never answers a list with 404; a refusal to list still proves the kind exists) and is kept
for `RECHECK_SECONDS`, so a CRD installed later is picked up without a restart. A missing kind is logged
once per kind and reported once per object with a Warning Event, instead of failing every reconcile: the
object's pods are still made, and they stay Pending until the scheduler and its CRD are there.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.events import WARNING, Recorder
from kuberay.runtime.resources import Resource

log = logging.getLogger(__name__)

RECHECK_SECONDS = 60.0
MISSING_CRD_REASON = "BatchSchedulerCRDNotInstalled"


class ServedKinds:
    def __init__(self, client: Client, clock: Clock, recorder: Recorder | None = None) -> None:
        self._client = client
        self._clock = clock
        self._recorder = recorder
        self._answers: dict[Resource, tuple[bool, float]] = {}
        self._logged: set[Resource] = set()
        self._reported: set[tuple[Resource, str]] = set()

    async def served(self, resource: Resource, namespace: str) -> bool:
        known = self._answers.get(resource)
        now = self._clock.monotonic()
        if known is not None and (known[0] or now - known[1] < RECHECK_SECONDS):
            return known[0]
        try:
            await self._client.list(resource, namespace, limit=1)
            answer = True
        except errors.NotFoundError:
            answer = False
        except errors.Forbidden:
            answer = True
        self._answers[resource] = (answer, now)
        if answer:
            self._logged.discard(resource)
        return answer

    def report_missing(self, resource: Resource, scheduler: str, obj: Mapping[str, Any]) -> None:
        """Says that `scheduler` cannot make `resource` for `obj`: a log line once per kind, a Warning Event
        once per object."""
        what = f"{resource.kind} ({resource.plural}.{resource.api_version})"
        if resource not in self._logged:
            self._logged.add(resource)
            log.error(
                "batch scheduler %s: the API server does not serve %s; install its CRD. "
                "Pods of objects that need it are made but stay Pending",
                scheduler,
                what,
            )
        metadata = obj.get("metadata") or {}
        key = (resource, str(metadata.get("uid") or f"{metadata.get('namespace')}/{metadata.get('name')}"))
        if self._recorder is None or key in self._reported:
            return
        self._reported.add(key)
        self._recorder.record(
            obj,
            WARNING,
            MISSING_CRD_REASON,
            f"batch scheduler {scheduler} needs {what}, which the API server does not serve: "
            f"install its CRD; {obj.get('kind')} {metadata.get('namespace')}/{metadata.get('name')} "
            "is not gang-scheduled until then",
        )
