"""The Recreate upgrade strategy: the spec hash stamped on the head pod, and when a change means
"delete every pod and start over".

The hash covers the spec minus what the autoscaler or admission controllers change on their own
(replicas, min/max, `workersToDelete`, template tolerations and scheduling gates) and minus the strategy
itself, so only a user's real change to the cluster's shape recreates it. It is a SHA-1 of the muted spec's
canonical JSON in base32 "extended hex" (upstream's encoding); the JSON is ours, not Go's, so a head pod
made by another implementation is recognised by its `ray.io/kuberay-version` annotation and re-stamped
instead of recreated.
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
        # Upstream's scaleStrategy is a struct: absent and empty hash alike.
        strategy = {k: v for k, v in (group.get("scaleStrategy") or {}).items() if k != "workersToDelete"}
        group["scaleStrategy"] = strategy
        _mute_template(group)
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
