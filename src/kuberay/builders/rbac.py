"""The autoscaler's RBAC, made per RayCluster with `enableInTreeAutoscaling: true`: a ServiceAccount, a Role
and a RoleBinding (created in that order, create-if-absent, never updated).

Upstream (`common/rbac.go` and the RayCluster controller): the ServiceAccount is the head template's
`serviceAccountName`, else the cluster's name; Role and RoleBinding are named after the cluster; all three
names go through `CheckName`. When the user names the ServiceAccount the operator must not create it (a
ServiceAccount it made would be garbage-collected with the cluster mid-upgrade): see
`user_service_account`. The Role grants what Ray's KubeRay node provider uses: read and patch pods (and
resize them in place), read and patch the RayCluster.
"""

from __future__ import annotations

from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import names, ownership

RULES: tuple[dict[str, list[str]], ...] = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
    {"apiGroups": [constants.GROUP], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
)


def service_account_name(cluster: RayCluster) -> str:
    """`GetHeadGroupServiceAccountName`, unclipped: the head template's `serviceAccountName`, else the
    cluster's name. (Upstream looks the ServiceAccount up by this name and creates it clipped.)"""
    spec = cluster.spec.head_group_spec.template.get("spec") or {}
    return str(spec.get("serviceAccountName") or cluster.name)


def user_service_account(cluster: RayCluster) -> bool:
    """Whether the head template names the ServiceAccount, which the user must then create."""
    spec = cluster.spec.head_group_spec.template.get("spec") or {}
    return bool(spec.get("serviceAccountName"))


def build_autoscaler_rbac(cluster: RayCluster) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The autoscaler's ServiceAccount, Role and RoleBinding for `cluster`."""
    account_name = names.check_name(service_account_name(cluster))
    role_name = names.check_name(cluster.name)
    service_account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(cluster, account_name),
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _metadata(cluster, role_name),
        "rules": [{key: list(values) for key, values in rule.items()} for rule in RULES],
    }
    role_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(cluster, role_name),
        "subjects": [{"kind": "ServiceAccount", "name": account_name, "namespace": cluster.namespace}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
    }
    return service_account, role, role_binding


def _metadata(cluster: RayCluster, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": cluster.namespace,
        "labels": {
            constants.RAY_CLUSTER_LABEL: cluster.name,
            constants.KUBERNETES_APPLICATION_NAME_LABEL: constants.APPLICATION_NAME,
            constants.KUBERNETES_CREATED_BY_LABEL: constants.COMPONENT_NAME,
        },
        "ownerReferences": ownership.controlled_by(cluster),
    }
