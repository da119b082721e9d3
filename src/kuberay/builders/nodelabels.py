"""Node Label Delivery (upstream v1.8, gate TopologyLabelDelivery; kuberay#5260, #5299/#5300, #5329): what the
`pods` and `pods/binding` mutating webhooks change, as JSONPatches, from plain objects.

A worker group's `labelMappings` name node labels (each under `mapTo`, by default the same key) that its Ray
nodes are started with. The node is known only once the scheduler binds the pod, so delivery is in two steps:
- at pod CREATE the Ray container gets `RAY_NODE_LABELS_JSON`, a downward API reference to the pod's
  `ray.io/topology-labels` annotation, and the generated `ray start` line writes that value to
  `/tmp/ray-labels.yaml` and starts with `--labels-file` (Ray 2.45 and later read a YAML mapping there; JSON
  is YAML). With the value empty (nothing was delivered) the container exits before `ray start`, saying so:
  every mapped label is required;
- at bind, the Binding gets the annotation: the JSON object of the mapped labels of the target Node, those
  the operator's `allowedNodeLabels` allow, which the API server merges into the pod's annotations (and so into
  the environment the kubelet starts the container with). A label the Node lacks (or the allowlist no longer
  allows) is `missing`: nothing is delivered, and the webhook records `RequiredNodeLabelMissing`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kuberay.api import constants

JSON = dict[str, Any]
Patch = list[JSON]

ANNOTATION = "ray.io/topology-labels"
ENV = "RAY_NODE_LABELS_JSON"
LABELS_FILE = "/tmp/ray-labels.yaml"
REQUIRED_NODE_LABEL_MISSING = "RequiredNodeLabelMissing"
RAY_CONTAINER_INDEX = 0  # upstream's utils.RayContainerIndex

_START = "ray start "
# Refuses to start Ray without the node's labels rather than start it without them (they are all required).
_WRITE_LABELS = (
    f'[ -n "${ENV}" ] || {{ echo "KubeRay: no node labels were delivered to this pod (annotation {ANNOTATION}): '
    f'see its {REQUIRED_NODE_LABEL_MISSING} events" >&2; exit 1; }}; '
    f"printf '%s' \"${ENV}\" > {LABELS_FILE}; "
)


def mappings_of(cluster: Mapping[str, Any], group: str) -> list[JSON]:
    """The `labelMappings` of the RayCluster's worker group `group` (none when it has none)."""
    for spec in (cluster.get("spec") or {}).get("workerGroupSpecs") or ():
        if spec.get("groupName") == group:
            return [dict(m) for m in spec.get("labelMappings") or ()]
    return []


def ray_key(mapping: Mapping[str, Any]) -> str:
    return str(mapping.get("mapTo") or mapping["nodeLabel"])


def worker_group(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(cluster, group) of a Ray worker pod, None for any other pod."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(constants.RAY_NODE_TYPE_LABEL) != constants.WORKER_NODE:
        return None
    cluster, group = labels.get(constants.RAY_CLUSTER_LABEL), labels.get(constants.RAY_NODE_GROUP_LABEL)
    return (str(cluster), str(group)) if cluster and group else None


def pod_patch(pod: Mapping[str, Any]) -> Patch:
    """The pods CREATE mutation of a worker of a group with labelMappings: the env var and the labels file
    before KubeRay's `ray start` (nothing when the Ray container has neither, or has the env var already)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    if len(containers) <= RAY_CONTAINER_INDEX:
        return []
    ray = containers[RAY_CONTAINER_INDEX]
    at = f"/spec/containers/{RAY_CONTAINER_INDEX}"
    args = ray.get("args") or []
    if any(e.get("name") == ENV for e in ray.get("env") or ()) or not args or _START not in args[0]:
        return []
    env = {"name": ENV, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{ANNOTATION}']"}}}
    start = args[0].rindex(_START)
    line = f"{args[0][:start]}{_WRITE_LABELS}{_START}--labels-file={LABELS_FILE} {args[0][start + len(_START) :]}"
    return [
        {"op": "add", "path": f"{at}/env/-", "value": env}
        if "env" in ray
        else {"op": "add", "path": f"{at}/env", "value": [env]},
        {"op": "replace", "path": f"{at}/args/0", "value": line},
    ]


@dataclass(frozen=True)
class Delivery:
    """The Ray labels a pod gets from its Node, and the mapped node labels that could not be delivered."""

    labels: dict[str, str]
    missing: tuple[str, ...]


def delivery(mappings: Sequence[Mapping[str, Any]], node_labels: Mapping[str, str], allowed: Sequence[str]) -> Delivery:  # fmt: skip
    labels, missing = {}, []
    for mapping in mappings:
        label = str(mapping["nodeLabel"])
        if label in node_labels and label in allowed:
            labels[ray_key(mapping)] = str(node_labels[label])
        else:
            missing.append(label)
    return Delivery(labels, tuple(missing))


def binding_patch(binding: Mapping[str, Any], labels: Mapping[str, str]) -> Patch:
    """The pods/binding mutation: the annotation, as JSON with sorted keys."""
    value = json.dumps(dict(labels), sort_keys=True, separators=(",", ":"))
    if (binding.get("metadata") or {}).get("annotations") is None:
        return [{"op": "add", "path": "/metadata/annotations", "value": {ANNOTATION: value}}]
    return [{"op": "add", "path": "/metadata/annotations/" + ANNOTATION.replace("~", "~0").replace("/", "~1"), "value": value}]  # fmt: skip


def missing_message(node: str, missing: Sequence[str], group: str) -> str:
    labels = ", ".join(f'"{label}"' for label in missing)
    return (
        f'Node "{node}" lacks the required label(s) {labels} of worker group {group}\'s labelMappings (or '
        "allowedNodeLabels does not allow them): no node labels delivered, the pod exits before ray start"
    )
