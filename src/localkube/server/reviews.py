"""The review resources: asked by POST, answered at once, never stored.

- SelfSubjectAccessReview and SubjectAccessReview (`kubectl auth can-i`): whether the requesting user,
  or the named one, may do what the review's resource or non-resource attributes describe;
- SelfSubjectRulesReview (`kubectl auth can-i --list`): the RBAC rules that apply to the user;
- SelfSubjectReview (`kubectl auth whoami`) and TokenReview: who a user, or a token, is.
"""

from __future__ import annotations

from typing import Any

from localkube.server import errors
from localkube.server.auth import Authenticator
from localkube.server.rbac import MASTERS, Authorizer, RequestAttributes, UserInfo
from localkube.server.registry import ResourceType


def _user_info(user: UserInfo) -> dict[str, Any]:
    info: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    if user.extra:
        info["extra"] = {key: list(values) for key, values in user.extra}
    return info


class Reviews:
    def __init__(self, authenticator: Authenticator, authorizer: Authorizer) -> None:
        self._authenticator = authenticator
        self._authorizer = authorizer

    def create(self, user: UserInfo, resource_type: ResourceType, review: dict[str, Any]) -> dict[str, Any]:
        spec = review.get("spec") or {}
        if resource_type.kind == "SelfSubjectAccessReview":
            status = self._access(user, spec)
        elif resource_type.kind == "SubjectAccessReview":
            subject = UserInfo(spec.get("user", ""), tuple(spec.get("groups") or ()))
            status = self._access(subject, spec)
        elif resource_type.kind == "SelfSubjectRulesReview":
            status = self._rules(user, str(spec.get("namespace") or ""))
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

    def _access(self, user: UserInfo, spec: dict[str, Any]) -> dict[str, Any]:
        resource = spec.get("resourceAttributes")
        non_resource = spec.get("nonResourceAttributes")
        if resource:
            attributes = RequestAttributes(
                *(
                    str(resource.get(key) or "")
                    for key in ("verb", "group", "resource", "subresource", "namespace", "name")
                )
            )
        elif non_resource:
            attributes = RequestAttributes(
                str(non_resource.get("verb") or ""), "", "", path=str(non_resource.get("path") or "")
            )
        else:
            raise errors.bad_request("spec.resourceAttributes or spec.nonResourceAttributes is required")
        return {"allowed": self._authorizer.authorize(user, attributes)}

    def _rules(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        """The rules that apply to the user in a namespace, in the review's two lists."""
        if MASTERS in user.groups:
            return {
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            }
        rules = self._authorizer.rules_for(user, namespace)
        return {
            "resourceRules": [
                {
                    key: rule[key]
                    for key in ("verbs", "apiGroups", "resources", "resourceNames")
                    if key in rule
                }
                for rule in rules
                if "resources" in rule
            ],
            "nonResourceRules": [
                {"verbs": rule.get("verbs", []), "nonResourceURLs": rule["nonResourceURLs"]}
                for rule in rules
                if "nonResourceURLs" in rule
            ],
            "incomplete": False,
        }

    def _token(self, spec: dict[str, Any]) -> dict[str, Any]:
        user = self._authenticator.authenticate(f"Bearer {spec.get('token', '')}")
        if user is None:
            return {"authenticated": False, "user": {}, "error": "invalid bearer token"}
        return {
            "authenticated": True,
            "user": _user_info(user),
            "audiences": list(spec.get("audiences") or []),
        }
