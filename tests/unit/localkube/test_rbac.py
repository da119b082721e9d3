"""RBAC decisions over a small cluster policy: an allow/deny matrix, aggregation, and the 403 wording."""

from __future__ import annotations

from typing import Any

import pytest

from localkube.server.rbac import (
    Authorizer,
    RequestAttributes,
    UserInfo,
    bootstrap_policy,
    forbidden_message,
    service_account_user,
)

RBAC = "rbac.authorization.k8s.io/v1"


def meta(name: str, namespace: str = "", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        **({"namespace": namespace} if namespace else {}),
        **({"labels": labels} if labels else {}),
    }


def rule(
    groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None
) -> dict[str, Any]:
    return {
        "apiGroups": groups,
        "resources": resources,
        "verbs": verbs,
        **({"resourceNames": names} if names else {}),
    }


def binding(
    kind: str, name: str, role_kind: str, role: str, subjects: list[dict[str, str]], namespace: str = ""
) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": kind,
        "metadata": meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects,
    }


POLICY: dict[str, list[dict[str, Any]]] = {
    "clusterroles": [
        *[o for o in bootstrap_policy() if o["kind"] == "ClusterRole"],
        {
            "metadata": meta("operator"),
            "rules": [
                rule(["ray.io"], ["rayclusters", "rayclusters/status"], ["*"]),
                rule([""], ["pods"], ["get", "list", "watch", "create", "delete"]),
            ],
        },
        {"metadata": meta("node-reader"), "rules": [rule([""], ["nodes"], ["get", "list"])]},
        {
            "metadata": meta("monitoring"),
            "aggregationRule": {
                "clusterRoleSelectors": [{"matchLabels": {"aggregate-to-monitoring": "true"}}]
            },
            "rules": [],
        },
        {
            "metadata": meta("metrics-part", labels={"aggregate-to-monitoring": "true"}),
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
        {
            "metadata": meta("events-part", labels={"aggregate-to-monitoring": "true"}),
            "rules": [rule(["", "events.k8s.io"], ["events"], ["list"])],
        },
    ],
    "clusterrolebindings": [
        *[o for o in bootstrap_policy() if o["kind"] == "ClusterRoleBinding"],
        binding(
            "ClusterRoleBinding",
            "operator",
            "ClusterRole",
            "operator",
            [{"kind": "ServiceAccount", "name": "kuberay-operator", "namespace": "ray-system"}],
        ),
        binding(
            "ClusterRoleBinding",
            "nodes",
            "ClusterRole",
            "node-reader",
            [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "readers"}],
        ),
        binding(
            "ClusterRoleBinding",
            "monitoring",
            "ClusterRole",
            "monitoring",
            [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "prometheus"}],
        ),
    ],
    "roles": [
        {
            "metadata": meta("cm-editor", "team-a"),
            "rules": [
                rule([""], ["configmaps"], ["get", "update"], names=["settings"]),
                rule([""], ["pods/log", "pods/*"], ["get"]),
            ],
        },
        {"metadata": meta("cm-editor", "team-b"), "rules": [rule(["*"], ["*"], ["*"])]},
    ],
    "rolebindings": [
        binding(
            "RoleBinding", "alice-cm", "Role", "cm-editor", [{"kind": "User", "name": "alice"}], "team-a"
        ),
        # A ServiceAccount subject without a namespace belongs to the binding's namespace.
        binding(
            "RoleBinding",
            "bot",
            "ClusterRole",
            "node-reader",
            [{"kind": "ServiceAccount", "name": "bot"}],
            "team-a",
        ),
    ],
}

ADMIN = UserInfo("admin", ("system:masters", "system:authenticated"))
OPERATOR = service_account_user("ray-system", "kuberay-operator")
IDLE_SA = service_account_user("default", "no-rules")
ALICE = UserInfo("alice", ("system:authenticated",))
READER = UserInfo("bob", ("readers", "system:authenticated"))
PROMETHEUS = UserInfo("prometheus", ("system:authenticated",))
BOT = service_account_user("team-a", "bot")


def res(
    verb: str, group: str, resource: str, namespace: str = "", name: str = "", sub: str = ""
) -> RequestAttributes:
    return RequestAttributes(verb, group, resource, sub, namespace, name)


def url(verb: str, path: str) -> RequestAttributes:
    return RequestAttributes(verb, "", "", path=path)


