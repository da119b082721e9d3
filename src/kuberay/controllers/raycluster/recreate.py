"""The Recreate upgrade strategy: the spec hash stamped on the head pod, and when a change means
"delete every pod and start over".

The hash covers the spec minus what the autoscaler, Kueue or admission controllers change on their own
(replicas, min/max, `workersToDelete`, `scaleGate`, template tolerations and scheduling gates) and minus the
strategy itself, so only a user's real change to the cluster's shape recreates it. It is a SHA-1 of the muted spec's
canonical JSON in base32 "extended hex" (upstream's encoding); the JSON is ours, not Go's, so a head pod
made by another implementation is recognised by its `ray.io/kuberay-version` annotation and re-stamped
instead of recreated. Upstream hashes Go's JSON of its spec struct, where a value field tagged `omitempty`
(a string, number, slice or map, not a pointer) is left out when empty: such a field empty and missing
hash alike here too (`OMITEMPTY`); a pointer field (`suspend: false`) is not empty, and counts.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from kuberay.api import constants

RECREATE = "Recreate"
# upstream's ray.io value fields tagged `omitempty`, by the path of the object holding them ("*": each item
# of a list). Kubernetes' own types inside (pod templates, Services) are hashed as they are.
OMITEMPTY: Mapping[tuple[str, ...], frozenset[str]] = {
    (): frozenset({"headServiceAnnotations", "rayVersion", "workerGroupSpecs"}),
    ("authOptions",): frozenset({"mode"}),
    ("autoscalerOptions",): frozenset({"env", "envFrom", "volumeMounts", "command", "args"}),
    ("gcsFaultToleranceOptions",): frozenset({"backend", "externalStorageNamespace", "redisAddress"}),
    ("gcsFaultToleranceOptions", "redisUsername"): frozenset({"value"}),
    ("gcsFaultToleranceOptions", "redisPassword"): frozenset({"value"}),
    ("gcsFaultToleranceOptions", "storage"): frozenset({"claimName", "accessModes", "subPath"}),
    ("historyServerOptions", "collectorOptions"): frozenset({"env"}),
    ("networkPolicy",): frozenset({"workerGroups"}),
    ("networkPolicy", "head"): frozenset({"ingressRules", "egressRules"}),
    ("networkPolicy", "worker"): frozenset({"ingressRules", "egressRules"}),
    ("networkPolicy", "workerGroups", "*"): frozenset({"ingressRules", "egressRules"}),
    ("headGroupSpec",): frozenset({"resources", "labels", "serviceType"}),
    ("headGroupSpec", "ingressOptions"): frozenset({"tls"}),
    ("workerGroupSpecs", "*"): frozenset({"resources", "labels", "numOfHosts", "labelMappings"}),
}
_EMPTY: tuple[Any, ...] = (None, "", 0, [], {})
SCALE_STRATEGY_MUTED = frozenset({"workersToDelete", "scaleGate"})


def _holders(spec: Any, path: tuple[str, ...]) -> list[dict[str, Any]]:
    found = [spec]
    for step in path:
        if step == "*":
            found = [item for holder in found if isinstance(holder, list) for item in holder]
        else:
            found = [holder.get(step) for holder in found if isinstance(holder, dict)]
    return [holder for holder in found if isinstance(holder, dict)]


def _omit_empty(spec: dict[str, Any]) -> None:
    for path, names in OMITEMPTY.items():
        for holder in _holders(spec, path):
            for name in names & holder.keys():
                if holder[name] in _EMPTY:
                    del holder[name]


def _mute_template(group: dict[str, Any]) -> None:
    pod_spec = (group.get("template") or {}).get("spec")
    if isinstance(pod_spec, dict):
        pod_spec.pop("tolerations", None)
        pod_spec.pop("schedulingGates", None)


def spec_hash(spec: Mapping[str, Any]) -> str:
    """The hash of the cluster spec (wire form) that decides whether a Recreate upgrade is due."""
    muted: dict[str, Any] = copy.deepcopy(dict(spec))
    muted.pop("upgradeStrategy", None)
    _mute_template(muted.setdefault("headGroupSpec", {}))
    for group in muted.get("workerGroupSpecs") or ():
        for key in ("replicas", "minReplicas", "maxReplicas"):
            group.pop(key, None)
        # Upstream's scaleStrategy is a struct: absent and empty hash alike. Its lists are other
        # controllers' (the autoscaler's workersToDelete, Kueue's scaleGate), never a change of shape.
        strategy = {
            k: v for k, v in (group.get("scaleStrategy") or {}).items() if k not in SCALE_STRATEGY_MUTED
        }
        group["scaleStrategy"] = strategy
        _mute_template(group)
    _omit_empty(muted)
    digest = hashlib.sha1(orjson.dumps(muted, option=orjson.OPT_SORT_KEYS)).digest()
    return base64.b32hexencode(digest).decode()


def is_recreate(spec: Mapping[str, Any]) -> bool:
    return (spec.get("upgradeStrategy") or {}).get("type") == RECREATE


def head_verdict(head_pod: Mapping[str, Any], expected_hash: str) -> str:
    """What the head pod's annotations say: "restamp" (made by another operator version: rewrite its hash
    and version, do not recreate), "recreate" (the spec changed), or "keep"."""
    annotations = head_pod["metadata"].get("annotations") or {}
    version = annotations.get(constants.KUBERAY_VERSION_ANNOTATION, "")
    if version and version != constants.KUBERAY_VERSION:
        return "restamp"
    actual = annotations.get(constants.UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION, "")
    return "recreate" if actual and actual != expected_hash else "keep"
