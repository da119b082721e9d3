"""Where the History Server keeps things in storage: upstream's layout, so that either side can read what
the other wrote. Pure (no I/O).

    <root>/cluster-history/raycluster/<ns>/<cluster>/<session>/...
    <root>/cluster-history/<rayjob|rayservice>/<ns>/<owner>/<cluster>/<session>/...
        <node id>/logs/<path under the session's logs directory>
        <node id>/node_events/<node id>-<hour>-<nanoseconds>.jsonl
        <node id>/job_events/<job id>/<node id>-<hour>-<nanoseconds>.jsonl
        fetched_endpoints/restful__<dashboard path with / as __>[?<query>, where upstream keeps it]
        session_end.json (ours: the head's collector's record of how the session ended, `session_end`)
    <root>/cluster-metadata/raycluster/<ns>_<cluster>/<session>
    <root>/cluster-metadata/<rayjob|rayservice>/<ns>_<owner>_<cluster>/<session>

A Kubernetes namespace cannot contain `_`, so the metadata directory's name splits unambiguously. The
metadata object of a session is what the server lists: one per session, written by the head's collector.
"""

from __future__ import annotations

import datetime
import posixpath
import re
from dataclasses import dataclass

from kuberay.history.errors import HistoryServerError
from kubesemantics import times

CLUSTER_HISTORY_DIR = "cluster-history"
CLUSTER_METADATA_DIR = "cluster-metadata"
FETCHED_ENDPOINTS_DIR = "fetched_endpoints"
LOGS_DIR = "logs"
NODE_EVENTS_DIR = "node_events"
JOB_EVENTS_DIR = "job_events"
SESSION_END = "session_end.json"
CONNECTOR = "_"

RAYCLUSTER = "raycluster"
RAYJOB = "rayjob"
RAYSERVICE = "rayservice"
KINDS = (RAYCLUSTER, RAYJOB, RAYSERVICE)

_SESSION = re.compile(r"^session_(\d{4}-\d{2}-\d{2})_(\d{2}-\d{2}-\d{2})_(\d{6})(_\d+)?$")


class LayoutError(HistoryServerError, ValueError):
    """A key or name that is not in the layout."""


@dataclass(frozen=True)
class ClusterRef:
    """A Ray cluster as stored: its namespace and name, and the RayJob or RayService that made it."""

    namespace: str
    name: str
    owner_kind: str = ""
    owner_name: str = ""

    @property
    def kind(self) -> str:
        """`rayjob` or `rayservice` when an owner is known, else `raycluster`."""
        kind = self.owner_kind.strip().lower()
        return kind if kind in (RAYJOB, RAYSERVICE) and self.owner_name.strip() else RAYCLUSTER

    def normalized(self) -> ClusterRef:
        """The same cluster with its owner as stored: lower-case kind, or none for a plain RayCluster (so
        that refs made from cookies in any spelling compare equal to stored ones)."""
        if self.kind == RAYCLUSTER:
            return ClusterRef(self.namespace, self.name)
        return ClusterRef(self.namespace, self.name, self.kind, self.owner_name.strip())

    def _owned(self) -> list[str]:
        return [self.owner_name.strip()] if self.kind != RAYCLUSTER else []

    def prefix(self, root: str) -> str:
        """The cluster's directory under `cluster-history`."""
        return _join(root, CLUSTER_HISTORY_DIR, self.kind, self.namespace, *self._owned(), self.name)

    def session_dir(self, root: str, session: str) -> str:
        return posixpath.join(self.prefix(root), _checked_session(session))

    def node_dir(self, root: str, session: str, node_id: str) -> str:
        return posixpath.join(self.session_dir(root, session), _segment(node_id, "node id"))

    def logs_dir(self, root: str, session: str, node_id: str) -> str:
        return posixpath.join(self.node_dir(root, session, node_id), LOGS_DIR)

    def endpoints_dir(self, root: str, session: str) -> str:
        return posixpath.join(self.session_dir(root, session), FETCHED_ENDPOINTS_DIR)

    def session_end_key(self, root: str, session: str) -> str:
        """The end-of-session record: a file beside the node directories, never taken for one (only
        directories are listed as nodes)."""
        return posixpath.join(self.session_dir(root, session), SESSION_END)

    def metadata_key(self, root: str, session: str) -> str:
        name = CONNECTOR.join([self.namespace, *self._owned(), self.name])
        return _join(root, CLUSTER_METADATA_DIR, self.kind, name, _checked_session(session))


def _join(root: str, *parts: str) -> str:
    return posixpath.join(*(p for p in (root.strip("/"), *parts) if p))


def _segment(value: str, what: str) -> str:
    if not value or "/" in value or value in (".", ".."):
        raise LayoutError(f"invalid {what} {value!r}")
    return value


def _checked_session(session: str) -> str:
    if not _SESSION.match(session):
        raise LayoutError(
            f"invalid session name {session!r}: expected session_YYYY-MM-DD_HH-MM-SS_MICROSECONDS[_PID]"
        )
    return session


