"""What each operator makes for the same RayCluster samples, normalised and diffed.

    python -m benchmarks.peer.differential [--timeout 300] [SAMPLE...]   (default: a handful of samples)

Runs the samples under upstream's operator, then under ours, each on a fresh localkube (see
`benchmarks.peer.conformance`), and once each is ready (or given up on) reads the Pods, Services,
ServiceAccounts, Roles, RoleBindings and Ingresses of its namespace and the RayCluster's status. Objects
are normalised before comparing: the namespace, uids, resourceVersions, timestamps, managedFields,
generated name suffixes, cluster IPs, node names, pod status (localkube's, not the operator's), the
spec-hash annotation, version labels and the suffix of a multi-host replica's name. Prints, per sample and object, each field whose value differs
(`upstream` then `ours`) and each object only one operator made. Record what remains, with its reason,
in `benchmarks/peer/differences.md`. A harness: nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.peer.conformance import settle
from benchmarks.peer.environment import Environment
from integration.raycluster.conftest import RAYCLUSTER, Kube
from integration.raycluster.test_samples import the_cluster
from integration.runtime.kube import client_for
from kuberay.runtime.client import Client
from kuberay.runtime.resources import INGRESS, POD, ROLE, ROLE_BINDING, SERVICE, SERVICE_ACCOUNT

DEFAULT_SAMPLES = [
    "ray-cluster.sample.yaml",
    "ray-cluster.complete.yaml",
    "ray-cluster.autoscaler.yaml",
    "ray-cluster.separate-ingress.yaml",
    "ray-cluster.tpu-v4-multihost.yaml",
]
KINDS = (POD, SERVICE, SERVICE_ACCOUNT, ROLE, ROLE_BINDING, INGRESS)
DROPPED_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace")
DROPPED_ANNOTATIONS = re.compile(r"hash|kubectl\.kubernetes\.io/last-applied")
VERSION_LABELS = re.compile(r"version", re.I)
POD_SUFFIX = re.compile(r"-[a-z0-9]{5}$")

Objects = dict[str, Any]  # "Kind/normalised-name" -> normalised object


def _normalise(kind: str, obj: dict[str, Any], namespace: str) -> tuple[str, dict[str, Any]]:
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
    return f"{kind}/{name}", _replace(obj, namespace)


def _replace(value: Any, namespace: str) -> Any:
    """The namespace (random per run) written as NS wherever it appears."""
    if isinstance(value, dict):
        return {k: _replace(v, namespace) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, namespace) for v in value]
    if isinstance(value, str):
        return value.replace(namespace, "NS")
    return value


async def objects(client: Client, kube: Kube, sample: str) -> Objects:
    found: Objects = {}
    for resource in KINDS:
        # Pods of one group, paired in replica then host order (their names end in a random suffix).
        items = sorted((await client.list(resource, kube.namespace)).items, key=_replica_order)
        for obj in items:
            if resource is SERVICE_ACCOUNT and obj["metadata"]["name"] == "default":
                continue
            key, normalised = _normalise(resource.kind, obj, kube.namespace)
            index = sum(k == key or k.startswith(f"{key}#") for k in found)
            found[f"{key}#{index}" if index else key] = normalised
    cluster = await client.get(RAYCLUSTER, the_cluster(sample)["metadata"]["name"], kube.namespace)
    status = cluster.get("status") or {}
    for key in ("lastUpdateTime", "stateTransitionTimes", "head", "observedGeneration"):
        status.pop(key, None)
    for condition in status.get("conditions") or ():
        condition.pop("lastTransitionTime", None)
    found["RayCluster/status"] = _replace(status, kube.namespace)
    return found


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
    try:
        results, kubes = await settle(client, samples, timeout)
        for sample, (state, detail, _) in sorted(results.items()):
            print(f"{env.kind}: {sample}: {state} {detail}")
        return {sample: await objects(client, kube, sample) for sample, kube in kubes.items()}
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("samples", nargs="*")
    args = parser.parse_args()
    samples = args.samples or DEFAULT_SAMPLES
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
