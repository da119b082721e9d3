"""The audit log: `audit.k8s.io/v1` Events, one JSON line per request, as kube-apiserver's log backend writes
them (`--audit-log-path`, `--audit-policy-file`).

The policy is kube-apiserver's: the first rule that matches a request gives its level, `None`, `Metadata`
(who did what to which object, and the answer's code), `Request` (and the body sent) or `RequestResponse`
(and the body answered); a request that no rule matches is not logged. A rule matches on `users`,
`userGroups`, `verbs`, `namespaces` ("" for cluster-scoped objects), `resources` (`group`, `resources`
with `*`, `*/sub` and `res/*` wildcards, `resourceNames`) and `nonResourceURLs` (exact, or a prefix
ending in `*`); an empty or missing list matches everything. `omitStages` (the policy's and the rule's)
drop stages.

One difference: a request is logged once, as its answer is sent (`ResponseComplete`; `ResponseStarted` for
a watch or another stream), never at `RequestReceived`; so one client's requests are logged in the order it
sent them. The user is the one the request acts as (after impersonation).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import yaml

from kubesemantics import times
from localkube.server import protobuf
from localkube.server.bodies import PROTOBUF
from localkube.server.errors import ApiError, ServingError
from localkube.server.rbac import UserInfo
from localkube.server.routing import Request, Target

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
RESPONSE_COMPLETE, RESPONSE_STARTED = "ResponseComplete", "ResponseStarted"


class PolicyError(ServingError, ValueError):
    """The audit policy file is not a policy this server can apply (the message says where)."""


@dataclass(frozen=True)
class _GroupResources:
    group: str
    resources: tuple[str, ...]
    names: tuple[str, ...]

    def matches(self, target: Target) -> bool:
        if target.resource_type.group != self.group:
            return False
        if self.names and (target.name or "") not in self.names:
            return False
        if not self.resources:
            return True
        plural, sub = target.resource_type.plural, target.subresource
        full = f"{plural}/{sub}" if sub else plural
        return any(
            pattern in ("*", full) or (sub and pattern in (f"*/{sub}", f"{plural}/*"))
            for pattern in self.resources
        )


@dataclass(frozen=True)
class _Rule:
    level: str
    users: tuple[str, ...]
    groups: tuple[str, ...]
    verbs: tuple[str, ...]
    namespaces: tuple[str, ...]
    resources: tuple[_GroupResources, ...]
    urls: tuple[str, ...]
    omit: frozenset[str]

    def matches(self, user: UserInfo | None, verb: str, target: Target | None, path: str) -> bool:
        name = user.name if user is not None else "system:anonymous"
        groups = user.groups if user is not None else ("system:unauthenticated",)
        if self.users and name not in self.users:
            return False
        if self.groups and not set(self.groups) & set(groups):
            return False
        if self.verbs and verb not in self.verbs:
            return False
        if target is None:
            # A non-resource request matches only rules that name no resource scope.
            if self.resources or self.namespaces:
                return False
            return not self.urls or any(
                path == url or (url.endswith("*") and path.startswith(url[:-1])) for url in self.urls
            )
        if self.urls:
            return False
        if self.namespaces and (target.namespace or "") not in self.namespaces:
            return False
        return not self.resources or any(r.matches(target) for r in self.resources)


def _strings(rule: Mapping[str, Any], field: str, where: str) -> tuple[str, ...]:
    value = rule.get(field) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"{where}.{field}: must be a list of strings")
    return tuple(value)


def _stages(value: Any, where: str) -> frozenset[str]:
    stages = value or []
    if not isinstance(stages, list) or any(stage not in STAGES for stage in stages):
        raise PolicyError(f"{where}: must be a list of stages, each one of {', '.join(STAGES)}")
    return frozenset(stages)


def load_policy(text: str) -> list[_Rule]:
    """The rules of an `audit.k8s.io/v1` Policy document."""
    try:
        policy = yaml.safe_load(text)
    except yaml.YAMLError as bad:
        raise PolicyError(f"not YAML: {bad}") from None
    if not isinstance(policy, dict) or policy.get("kind") != "Policy":
        raise PolicyError("kind: must be Policy")
    if policy.get("apiVersion") != "audit.k8s.io/v1":
        raise PolicyError("apiVersion: must be audit.k8s.io/v1")
    omitted = _stages(policy.get("omitStages"), "omitStages")
    rules = policy.get("rules")
    if not isinstance(rules, list) or not rules:
        raise PolicyError("rules: a policy needs at least one rule")
    parsed = []
    for index, rule in enumerate(rules):
        where = f"rules[{index}]"
        if not isinstance(rule, dict):
            raise PolicyError(f"{where}: must be an object")
        if rule.get("level") not in LEVELS:
            raise PolicyError(f"{where}.level: must be one of {', '.join(LEVELS)}")
        scopes = []
        for n, scope in enumerate(rule.get("resources") or []):
            if not isinstance(scope, dict):
                raise PolicyError(f"{where}.resources[{n}]: must be an object")
            scopes.append(
                _GroupResources(
                    str(scope.get("group") or ""),
                    _strings(scope, "resources", f"{where}.resources[{n}]"),
                    _strings(scope, "resourceNames", f"{where}.resources[{n}]"),
                )
            )
        urls = _strings(rule, "nonResourceURLs", where)
        if urls and (scopes or rule.get("namespaces")):
            raise PolicyError(f"{where}: nonResourceURLs cannot be combined with resources or namespaces")
        parsed.append(
            _Rule(
                rule["level"],
                _strings(rule, "users", where),
                _strings(rule, "userGroups", where),
                _strings(rule, "verbs", where),
                _strings(rule, "namespaces", where),
                tuple(scopes),
                urls,
                omitted | _stages(rule.get("omitStages"), f"{where}.omitStages"),
            )
        )
    return parsed


def _json_or_none(body: bytes) -> Any:
    try:
        return orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return None


def _request_object(request: Request) -> Any:
    """The body sent, as JSON whatever its encoding: kube-apiserver logs the decoded object, and client-go
    sends the built-in kinds' creates and updates as protobuf."""
    if request.headers.get("content-type", "").startswith(PROTOBUF):
        try:
            return protobuf.decode(request.body)
        except ApiError:  # refused for the same reason, and answered so: the log has its code
            return None
    return _json_or_none(request.body)


