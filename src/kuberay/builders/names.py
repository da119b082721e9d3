"""Names of the objects KubeRay derives from a RayCluster, and upstream's name-shortening rules.

Upstream shortens names in three different ways and the differences are visible to users, so each rule is
kept exactly: `check_name` keeps the *last* 50 characters, `check_label` the last 63, and `pod_name` the
*first* 50 of its prefix; a leading digit (`check_name` only) or punctuation character becomes `r`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from kuberay.api import constants

MAX_NAME_LENGTH = 50
MAX_LABEL_LENGTH = 63


def _is_punct(char: str) -> bool:
    # Go's unicode.IsPunct: Unicode category P* (so `-_.` are punctuation but `$+<=>^|~` are symbols).
    return unicodedata.category(char).startswith("P")


def check_name(name: str) -> str:
    """`utils.CheckName`: the last 50 characters; a leading digit, then a leading punctuation character,
    replaced by `r`."""
    if len(name) > MAX_NAME_LENGTH:
        name = name[-MAX_NAME_LENGTH:]
    if name and unicodedata.category(name[0]) == "Nd":
        name = "r" + name[1:]
    if name and _is_punct(name[0]):
        name = "r" + name[1:]
    return name


def check_label(value: str) -> str:
    """`utils.CheckLabel`: the last 63 characters; a leading punctuation character replaced by `r`."""
    if len(value) > MAX_LABEL_LENGTH:
        value = value[-MAX_LABEL_LENGTH:]
    if value and _is_punct(value[0]):
        value = "r" + value[1:]
    return value


def pod_name(prefix: str, node_type: str, generate_name: bool) -> str:
    """`utils.PodName`: the first 50 characters of `prefix`, `-<node type>`, lowercased, and a trailing `-`
    when used as a generateName."""
    name = f"{prefix[:MAX_NAME_LENGTH]}-{node_type}".lower()
    return name + "-" if generate_name else name


def identifier(cluster_name: str, node_type: str) -> str:
    """The `ray.io/identifier` label value: `<cluster>-<node type>`, shortened as a label."""
    return check_label(f"{cluster_name}-{node_type}")


def head_service_name(cluster_name: str, cluster_spec: Mapping[str, Any]) -> str:
    """The head Service of a RayCluster: `headGroupSpec.headService.metadata.name` if set, else
    `<cluster>-head-svc`."""
    head_service = (cluster_spec.get("headGroupSpec") or {}).get("headService") or {}
    return ((head_service.get("metadata") or {}).get("name")) or cluster_name + constants.HEAD_SERVICE_SUFFIX


def head_fqdn(cluster_name: str, namespace: str, cluster_spec: Mapping[str, Any], cluster_domain: str) -> str:
    """`<head service>.<namespace>.svc.<cluster domain>`: how workers and init containers reach the head."""
    return f"{head_service_name(cluster_name, cluster_spec)}.{namespace}.svc.{cluster_domain}"


def ray_ip(fqdn: str) -> str:
    """The deprecated `RAY_IP`: the first label of the head's FQDN."""
    return fqdn.split(".")[0]
