"""The differential tier's machinery: run one case (a sequence of HTTP requests and kubectl commands) against
a server, normalise each response, and compare two runs pair by pair.

A case runs in its own namespace (`{ns}` in paths, bodies and arguments), created on each server before its
first step. A step may use what an earlier step returned: `{sN:dotted.path}` is the value at that path in step
N's JSON body (`{s0:metadata.resourceVersion}`, `{s2:items.0.metadata.name}`, `{s1:status.token}`), so
resourceVersions, continue tokens and tokens are each server's own.

Normalisation removes what legitimately differs between two servers holding the same objects: uids,
resourceVersions, timestamps (managedFields' `time` too), continue tokens' bytes (their presence stays),
generated-name suffixes, resourceVersion numbers inside messages, and the order of a custom group's resources
in discovery (kube-apiserver appends them as its CRD informer's map hands them out, so the order changes from
run to run). Everything else is compared: the
status code, the body (a Status object's reason, message, details and code included) and the `Warning`
headers; for kubectl, the exit code, stdout and stderr.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase as fnmatch
from pathlib import Path
from typing import Any

import httpx
import yaml

from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

JSON = Any
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_REF = re.compile(r"\{s(\d+):([^}]*)\}")
# Numbers that are resourceVersions inside messages: "too old resource version: 1 (3456)".
_MESSAGE_NUMBERS = [
    (re.compile(r"too old resource version: (\d+) \((\d+)\)"), "too old resource version: <rv> (<rv>)"),
    (re.compile(r'resourceVersion[": ]+\\?"?(\d+)'), "resourceVersion <rv>"),
]
_VOLATILE_KEYS = {"uid": "<uid>", "resourceVersion": "<rv>", "creationTimestamp": "<time>", "time": "<time>",
                  "deletionTimestamp": "<time>", "lastTransitionTime": "<time>", "continue": "<continue>"}  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One request. `http` is "METHOD path" (path may carry a query); `kubectl` is its argument list.
    `body` is JSON-shaped, or a str sent as is with `content_type`. `token` is a bearer token (after
    substitution) to send instead of the admin's; `watch` reads the stream to its end (the server closes it at
    the request's timeoutSeconds) and compares its events."""

    http: str = ""
    kubectl: Sequence[str] = ()
    body: JSON = None
    content_type: str = "application/json"
    stdin: str | None = None
    token: str = ""
    watch: bool = False


@dataclass(frozen=True)
class Case:
    name: str
    steps: Sequence[Step]
    # Steps whose response is only setup (for example a TokenRequest: the token is random): run, not compared.
    setup: frozenset[int] = frozenset()


@dataclass
class Exchange:
    """A step's normalised outcome."""

    status: int
    body: JSON
    warnings: list[str] = field(default_factory=list)
    raw: JSON = None


@dataclass
class Tally:
    """The run's count, kept here (not in conftest.py, which pytest imports under a name of its own)."""

    pairs: int = 0
    known: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


TALLY = Tally()


def substitute(value: JSON, namespace: str, earlier: Sequence[Exchange]) -> JSON:
    if isinstance(value, str):
        value = value.replace("{ns}", namespace)
        return _REF.sub(lambda m: str(lookup(earlier[int(m.group(1))].raw, m.group(2))), value)
    if isinstance(value, list):
        return [substitute(item, namespace, earlier) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, namespace, earlier) for key, item in value.items()}
    return value


def lookup(value: JSON, path: str) -> JSON:
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else (value or {}).get(part, "")
    return value


def normalise(value: JSON, key: str = "") -> JSON:
    if key in ("clusterIP", "clusterIPs") and value not in ("None", ["None"]):
        return "<allocated>"  # each server allocates from its own free addresses
    if isinstance(value, dict) and _served_by_crds(value):
        value = {**value, "resources": sorted(value.get("resources") or [], key=lambda r: r.get("name", ""))}
    if isinstance(value, dict):
        return {k: normalise(v, k) for k, v in sorted(value.items()) if k != "selfLink"}
    if isinstance(value, list) and key == "managedFields":
        # Both servers sort the entries by operation, then time (to the second), then manager. The times
        # are erased above, and the two servers write them in different seconds, so whether two entries
        # shared a second (and sort by manager) is the moment's, not the server's: compare them in one order.
        return sorted((normalise(item) for item in value), key=_manager_identity)
    if isinstance(value, list):
        return [normalise(item) for item in value]
    if isinstance(value, str):
        if key in _VOLATILE_KEYS and value:
            return _VOLATILE_KEYS[key]
        if _TIME.match(value):
            return "<time>"
        value = _UID.sub("<uid>", value)
        for pattern, replacement in _MESSAGE_NUMBERS:
            value = pattern.sub(replacement, value)
    return value


def _manager_identity(entry: JSON) -> tuple[str, ...]:
    fields = entry if isinstance(entry, dict) else {}
    return tuple(str(fields.get(k, "")) for k in ("operation", "manager", "apiVersion", "subresource"))