def session_time(session: str) -> datetime.datetime:
    """When a session started, from its name (Ray names sessions by their start time)."""
    match = _SESSION.match(session)
    if not match:
        raise LayoutError(f"invalid session name {session!r}")
    day, clock, micro = match.group(1), match.group(2), match.group(3)
    stamp = datetime.datetime.strptime(f"{day}_{clock}.{micro}", "%Y-%m-%d_%H-%M-%S.%f")
    return stamp.replace(tzinfo=datetime.UTC)


def session_info(cluster: ClusterRef, session: str) -> dict[str, object]:
    """A session as upstream's ClusterInfo has it (the metadata object's body, and a row of `/clusters`):
    the owner fields are omitted when empty, as upstream's JSON omits them."""
    created = session_time(session)
    info: dict[str, object] = {
        "name": cluster.name,
        "namespace": cluster.namespace,
        "sessionName": session,
        "createTime": times.format_time(created),
        "createTimeStamp": int(created.timestamp()),
    }
    if cluster.kind != RAYCLUSTER:
        info |= {"ownerKind": cluster.kind, "ownerName": cluster.owner_name.strip()}
    return info


# Why a session ended, as its record says: the head's preStop hook asked for the final snapshot (the
# dashboard was still up), or the collector was signalled first.
END_REASONS = ("preStop", "SIGTERM", "SIGINT")
# The final upload after the snapshot: not known to be over (the record is written once before it, so that
# a collector killed or cut short by its bound during it still leaves one), done, or failed.
FINAL_UPLOAD = ("pending", "done", "failed")


def session_end(
    session: str,
    ended: datetime.datetime,
    reason: str,
    snapshot: dict[str, object] | None,
    final_upload: str,
) -> dict[str, object]:
    """The end-of-session record (our own object, which upstream has not): when the collector's final
    snapshot was taken and why, whether it succeeded (`snapshot`: `succeeded`, the endpoints left
    `unanswered`; None on a session whose dashboard was never snapshotted) and how the final upload went.
    A session with one is complete: its stored snapshots are the cluster's last word."""
    if reason not in END_REASONS:
        raise LayoutError(f"invalid end reason {reason!r}")
    if final_upload not in FINAL_UPLOAD:
        raise LayoutError(f"invalid final upload state {final_upload!r}")
    return {
        "sessionName": _checked_session(session),
        "endTime": times.format_time(ended),
        "endTimeStamp": int(ended.timestamp()),
        "reason": reason,
        "finalSnapshot": snapshot,
        "finalUpload": final_upload,
    }


def metadata_ref(key: str, root: str) -> tuple[ClusterRef, str]:
    """The cluster and session a metadata key names (the inverse of `ClusterRef.metadata_key`)."""
    base = _join(root, CLUSTER_METADATA_DIR) + "/"
    if not key.startswith(base):
        raise LayoutError(f"{key!r} is not under {base!r}")
    parts = key[len(base) :].split("/")
    if len(parts) != 3:
        raise LayoutError(f"{key!r}: expected <kind>/<names>/<session>")
    kind, names, session = parts[0].lower(), parts[1], parts[2]  # upstream reads the kind in any case
    _checked_session(session)
    fields = names.split(CONNECTOR)
    if kind == RAYCLUSTER and len(fields) == 2:
        return ClusterRef(fields[0], fields[1]), session
    if kind in (RAYJOB, RAYSERVICE) and len(fields) == 3:
        return ClusterRef(fields[0], fields[2], kind, fields[1]), session
    raise LayoutError(f"{key!r}: {names!r} does not fit kind {kind!r}")


def endpoint_key(path: str) -> str:
    """The stored name of a dashboard endpoint's snapshot: `/api/jobs/` -> `restful__api__jobs`."""
    return "restful__" + path.split("?", 1)[0].strip("/").replace("/", "__")


# Snapshots stored under the URI Ray's frontend asks, query included: upstream's key is the request URI
# (its collector polls `PLACEMENT_GROUPS` and its server looks up what the frontend asked), so a session
# either side wrote is found by the other. The formatted cluster status shares its path with the
# `format=0` answer, so it needs its query to have a key of its own.
PLACEMENT_GROUPS = "/api/v0/placement_groups?detail=1&limit=10000"
FORMATTED_CLUSTER_STATUS = "/api/cluster_status?format=1"
URI_KEYED = (PLACEMENT_GROUPS, FORMATTED_CLUSTER_STATUS)


def uri_key(uri: str) -> str:
    """Upstream's key of a request URI, query kept:
    `/api/v0/placement_groups?detail=1&limit=10000` -> `restful__api__v0__placement_groups?detail=1&limit=10000`."""
    return "restful__" + uri.strip("/").replace("/", "__")


def snapshot_key(uri: str) -> str:
    """Where the collector stores the answer of `uri`."""
    return uri_key(uri) if uri in URI_KEYED else endpoint_key(uri)


def stored_keys(path: str) -> list[str]:
    """The keys a snapshot of `path` may be under, preferred first: upstream's URI key where upstream has
    one, then the path's own (where sessions stored before kept it)."""
    uri = {endpoint_key(PLACEMENT_GROUPS): PLACEMENT_GROUPS}.get(endpoint_key(path))
    return ([uri_key(uri)] if uri else []) + [endpoint_key(path)]
