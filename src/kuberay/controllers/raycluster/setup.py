"""Installing the RayCluster controller into a manager: its caches, watches, predicates and reconciler.

Watches as upstream's `RayClusterReconciler.SetupWithManager`: the RayCluster itself when its generation,
labels or annotations change (status-only writes do not wake it), and the Pods, Services, Secrets and PVCs
it controls. Batch Jobs are
cached (the Redis cleanup Job is read from the cache) but not watched: cleanup progress is polled by
requeue, as upstream does.

With the RayClusterMTLS gate, also cert-manager's Issuers and Certificates the cluster controls, and the
Secrets cert-manager issues for those Certificates (upstream's mTLS controller owns Issuers and
Certificates). Their informers are optional: without cert-manager they find nothing served and watch
nothing, so the manager still becomes ready (upstream probes discovery before registering them).
"""

from __future__ import annotations

from kuberay.api import constants
from kuberay.api.features import Feature
from kuberay.api.settings import OperatorSettings
from kuberay.controllers.raycluster import mtls
from kuberay.controllers.raycluster.context import ClusterOptions, Context
from kuberay.controllers.raycluster.metrics import ClusterMetrics
from kuberay.controllers.raycluster.reconciler import RayClusterReconciler
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.controller import Controller
from kuberay.runtime.expectations import ScaleExpectations
from kuberay.runtime.informer import Event, EventType
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import JOB, PERSISTENT_VOLUME_CLAIM, POD, SECRET, SERVICE
from kuberay.schedulers.manager import new_scheduler

# controller-runtime names an unnamed controller after its kind in lowercase; upstream's dashboards and
# alerts select on that value in the `controller` label.
CONTROLLER_NAME = "raycluster"


def spec_or_metadata_changed(event: Event) -> bool:
    """controller-runtime's GenerationChanged | LabelChanged | AnnotationChanged predicates, or'ed.

    A new deletionTimestamp counts as a generation change: the Kubernetes API server bumps the generation
    when it marks an object with finalizers for deletion, but not every server does (the finalizer must
    run either way)."""
    if event.type is not EventType.MODIFIED or event.old is None:
        return True
    old, new = event.old["metadata"], event.obj["metadata"]
    fields = ("generation", "labels", "annotations", "deletionTimestamp")
    return any(old.get(field) != new.get(field) for field in fields)


def install(manager: Manager, settings: OperatorSettings) -> RayClusterReconciler:
    config = settings.config
    options = ClusterOptions.from_settings(settings)
    pods = manager.cache(POD)
    # Everything a RayCluster owns is found by its ray.io/cluster label: index it rather than scan the namespace.
    for resource in (POD, SERVICE, JOB):
        manager.cache(resource).index_label(constants.RAY_CLUSTER_LABEL)
    ctx = Context(
        client=manager.client,
        clusters=manager.cache(RAYCLUSTER),
        pods=pods,
        services=manager.cache(SERVICE),
        jobs=manager.cache(JOB),
        secrets=manager.cache(SECRET),
        pvcs=manager.cache(PERSISTENT_VOLUME_CLAIM),
        recorder=manager.recorder,
        expectations=ScaleExpectations(
            pods.get, manager.clock, connected_since=manager.informer(POD).connected_since
        ),
        clock=manager.clock,
        options=options,
        scheduler=new_scheduler(settings, manager.client, manager.clock, manager.recorder),
    )
    metrics = ClusterMetrics(manager.metrics.registry, ctx.clusters) if config.enable_metrics else None
    reconciler = RayClusterReconciler(ctx, metrics)
    controller = (
        Controller(
            CONTROLLER_NAME,
            reconciler.reconcile,
            concurrency=config.reconcile_concurrency,
            clock=manager.clock,
            timeout=settings.runtime.reconcile_timeout,
        )
        .for_(RAYCLUSTER, spec_or_metadata_changed)
        .owns(POD)
        .owns(SERVICE)
        .owns(SECRET)
        .owns(PERSISTENT_VOLUME_CLAIM)
    )
    if options.gates.enabled(Feature.RAY_CLUSTER_MTLS):
        _watch_cert_manager(manager, ctx, controller)
    manager.add(controller)
    return reconciler


def _watch_cert_manager(manager: Manager, ctx: Context, controller: Controller) -> None:
    """cert-manager's caches and watches (before `manager.add`, which would make plain informers of them)."""
    certificates = manager.informer(mtls.CERTIFICATE, optional=True)
    ctx.certificates = certificates.store
    ctx.issuers = manager.informer(mtls.ISSUER, optional=True).store
    ctx.cert_manager_served = lambda: certificates.served
    controller.owns(mtls.ISSUER).owns(mtls.CERTIFICATE)
    controller.watches(SECRET, mtls.issued_secret_owner(ctx.certificates))
