"""The NetworkPolicies isolating a RayCluster (`spec.networkPolicy`, gate `RayClusterNetworkPolicy`): one for
the head (`<cluster>-head`) and one per worker group (`<cluster>-workers-<group>`), in spec order.

Upstream (`networkpolicy_controller.go`):

- Mode `DenyAll` (the default) restricts ingress and egress, `DenyAllIngress` only ingress,
  `DenyAllEgress` only egress; a restricted direction is listed in `policyTypes` (Ingress first) and then
  allows only its rules.
- The base rule of each restricted direction allows all ports to or from the pods of the same cluster.
  No DNS rule is added: users add one (the operator cannot know how DNS is deployed).
- The head also admits, when the cluster belongs to a K8sJobMode RayJob (label `ray.io/job-submission-mode`
  and a controller reference to a `ray.io` RayJob), that job's submitter pods on the dashboard port
  (`rayStartParams.dashboard-port`, else 8265, over TCP).
- Custom rules follow the base rules: the head's, and for a worker group its own `workerGroups` entry if
  there is one, else the shared `worker` rules.

`with_default_protocols` gives a policy the `TCP` protocol the API server defaults, so a desired policy
compares equal to the live one.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import NetworkPolicyRules, RayCluster
from kuberay.builders import ownership

JSON = dict[str, Any]

DENY_ALL = "DenyAll"
DENY_ALL_INGRESS = "DenyAllIngress"
DENY_ALL_EGRESS = "DenyAllEgress"
K8S_JOB_MODE = "K8sJobMode"
DASHBOARD_PORT_PARAM = "dashboard-port"
_INT32 = re.compile(r"[+-]?\d+")


def head_policy_name(cluster_name: str) -> str:
    return f"{cluster_name}-head"


def worker_policy_name(cluster_name: str, group_name: str) -> str:
    return f"{cluster_name}-workers-{group_name}"


def build_network_policies(cluster: RayCluster) -> list[JSON]:
    """The head's policy, then one per worker group in spec order; empty without `spec.networkPolicy`."""
    config = cluster.spec.network_policy
    if config is None:
        return []
    head_ingress = [*_base_rules(cluster, "from"), *_submitter_rules(cluster)]
    policies = [
        _policy(
            cluster,
            name=head_policy_name(cluster.name),
            group=constants.HEAD_GROUP_NAME,
            selector={
                constants.RAY_CLUSTER_LABEL: cluster.name,
                constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE,
            },
            base_ingress=head_ingress,
            custom=config.head,
        )
    ]
    for group in cluster.spec.worker_group_specs or ():
        custom = next(
            (entry for entry in config.worker_groups or () if entry.group_name == group.group_name), None
        )
        policies.append(
            _policy(
                cluster,
                name=worker_policy_name(cluster.name, group.group_name),
                group=group.group_name,
                selector={
                    constants.RAY_CLUSTER_LABEL: cluster.name,
                    constants.RAY_NODE_TYPE_LABEL: constants.WORKER_NODE,
                    constants.RAY_NODE_GROUP_LABEL: group.group_name,
                },
                base_ingress=_base_rules(cluster, "from"),
                custom=custom if custom is not None else config.worker,
            )
        )
    return policies


def with_default_protocols(policy: JSON) -> JSON:
    """A copy of `policy` whose rule ports without a protocol say `TCP`, as the API server stores them."""
    result = copy.deepcopy(policy)
    spec = result.get("spec") or {}
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or ():
            for port in rule.get("ports") or ():
                port.setdefault("protocol", "TCP")
    return result


def _policy(
    cluster: RayCluster,
    *,
    name: str,
    group: str,
    selector: dict[str, str],
    base_ingress: list[JSON],
    custom: NetworkPolicyRules | None,
) -> JSON:
    mode = cluster.spec.network_policy.mode if cluster.spec.network_policy else DENY_ALL
    spec: JSON = {"podSelector": {"matchLabels": selector}}
    policy_types = []
    if mode in (DENY_ALL, DENY_ALL_INGRESS):
        policy_types.append("Ingress")
        spec["ingress"] = [*base_ingress, *copy.deepcopy((custom.ingress_rules if custom else None) or [])]
    if mode in (DENY_ALL, DENY_ALL_EGRESS):
        policy_types.append("Egress")
        custom_egress = (custom.egress_rules if custom else None) or []
        spec["egress"] = [*_base_rules(cluster, "to"), *copy.deepcopy(custom_egress)]
    spec["policyTypes"] = policy_types
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": name,
            "namespace": cluster.namespace,
            "labels": {
                constants.RAY_CLUSTER_LABEL: cluster.name,
                constants.RAY_NODE_GROUP_LABEL: group,
                constants.KUBERNETES_APPLICATION_NAME_LABEL: constants.APPLICATION_NAME,
                constants.KUBERNETES_CREATED_BY_LABEL: constants.COMPONENT_NAME,
            },
            "ownerReferences": ownership.controlled_by(cluster),
        },
        "spec": spec,
    }


def _base_rules(cluster: RayCluster, peer_key: str) -> list[JSON]:
    """All ports to (`to`) or from (`from`) the pods of the same cluster."""
    return [{peer_key: [{"podSelector": {"matchLabels": {constants.RAY_CLUSTER_LABEL: cluster.name}}}]}]


def _submitter_rules(cluster: RayCluster) -> list[JSON]:
    """The K8sJobMode submitter of the RayJob that owns the cluster may reach the head's dashboard."""
    if cluster.labels.get(constants.RAY_JOB_SUBMISSION_MODE_LABEL) != K8S_JOB_MODE:
        return []
    for reference in cluster.metadata.owner_references or ():
        if (
            reference.get("kind") == constants.RAY_JOB_CRD
            and reference.get("controller") is True
            and str(reference.get("apiVersion", "")).startswith(constants.GROUP + "/")
        ):
            peer = {
                constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL: reference.get("name", ""),
                constants.RAY_ORIGINATED_FROM_CRD_LABEL: constants.RAY_JOB_CRD,
            }
            port = {"protocol": "TCP", "port": _dashboard_port(cluster)}
            return [{"from": [{"podSelector": {"matchLabels": peer}}], "ports": [port]}]
    return []


def _dashboard_port(cluster: RayCluster) -> int:
    """`rayStartParams.dashboard-port` when it is a 32-bit integer (Go's ParseInt), else 8265."""
    raw = (cluster.spec.head_group_spec.ray_start_params or {}).get(DASHBOARD_PORT_PARAM)
    if raw is not None and _INT32.fullmatch(raw) and -(2**31) <= int(raw) < 2**31:
        return int(raw)
    return constants.DEFAULT_DASHBOARD_PORT
