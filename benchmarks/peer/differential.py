"""What each operator makes for the same RayCluster and RayJob samples, normalised and diffed.

    python -m benchmarks.peer.differential [--timeout 300] [SAMPLE...]   (default: every sample)

Runs the samples under upstream's operator, then under ours, each on a fresh localkube (see
`benchmarks.peer.conformance`), and as each is ready or ended (or given up on) reads the Pods, Services,
ServiceAccounts, Roles, RoleBindings, Ingresses, Jobs and Secrets of its namespace, the RayCluster's
status, and for a RayJob its status and the RayCluster it made (labels, annotations, spec, status).
Objects are normalised before comparing: the namespace, uids, resourceVersions, timestamps,
managedFields, generated name suffixes (a RayJob's cluster and job id included), cluster IPs, node
names, pinned head addresses, uids written in values, pod and Job status (localkube's, not the operator's), a Job's controller-uid
labels, the spec-hash annotation, version labels and the suffix of a multi-host replica's name. Prints,
per sample and object, each field whose value differs (`upstream` then `ours`) and each object only one
operator made. Record what remains, with its reason, in `benchmarks/peer/differences.md`. A harness:
nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.peer.conformance import every_sample, is_rayjob, settle
from benchmarks.peer.environment import Environment
from benchmarks.peer.rayjobs import JobsStandIn, the_rayjob
from integration.raycluster.conftest import Kube
from integration.raycluster.test_samples import the_cluster
from integration.runtime.kube import client_for
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import (
    INGRESS,
    JOB,
    POD,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
)

KINDS = (POD, SERVICE, SERVICE_ACCOUNT, ROLE, ROLE_BINDING, INGRESS, JOB, SECRET)
DROPPED_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace")
DROPPED_ANNOTATIONS = re.compile(r"hash|kubectl\.kubernetes\.io/last-applied")
VERSION_LABELS = re.compile(r"version|controller-uid", re.I)
POD_SUFFIX = re.compile(r"-[a-z0-9]{5}$")
PINNED_ADDRESS = re.compile(r"127\.253\.\d+\.\d+")  # benchmarks.peer.rayjobs pins RayJob heads there
UUID = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
)  # a uid, as a GCS storage namespace
DROPPED_STATUS = (
    "lastUpdateTime",
    "stateTransitionTimes",
    "head",
    "observedGeneration",
    "startTime",
    "endTime",
)

Objects = dict[str, Any]  # "Kind/normalised-name" -> normalised object


def _normalise(kind: str, obj: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    meta = obj["metadata"]
    for key in DROPPED_METADATA:
        meta.pop(key, None)
    for reference in meta.get("ownerReferences") or ():
        reference.pop("uid", None)
    meta["annotations"] = {
        k: v for k, v in (meta.get("annotations") or {}).items() if not DROPPED_ANNOTATIONS.search(k)
    }
    meta["labels"] = {k: v for k, v in (meta.get("labels") or {}).items() if not VERSION_LABELS.search(k)}
    if "ray.io/worker-group-replica-name" in meta["labels"]:  # the group's name and a generated suffix
        meta["labels"]["ray.io/worker-group-replica-name"] = POD_SUFFIX.sub(
            "", meta["labels"]["ray.io/worker-group-replica-name"]
        )
    name = meta.get("name", "")
    if kind == "Pod":
        name = POD_SUFFIX.sub("", name)
        meta.pop("name", None)
        obj.pop("status", None)
        obj["spec"].pop("nodeName", None)
    if kind == "Service":
        obj["spec"].pop("clusterIP", None)
        obj["spec"].pop("clusterIPs", None)
        obj.pop("status", None)
    if kind == "Job":
        obj.pop("status", None)
        obj["spec"].pop("selector", None)  # the Job controller's, by controller-uid
    return f"{kind}/{name}", obj


Names = dict[str, str]  # what varies per run -> what it is written as


def _replace(value: Any, names: Names) -> Any:
    """Each generated name (namespace, a RayJob's cluster and job id) written as its placeholder."""
    if isinstance(value, dict):
        return {k: _replace(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, names) for v in value]
    if isinstance(value, str):
        for generated, placeholder in names.items():
            value = value.replace(generated, placeholder)
        return UUID.sub("UID", PINNED_ADDRESS.sub("PINNED", value))
    return value


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    status = obj.get("status") or {}
    for key in DROPPED_STATUS:
        status.pop(key, None)
    for condition in status.get("conditions") or ():
        condition.pop("lastTransitionTime", None)
    info = status.get("rayJobInfo") or {}
    for key in ("startTime", "endTime"):
        info.pop(key, None)
    if isinstance(status.get("rayClusterStatus"), dict):
        status["rayClusterStatus"] = _status({"status": status["rayClusterStatus"]})
    return status


async def objects(client: Client, kube: Kube, sample: str) -> Objects:
    found: Objects = {}
    names = {kube.namespace: "NS"}
    if is_rayjob(sample):
        name = the_rayjob(sample)["metadata"]["name"]
        job = await client.get(RAYJOB, name, kube.namespace)
        status = job.get("status") or {}
        if status.get("jobId"):
            names[status["jobId"]] = f"{name}-JOBID"
        cluster_name = status.get("rayClusterName")
        if cluster_name and cluster_name.startswith(f"{name}-"):  # made by the operator, named after the job
            names[cluster_name] = f"{name}-RAYCLUSTER"
            try:
                cluster = await client.get(RAYCLUSTER, cluster_name, kube.namespace)
            except errors.NotFoundError:
                found["RayCluster"] = "deleted"
            else:
                _, normalised = _normalise("RayCluster", cluster)
                normalised["status"] = _status(cluster)
                found["RayCluster"] = normalised
        found["RayJob/status"] = _status(job)
    else:
        cluster = await client.get(RAYCLUSTER, the_cluster(sample)["metadata"]["name"], kube.namespace)
        found["RayCluster/status"] = _status(cluster)
    for resource in KINDS:
        # Pods of one group, paired in replica then host order (their names end in a random suffix).
        items = sorted((await client.list(resource, kube.namespace)).items, key=_replica_order)
        for obj in items:
            if resource is SERVICE_ACCOUNT and obj["metadata"]["name"] == "default":
                continue
            if resource is SECRET and obj.get("type") == "kubernetes.io/service-account-token":
                continue
            key, normalised = _normalise(resource.kind, obj)
            index = sum(k == key or k.startswith(f"{key}#") for k in found)
            found[f"{key}#{index}" if index else key] = normalised
    longest_first = dict(
        sorted(names.items(), key=lambda item: -len(item[0]))
    )  # a cluster's name has its job's
    return {_replace(k, longest_first): _replace(v, longest_first) for k, v in found.items()}


def _replica_order(obj: dict[str, Any]) -> tuple[int, int]:
    labels = obj["metadata"].get("labels") or {}
    return int(labels.get("ray.io/worker-group-replica-index", 0)), int(
        labels.get("ray.io/replica-host-index", 0)
    )


def diff(upstream: Any, ours: Any, path: str = "") -> list[str]:
    if isinstance(upstream, dict) and isinstance(ours, dict):
        return [
            line
            for key in sorted(upstream.keys() | ours.keys())
            for line in diff(upstream.get(key), ours.get(key), f"{path}.{key}")
        ]
    if isinstance(upstream, list) and isinstance(ours, list) and len(upstream) == len(ours):
        return [
            line
            for i, (a, b) in enumerate(zip(upstream, ours, strict=True))
            for line in diff(a, b, f"{path}[{i}]")
        ]
    return [] if upstream == ours else [f"  {path}: upstream {upstream!r} | ours {ours!r}"]


async def collect(env: Environment, samples: list[str], timeout: float) -> dict[str, Objects]:
    client = client_for(env.localkube)
    standins: list[JobsStandIn] = []
    made: dict[str, Objects] = {}

    async def read(sample: str, kube: Kube) -> None:
        made[sample] = await objects(client, kube, sample)

    try:
        results, _ = await settle(client, samples, timeout, standins, read)
        for sample, (state, detail, _) in sorted(results.items()):
            print(f"{env.kind}: {sample}: {state} {detail}")
        return made
    finally:
        await client.close()
        for standin in standins:
            standin.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("samples", nargs="*")
    args = parser.parse_args()
    samples = args.samples or every_sample()
    made: dict[str, dict[str, Objects]] = {}
    for kind in ("upstream", "ours"):
        with tempfile.TemporaryDirectory(prefix=f"peer-{kind}-") as tmp, Environment(Path(tmp), kind) as env:
            made[kind] = asyncio.run(collect(env, samples, args.timeout))
    for sample in samples:
        upstream, ours = made["upstream"].get(sample, {}), made["ours"].get(sample, {})
        print(f"== {sample}")
        for key in sorted(upstream.keys() | ours.keys()):
            if key not in ours:
                print(f" {key}: made by upstream only")
            elif key not in upstream:
                print(f" {key}: made by ours only")
            elif lines := diff(upstream[key], ours[key]):
                print(f" {key}:", *lines, sep="\n")


if __name__ == "__main__":
    main()
