"""How `localkube agent` keeps its Node alive on an API server, as a kubelet does.

At start the Node is created unless it exists, then its status (capacity, allocatable, addresses, the
conditions, Ready True) is written through `nodes/status`: a create drops status, and a Node left behind
by an earlier run may have been marked Unknown by the node-lifecycle controller. Then, until stopped, the
node's Lease in `kube-node-lease` (`leaseDurationSeconds`, 40 by default as the kubelet's) is renewed
every quarter of its duration, as the kubelet renews it (the node-lifecycle controller watches it: a lease
older than its grace period marks the node's conditions Unknown), and every
`STATUS_SECONDS` the conditions' `lastHeartbeatTime` is refreshed. A failed renewal is logged and tried
again at the next tick: the agent keeps running its pods while the server is away.

The objects are built by pure functions of the node and the time.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from typing import Any

from kubesemantics import times
from kubesemantics.conditions import find_condition, transition_time
from localkube.node.apiclient import ApiClient, RequestFailed
from localkube.node.kubelet import NodeOptions, node_object

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40  # the kubelet's default nodeLeaseDurationSeconds
REGISTER_ATTEMPTS = 5
STATUS_SECONDS = 60.0
MERGE_PATCH = "application/merge-patch+json"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"


def lease_object(node: dict[str, Any], now: datetime.datetime, duration: int) -> dict[str, Any]:
    """The node's Lease, owned by its Node (so it goes with it), renewed `now`."""
    metadata = node["metadata"]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": metadata["name"],
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": metadata["name"], "uid": metadata["uid"]}
            ],
        },
        "spec": {
            "holderIdentity": metadata["name"],
            "leaseDurationSeconds": duration,
            "renewTime": times.format_micro_time(now),
        },
    }


def renewed_conditions(current: list[dict[str, Any]], fresh: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fresh conditions, keeping the transition time of each whose status did not change."""
    return [
        {
            **condition,
            "lastTransitionTime": transition_time(
                find_condition(current, condition["type"]),
                condition["status"],
                condition["lastTransitionTime"],
            ),
        }
        for condition in fresh
    ]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class Heartbeat:
    """Registers the node (`register`) and keeps it alive (`run`); see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        options: NodeOptions,
        lease_seconds: int = LEASE_SECONDS,
        clock: Callable[[], datetime.datetime] = _now,
    ) -> None:
        self._client = client
        self._options = options
        self._lease_seconds = lease_seconds
        self._clock = clock
        self._path = f"/api/v1/nodes/{options.name}"

    async def register(self) -> dict[str, Any]:
        """Creates the Node unless it exists and writes its status; returns the Node. A Node made by
        another writer between the read and the create (409) is read again and the status written to it."""
        for _ in range(REGISTER_ATTEMPTS - 1):
            try:
                return await self._write_status(await self._get_or_create())
            except RequestFailed as err:
                if err.status != 409:
                    raise
        return await self._write_status(await self._get_or_create())

    async def _get_or_create(self) -> dict[str, Any]:
        try:
            return await self._client.request("GET", self._path)
        except RequestFailed as err:
            if err.status != 404:
                raise
        return await self._client.request(
            "POST", "/api/v1/nodes", body=node_object(self._options, self._clock())
        )

    async def run(self, node: dict[str, Any]) -> None:
        """Keeps the registered `node` alive until cancelled."""
        next_status = asyncio.get_running_loop().time() + STATUS_SECONDS
        while True:
            try:
                await self._renew(node)
                if asyncio.get_running_loop().time() >= next_status:
                    node = await self._write_status(await self._client.request("GET", self._path))
                    next_status += STATUS_SECONDS
            except RequestFailed as err:
                log.warning("node %s: heartbeat failed: %s", self._options.name, err)
            await asyncio.sleep(self._lease_seconds / 4)

    async def _write_status(self, node: dict[str, Any]) -> dict[str, Any]:
        status = node_object(self._options, self._clock())["status"]
        current = (node.get("status") or {}).get("conditions") or []
        status["conditions"] = renewed_conditions(current, status["conditions"])
        # A patch of the status alone, as the kubelet sends: a PUT carries the whole Node as read, and when
        # the node-lifecycle controller changed its taints since, a real API server's NodeRestriction
        # refuses it (403, "not allowed to modify taints") rather than reporting a conflict.
        return await self._client.request(
            "PATCH", self._path + "/status", body={"status": status}, content_type=MERGE_PATCH
        )

    async def _renew(self, node: dict[str, Any]) -> None:
        lease = lease_object(node, self._clock(), self._lease_seconds)
        path = f"{LEASES}/{self._options.name}"
        try:
            current = await self._client.request("GET", path)
        except RequestFailed as err:
            if err.status != 404:
                raise
            await self._client.request("POST", LEASES, body=lease)
            return
        await self._client.request(
            "PUT", path, body={**current, "spec": {**current.get("spec", {}), **lease["spec"]}}
        )
