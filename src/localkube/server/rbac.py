"""RBAC authorization from the live Roles, ClusterRoles and their bindings, as Kubernetes' RBAC authorizer.

A request is allowed when some ClusterRoleBinding, or some RoleBinding in the request's namespace, binds a
subject matching the user to a role with a rule covering the request. Users in `system:masters` are always
allowed. ServiceAccount subjects match the user `system:serviceaccount:<namespace>:<name>`; a ServiceAccount
subject without a namespace takes the binding's. Aggregated ClusterRoles (`aggregationRule`) hold their own
rules plus those of every ClusterRole their label selectors match, so no controller has to copy them.
Nothing is cached: every decision reads the objects through `list_objects`, so it sees the latest writes.
`decide` also gives RBAC's reason for a denial (bindings to roles that do not exist), and `forbidden_message`
(`forbidden_error`: the whole 403) words a denial as the API server does; `bootstrap_policy` is the small
default policy (cluster-admin, discovery, self-reviews) a fresh server starts with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubesemantics.selectors import label_selector_matches
from localkube.server.errors import ApiError

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class UserInfo:
    """An authenticated identity; `extra` holds (key, values) pairs, as user.Info's Extra map."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class RequestAttributes:
    """What a request does: a resource request (resource set) or a non-resource one (path set)."""

    verb: str
    api_group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def is_resource_request(self) -> bool:
        return bool(self.resource)


def service_account_user(namespace: str, name: str) -> UserInfo:
    """The user a ServiceAccount's token authenticates as, with the groups Kubernetes gives it."""
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


