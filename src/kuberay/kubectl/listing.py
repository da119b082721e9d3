"""`kubectl ray get cluster|job|service`: one ray.io kind listed by name or namespace, printed as upstream's
plugin prints through `k8s.io/cli-runtime` (`kuberay.kubectl.printer`).

Each kind is a `Listing`: its resource, the noun its messages use, its columns and, for `-o wide`, a few
more. One query serves every kind: a `metadata.name` field selector when named, so a missing name is a
clear error (`Ray job NAME not found in namespace NS`) rather than an empty table; `-A` lists every
namespace. `-o json|yaml` prints the object itself when named, else a `v1/List`, as kubectl does; a table
with no rows prints nothing, not even its header.

Columns: a RayCluster's are upstream's `get cluster`. Upstream's plugin has no `get job|service`; their
tables begin with their CRD's printer columns, in its order and under its names, so they read as
`kubectl get rayjob|rayservice` does: a RayJob's are all of them (job status, deployment status, ray
cluster name, start time, end time, age); a RayService's two (service status, num serve endpoints) are
followed by what serves (the active and pending clusters, the active cluster's applications that are
RUNNING of all of them) and the age.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kuberay.kubectl import printer
from kuberay.kubectl.kube import Kube, PluginError, describe
from kuberay.rayresources import RAYCLUSTER, RAYJOB, RAYSERVICE
from kuberay.runtime import errors
from kuberay.runtime.resources import Resource
from kubesemantics import quantity

OUTPUT_FORMATS = ("json", "yaml", "wide")
# RayCluster conditions in the order upstream picks the one to show.
CONDITION_PRECEDENCE = (
    "RayClusterProvisioned",
    "HeadPodReady",
    "ReplicaFailure",
    "RayClusterSuspended",
    "RayClusterSuspending",
)
Row = Callable[[dict[str, Any]], list[object]]


@dataclass(frozen=True)
class Listing:
    resource: Resource
    noun: str  # "cluster": "Ray cluster NAME not found", "unable to retrieve Ray clusters"
    headers: Sequence[str]
    row: Row
    wide_headers: Sequence[str]
    wide: Row


def canonical(value: Any) -> str:
    """A quantity in Go's canonical form; "0" when absent."""
    if value is None or value == "":
        return "0"
    return quantity.canonical(quantity.parse(value), quantity.is_binary(str(value)))


def scope(namespace: str, all_namespaces: bool) -> str:
    return " in any namespace" if all_namespaces else f" in namespace {namespace}"


def relevant_condition(cluster: dict[str, Any]) -> str:
    true = {
        c.get("type")
        for c in (cluster.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }
    return next((kind for kind in CONDITION_PRECEDENCE if kind in true), "")


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = obj.get("status") or {}
    return status


def _named(obj: dict[str, Any]) -> list[object]:
    return [obj["metadata"]["name"], obj["metadata"].get("namespace", "")]


def _cluster_row(cluster: dict[str, Any]) -> list[object]:
    status = _status(cluster)
    return _named(cluster) + [
        status.get("desiredWorkerReplicas", 0),
        status.get("availableWorkerReplicas", 0),
        canonical(status.get("desiredCPU")),
        canonical(status.get("desiredGPU")),
        canonical(status.get("desiredTPU")),
        canonical(status.get("desiredMemory")),
        relevant_condition(cluster),
        status.get("state", ""),
        printer.age(cluster),
    ]


def _cluster_wide(cluster: dict[str, Any]) -> list[object]:
    head = _status(cluster).get("head") or {}
    return [head.get("podIP", ""), head.get("serviceIP", "")]


def _job_row(job: dict[str, Any]) -> list[object]:
    status = _status(job)
    return _named(job) + [
        status.get("jobStatus", ""),
        status.get("jobDeploymentStatus", ""),
        status.get("rayClusterName", ""),
        status.get("startTime", ""),
        status.get("endTime", ""),
        printer.age(job),
    ]


def _job_wide(job: dict[str, Any]) -> list[object]:
    spec, status = job.get("spec") or {}, _status(job)
    return [status.get("jobId", ""), spec.get("submissionMode") or "K8sJobMode", status.get("failed", 0)]


def ready_applications(status: dict[str, Any]) -> str:
    """`RUNNING/all` of the applications the active cluster serves."""
    applications = (status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}
    running = sum(1 for app in applications.values() if (app or {}).get("status") == "RUNNING")
    return f"{running}/{len(applications)}"


def _service_row(service: dict[str, Any]) -> list[object]:
    status = _status(service)
    return _named(service) + [
        status.get("serviceStatus", ""),
        status.get("numServeEndpoints", 0),
        (status.get("activeServiceStatus") or {}).get("rayClusterName", ""),
        (status.get("pendingServiceStatus") or {}).get("rayClusterName", ""),
        ready_applications(status),
        printer.age(service),
    ]


def _service_wide(service: dict[str, Any]) -> list[object]:
    status = _status(service)
    upgrading = next(
        (c.get("status", "") for c in status.get("conditions") or [] if c.get("type") == "UpgradeInProgress"),
        "",
    )
    return [upgrading]


CLUSTERS = Listing(
    RAYCLUSTER, "cluster",
    ["Name", "Namespace", "Desired Workers", "Available Workers", "CPUs", "GPUs", "TPUs", "Memory",
     "Condition", "Status", "Age"],
    _cluster_row, ["Head Pod IP", "Head Service IP"], _cluster_wide,
)  # fmt: skip
JOBS = Listing(
    RAYJOB, "job",
    ["Name", "Namespace", "Job Status", "Deployment Status", "Ray Cluster Name", "Start Time", "End Time",
     "Age"],
    _job_row, ["Job ID", "Submission Mode", "Failed"], _job_wide,
)  # fmt: skip
SERVICES = Listing(
    RAYSERVICE, "service",
    ["Name", "Namespace", "Service Status", "Num Serve Endpoints", "Active Cluster", "Pending Cluster",
     "Ready Applications", "Age"],
    _service_row, ["Upgrade In Progress"], _service_wide,
)  # fmt: skip


async def show(
    kube: Kube, listing: Listing, name: str | None, all_namespaces: bool, output: str | None
) -> str:
    """The named object, or every one of the namespace (`all_namespaces`: of the cluster), as `output`."""
    namespace = None if all_namespaces else kube.namespace
    selector = f"metadata.name={name}" if name else None
    try:
        found = (await kube.client.list_all(listing.resource, namespace, field_selector=selector)).items
    except errors.KubeError as e:
        where = "all namespaces" if all_namespaces else f"namespace {kube.namespace}"
        raise PluginError(
            f"unable to retrieve Ray {listing.noun}s for {where}: {describe(e, listing.resource)}"
        ) from e
    if name and not found:
        raise PluginError(f"Ray {listing.noun} {name} not found{scope(kube.namespace, all_namespaces)}")
    if output in ("json", "yaml"):
        document: Any = found[0] if name else {"apiVersion": "v1", "kind": "List", "items": found, "metadata": {"resourceVersion": ""}}  # fmt: skip
        return printer.to_json(document) if output == "json" else printer.to_yaml(document)
    wide = output == "wide"
    headers = [*listing.headers, *(listing.wide_headers if wide else ())]
    return printer.table(headers, [listing.row(o) + (listing.wide(o) if wide else []) for o in found])
