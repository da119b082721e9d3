"""Impersonation: acting as another user (`kubectl --as`, `--as-group`, `--as-uid`), as Kubernetes does it.

A request asks for it with the headers `Impersonate-User`, `Impersonate-Group` (repeatable),
`Impersonate-Uid` and `Impersonate-Extra-<key>` (repeatable; the key lower-cased and %-unescaped). Each
thing asked for is authorized for the authenticated requestor with the verb `impersonate`, on the resource
Kubernetes names for it: `users` and `groups` (core group, cluster scope), `serviceaccounts` (core group,
in the account's namespace, for a user named `system:serviceaccount:<ns>:<name>`), `uids` and
`userextras/<key>` (group `authentication.k8s.io`); the object name is the value asked for. The first one
refused ends the request with the API server's 403. Groups, uid or extras without a user are a 400.

The identity acted as: the user asked for; the groups asked for, or, when none are, a ServiceAccount's own
groups; plus `system:authenticated` unless `system:authenticated` or `system:unauthenticated` is among
them (`system:unauthenticated` instead for `system:anonymous`), exactly as upstream's filter builds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

from localkube.server import errors
from localkube.server.rbac import (
    AUTHENTICATED,
    UNAUTHENTICATED,
    Authorizer,
    RequestAttributes,
    UserInfo,
    forbidden_error,
    service_account_user,
)

_PREFIX = "impersonate-"
_USER = "impersonate-user"
_GROUP = "impersonate-group"
_UID = "impersonate-uid"
_EXTRA = "impersonate-extra-"
AUTHENTICATION_GROUP = "authentication.k8s.io"
ANONYMOUS = "system:anonymous"
_SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

Headers = tuple[tuple[str, str], ...]


def requested(headers: Iterable[tuple[bytes, bytes]]) -> Headers:
    """The impersonation headers among a request's raw headers, names lower-cased, repeats kept in order."""
    found = []
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        if name.startswith(_PREFIX):
            found.append((name, raw_value.decode("latin-1")))
    return tuple(found)


def _service_account(username: str) -> tuple[str, str] | None:
    """The namespace and name of a ServiceAccount's user name, or None when it names no ServiceAccount."""
    if not username.startswith(_SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(_SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2:
        return None
    namespace, name = parts
    if len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
        return None
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return None
    return namespace, name


def _reference(kind: str, name: str, namespace: str = "", api_version: str = "", field: str = "") -> str:
    # How Go prints the ObjectReference the API server names in its 400 (seven fields, space-separated).
    return "{" + " ".join((kind, namespace, name, "", api_version, "", field)) + "}"


def act_as(requestor: UserInfo, headers: Headers, authorizer: Authorizer) -> UserInfo:
    """The identity a request acts as: `requestor` when it asks for no impersonation, otherwise the one it
    asks for, once every part of it is allowed to `requestor`. Raises ApiError (400, 403) otherwise."""
    if not headers:
        return requestor
    user = next((value for name, value in headers if name == _USER), "")
    groups_asked = [value for name, value in headers if name == _GROUP]
    uid = next((value for name, value in headers if name == _UID), "")
    extras = [(unquote(name[len(_EXTRA) :]), value) for name, value in headers if name.startswith(_EXTRA)]
    if not (user or groups_asked or uid or extras):
        return requestor
    account = _service_account(user) if user else None
    checks: list[tuple[RequestAttributes, str]] = []
    if account is not None:
        checks.append((RequestAttributes("impersonate", "", "serviceaccounts", "", *account), ""))
    elif user:
        checks.append((RequestAttributes("impersonate", "", "users", name=user), ""))
    checks += [(RequestAttributes("impersonate", "", "groups", name=group), "") for group in groups_asked]
    checks += [
        (RequestAttributes("impersonate", AUTHENTICATION_GROUP, "userextras", key, name=value), key)
        for key, value in extras
    ]
    if uid:
        checks.append((RequestAttributes("impersonate", AUTHENTICATION_GROUP, "uids", name=uid), ""))
    if not user:
        references = " ".join(
            _reference(
                {"groups": "Group", "userextras": "UserExtra", "uids": "UID"}[attrs.resource],
                attrs.name,
                api_version=f"{attrs.api_group}/v1" if attrs.api_group else "",
                field=field,
            )
            for attrs, field in checks
        )
        raise errors.bad_request(f"requested [{references}] without impersonating a user")
    for attrs, _ in checks:
        allowed, reason = authorizer.decide(requestor, attrs)
        if not allowed:
            raise forbidden_error(requestor, attrs, reason)
    groups = list(groups_asked)
    if account is not None and not groups_asked:
        groups = list(service_account_user(*account).groups)
    if user == ANONYMOUS:
        if UNAUTHENTICATED not in groups:
            groups.append(UNAUTHENTICATED)
    elif AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    extra: dict[str, list[str]] = {}
    for key, value in extras:
        extra.setdefault(key, []).append(value)
    return UserInfo(user, tuple(groups), uid, tuple((key, tuple(values)) for key, values in extra.items()))