class AuditLog:
    """Writes the Events the policy asks for to `path`, one unbuffered line each, so that what a crash
    leaves is whole lines."""

    def __init__(self, path: Path, rules: Sequence[_Rule]) -> None:
        self._rules = rules
        self._file: BinaryIO = path.open("ab", buffering=0)

    @classmethod
    def from_files(cls, log_path: Path, policy_path: Path) -> AuditLog:
        try:
            text = policy_path.read_text()
        except OSError as missing:
            raise PolicyError(f"cannot read {policy_path}: {missing.strerror}") from None
        return cls(log_path, load_policy(text))

    def record(
        self,
        request: Request,
        *,
        uri: str,
        source: str,
        received: datetime.datetime,
        status: int,
        answer: bytes | None,
        stage: str = RESPONSE_COMPLETE,
    ) -> None:
        """Logs a request (sent to `uri`, path and query as received, from address `source`) that was answered
        `status` (with body `answer`; None for a stream)."""
        target = request.target
        verb = request.verb or request.method.lower()
        rule = next((r for r in self._rules if r.matches(request.user, verb, target, request.path)), None)
        if rule is None or rule.level == "None" or stage in rule.omit:
            return
        event: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": rule.level,
            "auditID": str(uuid.uuid4()),
            "stage": stage,
            "requestURI": uri,
            "verb": verb,
            "user": _user(request.user),
            "sourceIPs": [source],
            "userAgent": request.headers.get("user-agent", ""),
        }
        if target is not None:
            resource_type = target.resource_type
            ref = {"resource": resource_type.plural, "namespace": target.namespace, "name": target.name}
            ref |= {"apiGroup": resource_type.group, "apiVersion": resource_type.version}
            ref["subresource"] = target.subresource
            event["objectRef"] = {key: value for key, value in ref.items() if value}
        event["responseStatus"] = {"metadata": {}, "code": status}
        if rule.level in ("Request", "RequestResponse") and request.body:
            event["requestObject"] = _request_object(request)
        if rule.level == "RequestResponse" and answer:
            event["responseObject"] = _json_or_none(answer)
        event["requestReceivedTimestamp"] = times.format_micro_time(received)
        event["stageTimestamp"] = times.format_micro_time(datetime.datetime.now(datetime.UTC))
        self._file.write(orjson.dumps(event) + b"\n")

    def close(self) -> None:
        self._file.close()


def _user(user: UserInfo | None) -> dict[str, Any]:
    if user is None:
        return {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
    found: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        found["uid"] = user.uid
    return found
