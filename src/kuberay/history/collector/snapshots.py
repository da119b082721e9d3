"""Snapshots of the head's dashboard API, stored under the session's `fetched_endpoints/` (upstream's
directory and key names), so that the server can answer the same routes once the cluster is gone.

Polled every `RAY_COLLECTOR_POLL_INTERVAL` and once more in the final flush; an answer is stored only when
it changed. Every snapshot asks for everything (limits at Ray's maximum, detail on): the server filters, as
the dashboard would. Data sets are per job, so their endpoint follows the jobs the jobs snapshot lists.
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
from dataclasses import dataclass, field
from typing import Any

import httpx

from kuberay.history import layout
from kuberay.history.storage import Storage

log = logging.getLogger("kuberay.history.collector")

# What the collector asks, query included; `layout.snapshot_key` names where each answer is stored. Both
# forms of the cluster status: `format=0` is Ray's dict, `format=1` the text Ray's frontend reads (Ray
# formats it from the autoscaler's state, which is gone with the cluster).
JOBS = "/api/jobs/"
ENDPOINTS = (
    "/api/v0/cluster_metadata",
    "/timezone",
    "/api/version",
    JOBS,
    "/nodes?view=summary",
    "/api/v0/tasks?limit=10000&detail=1",
    "/logical/actors",
    "/api/v0/actors?limit=10000&detail=1",
    "/api/cluster_status?format=0",
    layout.FORMATTED_CLUSTER_STATUS,
    "/events",
    "/api/serve/applications/",
    layout.PLACEMENT_GROUPS,
)
DATASETS = "/api/data/datasets/"


@dataclass
class Taken:
    """What one snapshot got: how many answers were stored (changed ones only) and which endpoints the
    dashboard did not answer at all (one that answered an error, e.g. Serve's without Serve, did). A snapshot
    succeeded when the dashboard answered everything and the jobs with 200: the jobs carry the final
    status that nothing else keeps."""

    stored: int = 0
    unanswered: list[str] = field(default_factory=list)
    jobs: bool = False

    @property
    def succeeded(self) -> bool:
        return self.jobs and not self.unanswered


class Snapshots:
    def __init__(
        self,
        storage: Storage,
        dashboard: str,
        headers: dict[str, str],
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.storage = storage
        self.dashboard = dashboard
        self.headers = headers
        self.transport = transport  # tests answer in process
        self._digests: dict[str, bytes] = {}  # key -> digest of the stored answer

    def _store(self, key: str, body: bytes) -> bool:
        digest = hashlib.sha256(body).digest()
        if self._digests.get(key) == digest:
            return False
        self.storage.put(key, body)
        self._digests[key] = digest
        return True

    def take(self, endpoints_dir: str, timeout: float = 5.0) -> Taken:
        """Fetches every endpoint; says what was stored and what went unanswered. An endpoint that fails
        now keeps its last snapshot."""
        taken = Taken()
        with httpx.Client(
            base_url=self.dashboard, headers=self.headers, timeout=timeout, transport=self.transport
        ) as client:
            answers: dict[str, Any] = {}
            for uri in ENDPOINTS:
                try:
                    reply = client.get(uri)
                except httpx.HTTPError as e:
                    log.debug("snapshot of %s failed: %s", uri, e)
                    taken.unanswered.append(uri)
                    continue
                if reply.status_code != 200:
                    continue
                answers[uri] = reply
                key = posixpath.join(endpoints_dir, layout.snapshot_key(uri))
                taken.stored += self._store(key, reply.content)
            jobs = answers.get(JOBS)
            taken.jobs = jobs is not None
            for job in _job_ids(jobs.json() if jobs is not None else []):
                path = DATASETS + job
                try:
                    reply = client.get(path)
                except httpx.HTTPError:
                    taken.unanswered.append(path)
                    continue
                if reply.status_code == 200:
                    key = posixpath.join(endpoints_dir, layout.endpoint_key(path))
                    taken.stored += self._store(key, reply.content)
        return taken


def _job_ids(jobs: Any) -> list[str]:
    if not isinstance(jobs, list):
        return []
    return [str(j["job_id"]) for j in jobs if isinstance(j, dict) and j.get("job_id")]