MATRIX = [
    (ADMIN, res("delete", "", "nodes", name="n1"), True),
    (ADMIN, url("get", "/anything"), True),
    (IDLE_SA, res("list", "", "pods", "default"), False),
    (IDLE_SA, res("get", "", "configmaps", "default", "x"), False),
    (IDLE_SA, url("get", "/version"), True),
    (IDLE_SA, url("get", "/apis/ray.io/v1"), True),
    (IDLE_SA, url("get", "/metrics"), False),
    (IDLE_SA, res("create", "authorization.k8s.io", "selfsubjectaccessreviews"), True),
    (OPERATOR, res("update", "ray.io", "rayclusters", "ns1", "rc", sub="status"), True),
    (OPERATOR, res("patch", "ray.io", "rayclusters", "ns1", "rc"), True),
    (OPERATOR, res("get", "ray.io", "rayjobs", "ns1", "j"), False),
    (OPERATOR, res("update", "", "pods", "ns1", "p"), False),
    (OPERATOR, res("create", "", "pods", "ns1"), True),
    (OPERATOR, res("get", "", "pods", "ns1", "p", sub="log"), False),
    (service_account_user("other", "kuberay-operator"), res("list", "ray.io", "rayclusters"), False),
    (ALICE, res("get", "", "configmaps", "team-a", "settings"), True),
    (ALICE, res("get", "", "configmaps", "team-a", "other"), False),
    (ALICE, res("list", "", "configmaps", "team-a"), False),
    (ALICE, res("get", "", "configmaps", "team-b", "settings"), False),
    (ALICE, res("get", "", "pods", "team-a", "p", sub="log"), True),
    (ALICE, res("get", "", "pods", "team-a", "p", sub="exec"), True),
    (ALICE, res("get", "", "pods", "team-a", "p"), False),
    (READER, res("list", "", "nodes"), True),
    (READER, res("watch", "", "nodes"), False),
    (BOT, res("get", "", "nodes", "team-a", "n1"), True),
    (BOT, res("get", "", "nodes", name="n1"), False),
    (service_account_user("team-b", "bot"), res("get", "", "nodes", "team-a", "n1"), False),
    (PROMETHEUS, url("get", "/metrics"), True),
    (PROMETHEUS, res("list", "events.k8s.io", "events", "ns1"), True),
    (PROMETHEUS, res("list", "", "secrets", "ns1"), False),
]


@pytest.mark.parametrize(
    ("user", "attrs", "allowed"),
    MATRIX,
    ids=[f"{u.name}-{a.verb}-{a.resource or a.path}-{a.subresource}" for u, a, _ in MATRIX],
)
def test_decisions(user: UserInfo, attrs: RequestAttributes, allowed: bool) -> None:
    assert Authorizer(lambda resource: POLICY[resource]).authorize(user, attrs) is allowed


def test_decisions_follow_live_objects() -> None:
    live: dict[str, list[dict[str, Any]]] = {
        "clusterroles": [],
        "clusterrolebindings": [],
        "roles": [],
        "rolebindings": [],
    }
    authorizer = Authorizer(lambda resource: live[resource])
    attrs = res("list", "", "pods", "default")
    assert not authorizer.authorize(IDLE_SA, attrs)
    live["roles"].append({"metadata": meta("pods", "default"), "rules": [rule([""], ["pods"], ["list"])]})
    live["rolebindings"].append(
        binding(
            "RoleBinding",
            "b",
            "Role",
            "pods",
            [{"kind": "Group", "name": "system:serviceaccounts:default"}],
            "default",
        )
    )
    assert authorizer.authorize(IDLE_SA, attrs)
    assert not authorizer.authorize(IDLE_SA, res("list", "", "pods", "kube-system"))


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        (
            res("list", "", "pods", "default"),
            'pods is forbidden: User "system:serviceaccount:default:no-rules" cannot list resource "pods" in API group "" in the namespace "default"',
        ),
        (
            res("get", "ray.io", "rayclusters", "ns", "rc", sub="status"),
            'rayclusters.ray.io "rc" is forbidden: User "system:serviceaccount:default:no-rules" cannot get resource "rayclusters/status" in API group "ray.io" in the namespace "ns"',
        ),
        (
            res("list", "", "nodes"),
            'nodes is forbidden: User "system:serviceaccount:default:no-rules" cannot list resource "nodes" in API group "" at the cluster scope',
        ),
        (
            url("get", "/metrics"),
            'forbidden: User "system:serviceaccount:default:no-rules" cannot get path "/metrics"',
        ),
    ],
)
def test_forbidden_message(attrs: RequestAttributes, expected: str) -> None:
    assert forbidden_message(IDLE_SA, attrs) == expected


def test_aggregation_is_transitive_and_survives_cycles() -> None:
    def role(name: str, labels: dict[str, str], selects: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "metadata": meta(name, labels=labels),
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"to": selects}}]},
            "rules": rules,
        }

    policy: dict[str, list[dict[str, Any]]] = {
        "clusterroles": [
            role("top", {"to": "middle"}, "top", []),
            role("middle", {"to": "top"}, "middle", []),
            role("leaf", {"to": "middle"}, "nothing", [rule([""], ["secrets"], ["get"])]),
        ],
        "clusterrolebindings": [
            binding("ClusterRoleBinding", "b", "ClusterRole", "top", [{"kind": "User", "name": "u"}])
        ],
        "roles": [],
        "rolebindings": [],
    }
    assert Authorizer(lambda resource: policy[resource]).authorize(
        UserInfo("u"), res("get", "", "secrets", "ns", "s")
    )


def test_a_binding_to_a_missing_role_explains_the_denial() -> None:
    policy: dict[str, list[dict[str, Any]]] = {
        "clusterroles": [],
        "clusterrolebindings": [
            binding("ClusterRoleBinding", "b", "ClusterRole", "view", [{"kind": "User", "name": "u"}])
        ],
        "roles": [],
        "rolebindings": [binding("RoleBinding", "r", "Role", "gone", [{"kind": "User", "name": "u"}], "ns")],
    }
    attrs = res("list", "", "pods", "ns")
    allowed, reason = Authorizer(lambda resource: policy[resource]).decide(UserInfo("u"), attrs)
    assert (allowed, reason) == (
        False,
        'RBAC: [clusterrole.rbac.authorization.k8s.io "view" not found, role.rbac.authorization.k8s.io "gone" not found]',
    )
    assert forbidden_message(UserInfo("u"), attrs, reason) == (
        'pods is forbidden: User "u" cannot list resource "pods" in API group "" in the namespace "ns": '
        + reason
    )