class Authorizer:
    """RBAC decisions over the live objects that `list_objects(resource)` returns."""

    def __init__(self, list_objects: Callable[[str], list[dict[str, Any]]]) -> None:
        self._list = list_objects

    def authorize(self, user: UserInfo, attrs: RequestAttributes) -> bool:
        return self.decide(user, attrs)[0]

    def decide(self, user: UserInfo, attrs: RequestAttributes) -> tuple[bool, str]:
        """The decision and, for a denial, RBAC's reason: the roles the user's bindings name but that do not
        exist (`RBAC: clusterrole.rbac.authorization.k8s.io "view" not found`), or "" when there are none."""
        if MASTERS in user.groups:
            return True, ""
        rules, missing = self._applicable(user, attrs.namespace)
        if any(rule_allows(rule, attrs) for rule in rules):
            return True, ""
        if not missing:
            return False, ""
        return False, "RBAC: " + (missing[0] if len(missing) == 1 else "[" + ", ".join(missing) + "]")

    def rules_for(self, user: UserInfo, namespace: str) -> list[dict[str, Any]]:
        """Every rule that applies to the user in the namespace (cluster-wide ones included)."""
        return self._applicable(user, namespace)[0]

    def _applicable(self, user: UserInfo, namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
        cluster_roles = {_name(role): role for role in self._list("clusterroles")}
        found: list[dict[str, Any]] = []
        missing: list[str] = []
        bindings = [(b, "") for b in self._list("clusterrolebindings")]
        roles: dict[str, dict[str, Any]] = {}
        if namespace:
            roles = {_name(role): role for role in self._list("roles") if _namespace(role) == namespace}
            bindings += [(b, namespace) for b in self._list("rolebindings") if _namespace(b) == namespace]
        for binding, binding_namespace in bindings:
            if not _binds(binding, user, binding_namespace):
                continue
            ref = binding.get("roleRef") or {}
            name = str(ref.get("name", ""))
            if ref.get("kind") == "ClusterRole" and name in cluster_roles:
                found.extend(_cluster_role_rules(cluster_roles[name], cluster_roles))
            elif ref.get("kind") == "Role" and name in roles:
                found.extend(roles[name].get("rules") or [])
            else:
                missing.append(f"{str(ref.get('kind', '')).lower()}.{RBAC_GROUP} {_go_quote(name)} not found")
        return found, missing


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _namespace(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace", ""))


def _binds(binding: dict[str, Any], user: UserInfo, binding_namespace: str) -> bool:
    for subject in binding.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user.name:
            return True
        if kind == "Group" and name in user.groups:
            return True
        if kind == "ServiceAccount":
            namespace = subject.get("namespace") or binding_namespace
            if namespace and user.name == f"system:serviceaccount:{namespace}:{name}":
                return True
    return False


def _cluster_role_rules(
    role: dict[str, Any], cluster_roles: dict[str, dict[str, Any]], seen: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    # An aggregated role's rules include those its selected roles aggregate in turn; `seen` stops cycles.
    seen = seen | {_name(role)}
    rules = list(role.get("rules") or [])
    selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
    for other in cluster_roles.values():
        if _name(other) in seen:
            continue
        labels = (other.get("metadata") or {}).get("labels") or {}
        if any(label_selector_matches(selector, labels) for selector in selectors):
            rules.extend(_cluster_role_rules(other, cluster_roles, seen))
    return rules


def _covers(allowed: Iterable[str], wanted: str) -> bool:
    allowed = list(allowed)
    return "*" in allowed or wanted in allowed


def rule_allows(rule: dict[str, Any], attrs: RequestAttributes) -> bool:
    """Whether one PolicyRule covers the request."""
    if not _covers(rule.get("verbs") or [], attrs.verb):
        return False
    if not attrs.is_resource_request:
        return any(_url_matches(url, attrs.path) for url in rule.get("nonResourceURLs") or [])
    if not _covers(rule.get("apiGroups") or [], attrs.api_group):
        return False
    if not any(_resource_matches(resource, attrs) for resource in rule.get("resources") or []):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


def _resource_matches(allowed: str, attrs: RequestAttributes) -> bool:
    if allowed == "*":
        return True
    if not attrs.subresource:
        return allowed == attrs.resource
    combined = f"{attrs.resource}/{attrs.subresource}"
    return allowed in (combined, f"*/{attrs.subresource}", f"{attrs.resource}/*")


def _url_matches(allowed: str, path: str) -> bool:
    if allowed == "*" or allowed == path:
        return True
    return allowed.endswith("*") and path.startswith(allowed[:-1])


def forbidden_message(user: UserInfo, attrs: RequestAttributes, reason: str = "") -> str:
    """The `message` of the API server's 403 Status for a denied request (`reason`: from `decide`)."""
    suffix = f": {reason}" if reason else ""
    if not attrs.is_resource_request:
        return (
            f"forbidden: User {_go_quote(user.name)} cannot {attrs.verb} path {_go_quote(attrs.path)}{suffix}"
        )
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f"in the namespace {_go_quote(attrs.namespace)}" if attrs.namespace else "at the cluster scope"
    denial = (
        f"User {_go_quote(user.name)} cannot {attrs.verb} resource {_go_quote(resource)} "
        f"in API group {_go_quote(attrs.api_group)} {where}"
    )
    # The API server names the resource without its subresource here.
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    subject = f"{qualified} {_go_quote(attrs.name)}" if attrs.name else qualified
    return f"{subject} is forbidden: {denial}{suffix}"


def forbidden_error(user: UserInfo, attrs: RequestAttributes, reason: str = "") -> ApiError:
    """The API server's 403 for a denied request, its details naming the object refused."""
    # Empty members are left out, as Go's omitempty does.
    details = {
        k: v for k, v in (("name", attrs.name), ("group", attrs.api_group), ("kind", attrs.resource)) if v
    }
    return ApiError(
        403, "Forbidden", forbidden_message(user, attrs, reason), details if attrs.resource else None
    )


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "rules": rules,
    }


def _cluster_role_binding(name: str, groups: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": group} for group in groups],
    }


def bootstrap_policy() -> list[dict[str, Any]]:
    """The default ClusterRoles and ClusterRoleBindings a new cluster has, by their Kubernetes names."""
    info_urls = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
    discovery_urls = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *info_urls]
    return [
        _cluster_role(
            "cluster-admin",
            [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        ),
        _cluster_role_binding("cluster-admin", [MASTERS]),
        _cluster_role("system:discovery", [{"nonResourceURLs": discovery_urls, "verbs": ["get"]}]),
        _cluster_role_binding("system:discovery", [AUTHENTICATED]),
        _cluster_role("system:public-info-viewer", [{"nonResourceURLs": info_urls, "verbs": ["get"]}]),
        _cluster_role_binding("system:public-info-viewer", [AUTHENTICATED, UNAUTHENTICATED]),
        _cluster_role(
            "system:basic-user",
            [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                },
                {
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                    "verbs": ["create"],
                },
            ],
        ),
        _cluster_role_binding("system:basic-user", [AUTHENTICATED]),
    ]
