"""What every step of a RayService reconcile shares.

- `Context`, one per controller: where it reads (caches), where it writes (the client), whom it tells (the
  Event recorder), how it reaches dashboards, its options, and what it remembers between passes (the
  submitted Serve configs (`ServeConfigCache`: a config is submitted again only when it changed, or after
  a restart), dangling clusters' deletion times, abandoned upgrades).
- `Pass`, one per reconcile of one RayService: the object as read, its parsed model, the status as it was
  and as this pass makes it, the pass's time, and the Gateway API objects it has seen. The step modules
  (`suspend`, `serving`, `gateway`) take a `Pass`; only the reconciler makes one (`status` takes the facts
  the reconciler gathers from it).

Reads of owned kinds come from the caches; the Gateway API objects (whose CRDs need not be installed) are
read with the client, as upstream reads them. Every write goes through the client, its Events recorded
by `writes.recorded` (a delete's by `Pass.delete`, so that every delete's Events follow one rule).
"""

from __future__ import annotations

import copy
import functools
import random
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from kuberay.api import constants
from kuberay.api.features import FeatureGates
from kuberay.api.rayservice import ClusterUpgradeOptions, RayService, RayServiceStatusDict
from kuberay.builders import gateway
from kuberay.builders import service as service_builder
from kuberay.controllers import writes
from kuberay.controllers.dashboards import DashboardAccess
from kuberay.controllers.rayservice import clusters
from kuberay.rayresources import RAYSERVICE
from kuberay.runtime import errors
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.controller import TemporaryError
from kuberay.runtime.events import Recorder
from kuberay.runtime.frozen import thaw
from kuberay.runtime.resources import ObjectKey, Resource
from kubesemantics import times

ENDPOINT_SLICE = Resource("discovery.k8s.io/v1", "EndpointSlice", "endpointslices")
# Read and written directly, never cached: the Gateway API CRDs need not be installed unless a RayService
# uses incremental upgrade (upstream does not watch them either).
GATEWAY = Resource(gateway.GATEWAY_API_VERSION, "Gateway", "gateways")
HTTP_ROUTE = Resource(gateway.GATEWAY_API_VERSION, "HTTPRoute", "httproutes")
REQUEUE = 2.0
SERVE_CONFIG_CACHE_SIZE = 1000
JSON = dict[str, Any]


@dataclass(frozen=True)
class Caches:
    rayservices: Store
    clusters: Store
    pods: Store
    services: Store
    slices: Store


@dataclass(frozen=True)
class Options:
    gates: FeatureGates = field(default_factory=FeatureGates)
    cluster_domain: str = constants.DEFAULT_CLUSTER_DOMAIN
    zero_downtime: bool = True  # ENABLE_ZERO_DOWNTIME
    cluster_ip_head_service: bool = False
    upgrade_timeout: float | None = None  # RAYSERVICE_UPGRADE_TIMEOUT_SECONDS; None: no limit


class ServeConfigCache:
    """The last `serveConfigV2` submitted per (RayService, cluster); the least recently used RayServices
    are forgotten past `size` (an operator restart forgets everything, so configs are re-submitted once)."""

    def __init__(self, size: int = SERVE_CONFIG_CACHE_SIZE) -> None:
        self._size = size
        self._by_service: OrderedDict[str, dict[str, str]] = OrderedDict()

    def get(self, service: str, cluster: str) -> str | None:
        clusters = self._by_service.get(service)
        if clusters is None:
            return None
        self._by_service.move_to_end(service)
        return clusters.get(cluster)

    def put(self, service: str, cluster: str, config: str) -> None:
        self._by_service.setdefault(service, {})[cluster] = config
        self._by_service.move_to_end(service)
        while len(self._by_service) > self._size:
            self._by_service.popitem(last=False)

    def keep_only(self, service: str, clusters: set[str]) -> None:
        """Forgets the clusters of `service` that are neither active nor pending."""
        cached = self._by_service.get(service)
        if cached is not None:
            for name in [name for name in cached if name not in clusters]:
                del cached[name]


