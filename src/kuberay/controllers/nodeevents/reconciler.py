"""The node event forwarder's reconciler: one source Event (about a Node) in, one events.k8s.io Event out on
each RayCluster with a Ray pod on that Node (upstream's `EventForwarderReconciler`, kuberay#4978).

Everything is read from caches: the Event from the Event informer (field-selected on involvedObject.kind=Node),
the pods from the shared Pod cache (only Ray pods are cached) through a spec.nodeName index, and the
RayClusters from theirs. Only RayClusters are targets, as upstream's newest text: a RayJob's or RayService's
dashboard shows its cluster's Events too, and forwarding to both would show each fault twice.

Each occurrence is forwarded once: the (uid, count) last forwarded is kept per source Event, so a resync or
a requeue does not repeat it while a count bump (the fault again) does. An Event last observed before the operator started (what the informer's first list
replays) is history, not news, and is skipped. Upstream takes the time this replica starts leading; here
it is the start of the process, so a follower that takes over forwards what it saw while it waited.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kuberay.controllers.nodeevents.selection import (
    EventFilter,
    Forwarded,
    clusters_on_node,
    forwarded_note,
    forwarded_reason,
    last_observed,
)
from kuberay.runtime.cache import Store
from kuberay.runtime.clock import Clock
from kuberay.runtime.controller import Result
from kuberay.runtime.events import Recorder
from kuberay.runtime.resources import ObjectKey

log = logging.getLogger(__name__)

NODE_NAME_INDEX = "spec.nodeName"


def node_name_index(pod: Mapping[str, Any]) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [node] if node else []


class NodeEventForwarder:
    def __init__(
        self,
        events: Store,
        pods: Store,
        clusters: Store,
        recorder: Recorder | None,
        event_filter: EventFilter,
        clock: Clock,
    ) -> None:
        self.events = events
        self.pods = pods
        self.clusters = clusters
        self.recorder = recorder
        self.filter = event_filter
        self.clock = clock
        # Event times have whole seconds: one of the start's own second is news.
        self.started_at: datetime = clock.now().replace(microsecond=0)
        # Bounded by the live Node Events: an entry goes when its Event leaves the cache (the API server
        # expires Events after an hour).
        self.forwarded: dict[ObjectKey, Forwarded] = {}

    async def reconcile(self, key: ObjectKey) -> Result:
        event = self.events.get(key)
        if event is None:
            self.forwarded.pop(key, None)
            return Result()
        # The watch's predicate filters already; checked again so the outcome does not depend on the caller.
        if not self.filter.matches(event):
            return Result()
        observed = last_observed(event)
        if observed is not None and observed < self.started_at:
            return Result()
        previous = self.forwarded.get(key)
        if previous is not None and previous.supersedes(event):
            return Result()
        node = event["involvedObject"].get("name") or ""
        reason, note = forwarded_reason(event), forwarded_note(node, event)
        for namespace, name in clusters_on_node(self.pods.by_index(NODE_NAME_INDEX, node)):
            cluster = self.clusters.get(ObjectKey(namespace, name))
            if cluster is None or self.recorder is None:
                continue
            self.recorder.record(cluster, event.get("type") or "Normal", reason, note, "Forward")
            log.debug(
                "forwarded %s of node %s to RayCluster %s/%s", event.get("reason"), node, namespace, name
            )
        # Marked even without a target, so a Ray pod scheduled onto the node later does not receive an old
        # fault on the next resync.
        self.forwarded[key] = Forwarded.of(event)
        return Result()
