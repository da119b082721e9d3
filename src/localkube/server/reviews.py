"""The review resources: asked by POST, answered at once, never stored.

- SelfSubjectAccessReview and SubjectAccessReview (`kubectl auth can-i`): whether the requesting user,
  or the named one, may do what the review's resource or non-resource attributes describe;
- SelfSubjectRulesReview (`kubectl auth can-i --list`): everything for the admin; for others, the
  rules are not enumerated and the answer says it is incomplete;
- SelfSubjectReview (`kubectl auth whoami`) and TokenReview: who a user, or a token, is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from localkube.server import errors
from localkube.server.auth import Authenticator, User
from localkube.server.registry import ResourceType

Allowed = Callable[[User, dict[str, str]], bool]


def _user_info(user: User) -> dict[str, Any]:
    info: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    if user.extra:
        info["extra"] = user.extra
    return info


class Reviews:
    def __init__(self, authenticator: Authenticator, allowed: Allowed) -> None:
        self._authenticator = authenticator
        self._allowed = allowed

    def create(self, user: User, resource_type: ResourceType, review: dict[str, Any]) -> dict[str, Any]:
        spec = review.get("spec") or {}
        if resource_type.kind == "SelfSubjectAccessReview":
            status = self._access(user, spec)
        elif resource_type.kind == "SubjectAccessReview":
            subject = User(spec.get("user", ""), tuple(spec.get("groups") or ()), spec.get("uid", ""), spec.get("extra") or {})
            status = self._access(subject, spec)
        elif resource_type.kind == "SelfSubjectRulesReview":
            status = self._rules(user)
        elif resource_type.kind == "SelfSubjectReview":
            status = {"userInfo": _user_info(user)}
        else:
            status = self._token(spec)
        return {
            "kind": resource_type.kind,
            "apiVersion": resource_type.api_version,
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }

    def _access(self, user: User, spec: dict[str, Any]) -> dict[str, Any]:
        resource = spec.get("resourceAttributes")
        non_resource = spec.get("nonResourceAttributes")
        if resource:
            keys = ("verb", "group", "resource", "subresource", "namespace", "name")
            attributes = {key: str(resource.get(key) or "") for key in keys}
        elif non_resource:
            attributes = {"verb": str(non_resource.get("verb") or ""), "path": str(non_resource.get("path") or "")}
        else:
            raise errors.bad_request("spec.resourceAttributes or spec.nonResourceAttributes is required")
        allowed = self._allowed(user, attributes)
        status: dict[str, Any] = {"allowed": allowed}
        if user.is_admin:
            status["reason"] = "the user is in the system:masters group"
        return status

    @staticmethod
    def _rules(user: User) -> dict[str, Any]:
        if user.is_admin:
            return {
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            }
        return {"resourceRules": [], "nonResourceRules": [], "incomplete": True, "evaluationError": "rules are not enumerated"}

    def _token(self, spec: dict[str, Any]) -> dict[str, Any]:
        user = self._authenticator.authenticate(f"Bearer {spec.get('token', '')}")
        if user is None:
            return {"authenticated": False, "user": {}, "error": "invalid bearer token"}
        return {"authenticated": True, "user": _user_info(user), "audiences": list(spec.get("audiences") or [])}