@dataclass
class Context:
    client: Client
    caches: Caches
    dashboard: DashboardAccess
    options: Options
    clock: Clock
    recorder: Recorder | None = None
    rng: random.Random = field(default_factory=random.Random)
    serve_configs: ServeConfigCache = field(default_factory=ServeConfigCache)
    # Dangling clusters' deletion times, by cluster (in memory: a restart restarts the delays).
    delete_at: dict[ObjectKey, datetime] = field(default_factory=dict)
    # The goal hash of each RayService's last upgrade abandoned for RAYSERVICE_UPGRADE_TIMEOUT_SECONDS:
    # that spec is not tried again until it changes.
    abandoned: dict[str, str] = field(default_factory=dict)


class Pass:
    """One reconcile of one RayService: `obj` as read (thawed), `status` as this pass makes it."""

    def __init__(self, ctx: Context, key: ObjectKey, obj: JSON) -> None:
        self.ctx = ctx
        self.key = key
        self.obj = obj
        self.model = RayService.parse(obj)
        self.old = cast(RayServiceStatusDict, obj.get("status") or {})
        self.status: RayServiceStatusDict = copy.deepcopy(self.old)
        self.now = ctx.clock.now()
        self.stamp = times.format_time(self.now)
        self.incremental = service_builder.is_incremental_upgrade(self.model, ctx.options.gates)
        self.goal = clusters.goal_spec(self.model)
        # Incremental upgrade: the HTTPRoute's backend weights and the Gateway API objects of this pass.
        self.route_weights: dict[str, int] | None = None
        self.gateway: JSON | None = None
        self.route: JSON | None = None

    @property
    def active_name(self) -> str:
        return self.status.get("activeServiceStatus", {}).get("rayClusterName") or ""

    @property
    def pending_name(self) -> str:
        return self.status.get("pendingServiceStatus", {}).get("rayClusterName") or ""

    def cluster(self, name: str) -> JSON | None:
        """The named cluster from the cache (thawed), or None."""
        if not name:
            return None
        cached = self.ctx.caches.clusters.get(ObjectKey(self.key.namespace, name))
        return thaw(cached) if cached is not None else None

    def owned_clusters(self) -> list[Mapping[str, Any]]:
        """Every cluster this RayService made, by its origin labels."""
        return self.ctx.caches.clusters.list(
            self.key.namespace,
            {
                constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL: self.key.name,
                constants.RAY_ORIGINATED_FROM_CRD_LABEL: constants.RAY_SERVICE_CRD,
            },
        )

    def head_pods(self, cluster: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return self.ctx.caches.pods.list(
            self.key.namespace,
            {
                constants.RAY_CLUSTER_LABEL: cluster["metadata"]["name"],
                constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE,
            },
        )

    @property
    def head_service_name(self) -> str:
        return self.key.name + constants.HEAD_SERVICE_SUFFIX

    @property
    def serve_service_name(self) -> str:
        return service_builder.rayservice_serve_service_name(self.model)

    def upgrade_options(self) -> ClusterUpgradeOptions:
        strategy = self.model.spec.upgrade_strategy
        options = strategy.cluster_upgrade_options if strategy is not None else None
        if options is None:
            raise TemporaryError("Missing RayService ClusterUpgradeOptions during upgrade")
        return options

    # --- I/O ---------------------------------------------------------------------------------------------

    def event(self, type: str, reason: str, message: str, action: str) -> None:
        if self.ctx.recorder is not None:
            self.ctx.recorder.record(self.obj, type, reason, message, action)

    async def delete(self, resource: Resource, name: str, *, why: str = "") -> None:
        """Deletes one object in the background with `Deleted<Kind>` / `FailedToDelete<Kind>` Events (`why`
        ends the success message); an object already gone is no Event."""
        ns, kind = self.key.namespace, resource.kind
        await writes.recorded(
            functools.partial(self.ctx.client.delete, resource, name, ns, propagation_policy="Background"),
            self.event,
            "Delete",
            (f"Deleted{kind}", f"Deleted the {kind} {ns}/{name}{why}"),
            (f"FailedToDelete{kind}", f"Failed to delete the {kind} {ns}/{name}: {{error}}"),
            already=errors.NotFoundError,
        )

    async def get_or_none(self, resource: Resource, name: str) -> JSON | None:
        """An object read from the API server (not a cache), or None when it does not exist."""
        try:
            return await self.ctx.client.get(resource, name, self.key.namespace)
        except errors.NotFoundError:
            return None

    async def write_status(self) -> None:
        await self.ctx.client.update_status(RAYSERVICE, {**self.obj, "status": self.status})