def _served_by_crds(value: dict[str, JSON]) -> bool:
    """An APIResourceList of a group only CRDs serve: its group has a dot and is not Kubernetes' own
    (`*.k8s.io`); built-in groups keep their fixed order and are compared as listed."""
    if value.get("kind") != "APIResourceList" or not isinstance(value.get("groupVersion"), str):
        return False
    group = value["groupVersion"].rpartition("/")[0]
    return "." in group and not group.endswith(".k8s.io")


class Runner:
    """Runs cases against one server with its admin token, real kubectl and its kubeconfig."""

    def __init__(self, server: LocalKubeProcess, scratch: Path) -> None:
        self.server = server
        self.scratch = scratch
        self.client = server.client(timeout=60)

    def close(self) -> None:
        self.client.close()

    def run(self, case: Case, namespace: str) -> list[Exchange]:
        self.client.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
        # Both servers publish the root CA's ConfigMap in a new namespace in the background: a case starts
        # once it is there, so that lists and watches see the same objects on both.
        eventually(
            lambda: (
                self.client.get(f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt").status_code
                == 200
            ),
            30,
            f"kube-root-ca.crt in {namespace}",
            every=0.05,
        )
        exchanges: list[Exchange] = []
        for step in case.steps:
            step_sub = Step(
                http=substitute(step.http, namespace, exchanges),
                kubectl=substitute(list(step.kubectl), namespace, exchanges),
                body=substitute(step.body, namespace, exchanges),
                content_type=step.content_type,
                stdin=substitute(step.stdin, namespace, exchanges) if step.stdin else None,
                token=substitute(step.token, namespace, exchanges),
                watch=step.watch,
            )
            exchanges.append(self._kubectl(step_sub) if step_sub.kubectl else self._http(step_sub))
        self.client.delete(f"/api/v1/namespaces/{namespace}")
        return exchanges

    def _http(self, step: Step) -> Exchange:
        method, path = step.http.split(" ", 1)
        headers = {"Content-Type": step.content_type}
        if step.token:
            headers["Authorization"] = f"Bearer {step.token}"
        content = (
            step.body if isinstance(step.body, str) else None if step.body is None else json.dumps(step.body)
        )
        request = self.client.build_request(method, path, content=content, headers=headers)
        response = self.client.send(request, stream=step.watch)
        try:
            if step.watch:
                raw: JSON = []
                try:
                    raw.extend(json.loads(line) for line in response.iter_lines() if line.strip())
                except httpx.RemoteProtocolError as error:
                    # The end of the stream is part of the answer: a clean end of the chunked body or not.
                    raw.append({"stream": f"broken: {error}"})
            else:
                text = response.read().decode()
                try:
                    raw = json.loads(text) if text else None
                except json.JSONDecodeError:
                    raw = text
        finally:
            response.close()
        warnings = sorted(response.headers.get_list("warning"))
        return Exchange(response.status_code, normalise(raw), [normalise(w) for w in warnings], raw)

    def _kubectl(self, step: Step) -> Exchange:
        kubeconfig = self.server.kubeconfig
        if step.token:
            kubeconfig = self.scratch / "token.kubeconfig"
            config = yaml.safe_load(self.server.kubeconfig.read_text())
            config["users"][0]["user"] = {"token": step.token}
            kubeconfig.write_text(yaml.safe_dump(config))
        done = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), *step.kubectl],
            input=step.stdin, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        out: JSON = done.stdout
        if "-o" in step.kubectl and step.kubectl[list(step.kubectl).index("-o") + 1] == "json":
            with contextlib.suppress(json.JSONDecodeError):
                out = json.loads(done.stdout)
        body = {"stdout": normalise(out), "stderr": normalise(done.stderr)}
        return Exchange(done.returncode, body, [], out)


def differences(local: Exchange, real: Exchange) -> list[str]:
    """Where two normalised exchanges differ, as readable lines (`path: localkube ≠ kube-apiserver`)."""
    found: list[str] = []
    if local.status != real.status:
        found.append(f"status: {local.status} ≠ {real.status}")
    found += _diff(local.body, real.body, "body")
    if local.warnings != real.warnings:
        found.append(f"warnings: {local.warnings} ≠ {real.warnings}")
    return found


def _diff(a: JSON, b: JSON, path: str) -> Iterator[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a:
                yield f"{path}.{key}: (absent) ≠ {_short(b[key])}"
            elif key not in b:
                yield f"{path}.{key}: {_short(a[key])} ≠ (absent)"
            else:
                yield from _diff(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _diff(x, y, f"{path}.{index}")
    elif a != b:
        yield f"{path}: {_short(a)} ≠ {_short(b)}"


def _short(value: JSON) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 300 else text[:300] + "…"


def known(table: Mapping[str, str], case: str, index: int, line: str) -> str | None:
    """The reason a difference is expected, if the table lists it. A key is `CASE/STEP/LINE`, three shell
    globs (fnmatch) over the case's name, the step's index and the difference's line (`path: ours ≠ theirs`),
    so an entry can name one value (`*/*/*managedFields*..: (absent) ≠ {}`) rather than a whole subtree."""
    for key, reason in table.items():
        case_glob, step_glob, line_glob = key.split("/", 2)
        if fnmatch(case, case_glob) and fnmatch(str(index), step_glob) and fnmatch(line, line_glob):
            return reason
    return None
