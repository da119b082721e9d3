"""The differential tier's case table: what is sent, in order, to both servers.

Most pairs come from one life cycle run over many kinds (`lifecycle`): create, read, conflict, the four
patch types, server-side apply with a conflict and a forced take-over, field validation in its three modes,
dry run, generateName, pagination, deletion and the errors around each. The rest are focused: watch
semantics, RBAC denials for a ServiceAccount with no rights, CRD defaulting, pruning and CEL messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from differential.harness import Case, Step

JSON = Any
TESTDATA = Path(__file__).parent / "testdata"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


@dataclass(frozen=True)
class Kind:
    name: str  # also kubectl's resource name
    collection: str  # with {ns}
    api_version: str
    kind: str
    content: JSON  # the object's fields besides apiVersion, kind and metadata
    change: JSON  # a merge patch that changes it
    builtin: bool = True


KINDS = [
    Kind("configmaps", "/api/v1/namespaces/{ns}/configmaps", "v1", "ConfigMap", {"data": {"a": "1"}},
         {"data": {"b": "2"}}),
    Kind("secrets", "/api/v1/namespaces/{ns}/secrets", "v1", "Secret", {"stringData": {"a": "1"}, "type": "Opaque"},
         {"data": {"b": "Mg=="}}),
    Kind("serviceaccounts", "/api/v1/namespaces/{ns}/serviceaccounts", "v1", "ServiceAccount",
         {"automountServiceAccountToken": False}, {"automountServiceAccountToken": True}),
    Kind("services", "/api/v1/namespaces/{ns}/services", "v1", "Service",
         {"spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}}, {"spec": {"selector": {"app": "y"}}}),
    Kind("limitranges", "/api/v1/namespaces/{ns}/limitranges", "v1", "LimitRange",
         {"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}},
         {"spec": {"limits": [{"type": "Container", "max": {"cpu": "3"}}]}}),
    Kind("roles.rbac.authorization.k8s.io", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
         "rbac.authorization.k8s.io/v1", "Role",
         {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
         {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    Kind("rolebindings.rbac.authorization.k8s.io", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
         "rbac.authorization.k8s.io/v1", "RoleBinding",
         {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
          "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "{ns}"}]},
         {"subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]}),
    Kind("leases.coordination.k8s.io", "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
         "coordination.k8s.io/v1", "Lease", {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}},
         {"spec": {"holderIdentity": "b"}}),
    Kind("networkpolicies.networking.k8s.io", "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
         "networking.k8s.io/v1", "NetworkPolicy", {"spec": {"podSelector": {}}},
         {"spec": {"podSelector": {"matchLabels": {"a": "b"}}}}),
    Kind("widgets.diff.kuberay.io", "/apis/diff.kuberay.io/v1/namespaces/{ns}/widgets", "diff.kuberay.io/v1",
         "Widget", {"spec": {"size": "small"}}, {"spec": {"color": "red"}}, builtin=False),
    Kind("rayclusters.ray.io", "/apis/ray.io/v1/namespaces/{ns}/rayclusters", "ray.io/v1", "RayCluster",
         {"spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
             {"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}}}}},
         {"spec": {"suspend": True}}, builtin=False),
]  # fmt: skip


def _obj(kind: Kind, name: str, **extra: JSON) -> JSON:
    metadata = {"name": name, "labels": {"tier": "diff"}, **extra.pop("metadata", {})}
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata, **kind.content, **extra}


def _yaml(value: JSON) -> str:
    # JSON is YAML: an apply body needs no YAML library.
    return json.dumps(value)


def lifecycle(kind: Kind) -> Case:
    c = kind.collection
    x = f"{c}/x"
    stale = _obj(kind, "x", metadata={"resourceVersion": "{s0:metadata.resourceVersion}"})
    steps = [
        Step(http=f"POST {c}", body=_obj(kind, "x")),  # 0
        Step(http=f"GET {x}"),
        Step(http=f"POST {c}", body=_obj(kind, "x")),
        Step(http=f"GET {c}/nope"),
        Step(http=f"PATCH {x}", body=kind.change, content_type=MERGE),
        Step(http=f"PUT {x}", body=stale),  # 5: a stale resourceVersion
        Step(http=f"PATCH {x}", body=[{"op": "add", "path": "/metadata/labels/j", "value": "p"}],
             content_type=JSONPATCH),
        Step(http=f"PATCH {x}", body={"metadata": {"labels": {"s": "m"}}}, content_type=STRATEGIC),
        Step(http=f"PATCH {x}", body=[{"op": "test", "path": "/metadata/labels/j", "value": "wrong"}],
             content_type=JSONPATCH),
        Step(http=f"PATCH {x}?fieldManager=alpha",
             body=_yaml(_obj(kind, "x", metadata={"labels": {"owner": "alpha"}})), content_type=APPLY),
        Step(http=f"PATCH {x}?fieldManager=beta",  # 10: conflicts with alpha's label
             body=_yaml(_obj(kind, "x", metadata={"labels": {"owner": "beta"}})), content_type=APPLY),
        Step(http=f"PATCH {x}?fieldManager=beta&force=true",
             body=_yaml(_obj(kind, "x", metadata={"labels": {"owner": "beta"}})), content_type=APPLY),
        Step(http=f"PATCH {x}", body=_yaml(_obj(kind, "x")), content_type=APPLY),  # no fieldManager
        Step(http=f"GET {x}"),
        Step(http=f"GET {c}?labelSelector=owner%3Dbeta"),
        Step(http=f"GET {c}?labelSelector=owner%3Dnobody"),
        Step(http=f"GET {c}?labelSelector=bad%20%3D%3D%3D"),
        Step(http=f"GET {c}?fieldSelector=metadata.name%3Dx"),
        Step(http=f"GET {c}?fieldSelector=spec.bogus%3Dx"),
        Step(http=f"POST {c}", body=_obj(kind, "Bad_Name")),
        Step(http=f"POST {c}", body={**_obj(kind, "y"), "kind": "Wrong"}),  # 20
        Step(http=f"POST {c}?fieldValidation=Strict", body={**_obj(kind, "y"), "bogus": 1}),
        Step(http=f"POST {c}?fieldValidation=Warn", body={**_obj(kind, "y"), "bogus": 1}),
        Step(http=f"POST {c}?fieldValidation=Ignore", body={**_obj(kind, "z"), "bogus": 1}),
        Step(http=f"POST {c}?fieldValidation=Bogus", body=_obj(kind, "w")),
        Step(http=f"POST {c}?fieldValidation=Strict",
             body=f'{{"apiVersion": "{kind.api_version}", "kind": "{kind.kind}", "metadata": {{"name": "d", "name": "d"}}}}'),
        Step(http=f"POST {c}", body='{"apiVersion": "v1", '),  # malformed
        Step(http=f"POST {c}?dryRun=All", body=_obj(kind, "dry")),
        Step(http=f"GET {c}/dry"),
        Step(http=f"POST {c}?dryRun=Bogus", body=_obj(kind, "dry")),
        Step(http=f"POST {c}", body=_obj(kind, "m", metadata={"namespace": "elsewhere"})),  # 30
        Step(http=f"PUT {x}", body=_obj(kind, "other")),
        Step(http=f"PATCH {c}/nope", body={"metadata": {"labels": {"a": "b"}}}, content_type=MERGE),
        Step(http=f"PATCH {x}", body="{not json", content_type=MERGE),
        Step(http=f"PATCH {x}", body={"a": 1}, content_type="text/plain"),
        Step(http=f"GET {c}?limit=1&labelSelector=tier%3Ddiff"),  # 35: not kube-root-ca.crt
        Step(http=f"GET {c}?limit=1&labelSelector=tier%3Ddiff&continue={{s35:metadata.continue}}"),
        Step(http=f"GET {c}?limit=1&continue=bogus"),
        Step(http=f"GET {c}?resourceVersion=0&resourceVersionMatch=Exact&labelSelector=tier%3Ddiff"),
        Step(http=f"GET {c}?resourceVersionMatch=NotOlderThan&labelSelector=tier%3Ddiff"),
        Step(http=f"DELETE {x}?dryRun=All"),  # 40
        Step(http=f"DELETE {x}", body={"kind": "DeleteOptions", "apiVersion": "v1",
                                       "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}),
        Step(http=f"DELETE {x}"),
        Step(http=f"GET {x}"),
        Step(http=f"DELETE {x}"),
        Step(http=f"DELETE {c}?labelSelector=tier%3Ddiff"),
        Step(http=f"GET {c}?labelSelector=tier%3Ddiff"),
        Step(kubectl=["get", kind.name, "nope", "-n", "{ns}"]),
        Step(kubectl=["apply", "--server-side", "-n", "{ns}", "-f", "-"], stdin=_yaml(_obj(kind, "k"))),
        Step(kubectl=["get", kind.name, "k", "-n", "{ns}", "-o", "name"]),
        Step(kubectl=["label", kind.name, "k", "-n", "{ns}", "color=blue"]),  # 50
        Step(kubectl=["delete", kind.name, "k", "-n", "{ns}"]),
    ]  # fmt: skip
    return Case(f"lifecycle-{kind.name.split('.')[0]}", steps)


def _widget(name: str, **spec: JSON) -> JSON:
    return {"apiVersion": "diff.kuberay.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


W = "/apis/diff.kuberay.io/v1/namespaces/{ns}/widgets"
# (name, spec) created in turn: defaulting, pruning and every schema check with its message.
WIDGET_BODIES: list[tuple[str, JSON]] = [
    ("defaults", {"size": "small"}),
    ("ports-default", {"size": "small", "ports": [{"name": "a"}, {"name": "b", "port": 8080}]}),
    ("settings-given", {"size": "small", "settings": {"verbose": True}}),
    ("pruned", {"size": "small", "unknownField": 1, "settings": {"level": 2, "junk": "x"}}),
    ("preserved", {"size": "small", "extra": {"anything": {"goes": [1, 2]}}}),
    ("no-size", {}),
    ("bad-enum", {"size": "huge"}),
    ("bad-type", {"size": "small", "replicas": "three"}),
    ("too-many", {"size": "small", "replicas": 11}),
    ("negative", {"size": "small", "replicas": -1}),
    ("bad-pattern", {"size": "small", "color": "Red1"}),
    ("too-long", {"size": "small", "color": "abcdefghij"}),
    ("max-items", {"size": "small", "ports": [{}, {}, {}, {}]}),
    ("cel-field-path", {"size": "small", "replicas": 1, "minReplicas": 3}),
    ("cel-message-expression", {"size": "small", "replicas": 2, "mode": "frozen"}),
    ("cel-both", {"size": "large", "replicas": 2, "minReplicas": 5, "mode": "frozen"}),
    ("many-errors", {"size": "tiny", "replicas": 20, "color": "X", "ports": "no"}),
    ("null-field", {"size": "small", "color": None}),
    ("frozen-ok", {"size": "medium", "replicas": 0, "mode": "frozen"}),
]


def crd_cases() -> list[Case]:
    creates = [Step(http=f"POST {W}", body=_widget(name, **spec)) for name, spec in WIDGET_BODIES]
    strict = [Step(http=f"POST {W}?fieldValidation=Strict", body=_widget(f"strict-{name}", **spec))
              for name, spec in WIDGET_BODIES[:5]]  # fmt: skip
    warn = [Step(http=f"POST {W}?fieldValidation=Warn", body=_widget(f"warn-{name}", **spec))
            for name, spec in WIDGET_BODIES[:5]]  # fmt: skip
    transitions = [
        Step(http=f"POST {W}", body=_widget("t", size="small", owner="ann")),  # 0
        Step(http=f"PATCH {W}/t", body={"spec": {"owner": "bob"}}, content_type=MERGE),
        Step(http=f"PATCH {W}/t", body={"spec": {"owner": "ann", "replicas": 3}}, content_type=MERGE),
        Step(http=f"PATCH {W}/t/status", body={"status": {"replicas": 3, "phase": "Up"}}, content_type=MERGE),
        Step(http=f"GET {W}/t/status"),
        Step(http=f"GET {W}/t/scale"),  # 5
        Step(http=f"PATCH {W}/t/scale", body={"spec": {"replicas": 5}}, content_type=MERGE),
        Step(http=f"PATCH {W}/t/scale", body={"spec": {"replicas": 50}}, content_type=MERGE),
        Step(http=f"PUT {W}/t/scale", body={"apiVersion": "autoscaling/v1", "kind": "Scale",
             "metadata": {"name": "t", "namespace": "{ns}"}, "spec": {"replicas": 4}}),
        Step(http=f"PATCH {W}/t", body={"status": {"phase": "Ignored"}, "spec": {"size": "large"}},
             content_type=MERGE),
        Step(http=f"PATCH {W}/t/status", body={"spec": {"size": "medium"}}, content_type=MERGE),  # 10
        Step(http=f"GET {W}/t"),
        Step(http=f"GET {W}/t", body=None),
        Step(http=f"PATCH {W}/t?fieldManager=alpha", body=_yaml(_widget("t", size="small", color="red")),
             content_type=APPLY),
        Step(http=f"PATCH {W}/t?fieldManager=beta", body=_yaml(_widget("t", size="large", color="blue")),
             content_type=APPLY),
        Step(http=f"PATCH {W}/t?fieldManager=beta&force=true", body=_yaml(_widget("t", size="large")),
             content_type=APPLY),  # 15
        Step(http=f"PATCH {W}/t?fieldManager=alpha", body=_yaml(_widget("t", size="small")),
             content_type=APPLY),
        Step(http=f"PATCH {W}/t?fieldManager=alpha&fieldValidation=Strict",
             body=_yaml(_widget("t", size="small", bogus=1)), content_type=APPLY),
        Step(http=f"GET {W}"),
        Step(kubectl=["get", "widgets", "-n", "{ns}"]),
        Step(kubectl=["get", "wd", "t", "-n", "{ns}", "-o", "json"]),  # 20
        Step(kubectl=["scale", "widget", "t", "-n", "{ns}", "--replicas=2"]),
        Step(kubectl=["apply", "-n", "{ns}", "-f", "-"], stdin=_yaml(_widget("u", size="huge"))),
        Step(kubectl=["apply", "-n", "{ns}", "-f", "-"], stdin=_yaml(_widget("v", size="small", bogus=1))),
        Step(kubectl=["create", "-n", "{ns}", "-f", "-", "--validate=strict"],
             stdin=_yaml(_widget("v2", size="small", bogus=1))),
    ]  # fmt: skip
    costly = yaml.safe_load((TESTDATA / "widgets-crd.yaml").read_text())
    costly["metadata"]["name"] = "gadgets.diff.kuberay.io"
    costly["spec"]["names"] = {
        "kind": "Gadget",
        "plural": "gadgets",
        "singular": "gadget",
        "listKind": "GadgetList",
    }
    spec_schema = costly["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    # Unbounded strings in a messageExpression: the real server estimates its CEL cost and refuses the CRD.
    spec_schema["properties"]["mode"].pop("maxLength")
    spec_schema["x-kubernetes-validations"][1]["messageExpression"] = (
        "'a ' + self.mode + ' widget, not ' + self.size"
    )
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    return [
        Case(
            "crd-cel-cost",
            [Step(http=f"POST {crds}", body=costly), Step(http=f"DELETE {crds}/gadgets.diff.kuberay.io")],
        ),
        Case("crd-schema", creates + [Step(http=f"GET {W}")]),
        Case("crd-field-validation", strict + warn),
        Case("crd-subresources-apply", transitions),
    ]


CM = "/api/v1/namespaces/{ns}/configmaps"


def _cm(name: str, **labels: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"k": name},
    }


def watch_cases() -> list[Case]:
    watch = f"{CM}?watch=1&timeoutSeconds=2"
    return [
        Case("watch-from-resource-version", [
            Step(http=f"POST {CM}", body=_cm("a", w="1")),
            Step(http=f"POST {CM}", body=_cm("b", w="1")),
            Step(http=f"PATCH {CM}/b", body={"data": {"k": "changed"}}, content_type=MERGE),
            Step(http=f"DELETE {CM}/a"),
            Step(http=f"{'GET'} {watch}&resourceVersion={{s0:metadata.resourceVersion}}", watch=True),
            Step(http=f"GET {watch}&resourceVersion={{s0:metadata.resourceVersion}}&labelSelector=w%3D1",
                 watch=True),
            Step(http=f"GET {watch}&resourceVersion={{s1:metadata.resourceVersion}}&fieldSelector=metadata.name%3Db",
                 watch=True),
        ]),
        Case("watch-initial-events", [
            Step(http=f"POST {CM}", body=_cm("a")),
            Step(http=f"POST {CM}", body=_cm("b")),
            Step(http=f"GET {watch}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                      "&allowWatchBookmarks=true", watch=True),
            Step(http=f"GET {watch}&sendInitialEvents=true", watch=True),
            Step(http=f"GET {watch}&sendInitialEvents=true&resourceVersionMatch=Exact&allowWatchBookmarks=true",
                 watch=True),
            Step(http=f"GET {watch}&resourceVersion=0", watch=True),
        ]),
        Case("watch-gone", [
            Step(http=f"GET {watch}&resourceVersion=1", watch=True),
            Step(http=f"GET {CM}?resourceVersion=1&resourceVersionMatch=Exact"),
            Step(http=f"GET {CM}?resourceVersion=abc"),
            Step(http=f"GET {watch}&resourceVersion=abc", watch=True),
        ]),
        Case("list-pagination", [
            *[Step(http=f"POST {CM}", body=_cm(f"p{i}", page="yes" if i % 2 else "no")) for i in range(5)],
            Step(http=f"GET {CM}?limit=2"),  # 5
            Step(http=f"GET {CM}?limit=2&continue={{s5:metadata.continue}}"),
            Step(http=f"GET {CM}?limit=2&continue={{s6:metadata.continue}}"),
            Step(http=f"GET {CM}?limit=2&labelSelector=page%3Dyes"),
            Step(http=f"GET {CM}?limit=2&labelSelector=page%3Dyes&continue={{s8:metadata.continue}}"),
            Step(http=f"GET {CM}?limit=0"),  # 10
            Step(http=f"GET {CM}?limit=-1"),
            Step(http=f"GET {CM}?limit=2&resourceVersion=0"),
            Step(http="GET /api/v1/configmaps?limit=2&labelSelector=page"),
            Step(http=f"GET {CM}?limit=2&resourceVersion={{s4:metadata.resourceVersion}}&resourceVersionMatch=Exact"),
        ]),
    ]  # fmt: skip


def rbac_cases() -> list[Case]:
    token = "{s1:status.token}"
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    sa = "/api/v1/namespaces/{ns}/serviceaccounts"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "read-cm"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "read-cm"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-cm"},
        "subjects": [{"kind": "ServiceAccount", "name": "nobody", "namespace": "{ns}"}],
    }
    escalate = {
        **role,
        "metadata": {"name": "escalate"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    }
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": "{ns}", "verb": "get", "resource": "configmaps"}},
    }
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"
    denied = [
        "GET {cm}",
        "GET {cm}/x",
        "POST {cm}",
        "DELETE {cm}/x",
        "GET /api/v1/namespaces/{ns}/pods",
        "GET /api/v1/namespaces",
        "GET /api/v1/nodes",
        "GET /apis/ray.io/v1/namespaces/{ns}/rayclusters",
        "GET /api/v1/namespaces/{ns}/secrets/s",
        "GET /apis/diff.kuberay.io/v1/widgets",
    ]
    steps = [
        Step(http=f"POST {sa}", body={"metadata": {"name": "nobody"}}),  # 0
        Step(http=f"POST {sa}/nobody/token", body=request),  # 1: setup
        *[Step(http=m.replace("{cm}", CM), body=_cm("x"), token=token) for m in denied],
        Step(http=f"POST {rbac}/roles", body=role),
        Step(http=f"POST {rbac}/rolebindings", body=binding),
        Step(http=f"POST {CM}", body=_cm("x")),
        *[Step(http=m.replace("{cm}", CM), body=_cm("x"), token=token) for m in denied[:4]],
        Step(http=f"POST {rbac}/roles", body=escalate, token=token),
        Step(http="POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review, token=token),
        Step(http="GET /api/v1/namespaces/{ns}/configmaps", token="not-a-token"),
        Step(kubectl=["get", "configmaps", "-n", "{ns}", "-o", "name"], token=token),
        Step(kubectl=["get", "secrets", "-n", "{ns}"], token=token),
        Step(kubectl=["auth", "can-i", "list", "configmaps", "-n", "{ns}"], token=token),
        Step(kubectl=["auth", "can-i", "delete", "configmaps", "-n", "{ns}"], token=token),
    ]  # fmt: skip
    return [Case("rbac-nobody", steps, setup=frozenset({1}))]


def _pod(name: str, **spec: JSON) -> JSON:
    spec = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def misc_cases() -> list[Case]:
    pods = "/api/v1/namespaces/{ns}/pods"
    return [
        Case("pod-validation", [
            Step(http=f"POST {pods}", body=_pod("p0", containers=[])),
            Step(http=f"POST {pods}", body=_pod("p1", containers=[{"name": "c"}])),
            Step(http=f"POST {pods}", body=_pod("p2", containers=[{"name": "C_", "image": "x"}])),
            Step(http=f"POST {pods}?fieldValidation=Strict",
                 body=_pod("p3", containers=[{"name": "c", "image": "x", "bogus": 1}])),
            Step(http=f"POST {pods}", body=_pod("p4", containers=[
                {"name": "c", "image": "x", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}}])),
            Step(http=f"POST {pods}", body=_pod("p5", containers=[
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "lots"}}}])),
            Step(http=f"POST {pods}", body=_pod("p6", restartPolicy="Sometimes")),
            Step(http=f"POST {pods}", body=_pod("p7", containers=[{"name": "c", "image": "x"}, {"name": "c", "image": "y"}])),
            Step(http=f"POST {pods}", body=_pod("p8", containers=[{"name": "c", "image": "x", "ports": [{"containerPort": 70000}]}])),
        ]),
        Case("namespaces", [
            Step(http="GET /api/v1/namespaces/{ns}"),
            Step(http="POST /api/v1/namespaces", body={"metadata": {"name": "{ns}"}}),
            Step(http="GET /api/v1/namespaces/does-not-exist-here"),
            Step(http="POST /api/v1/namespaces/does-not-exist-here/configmaps", body=_cm("x")),
            Step(http="POST /api/v1/namespaces", body={"metadata": {"name": "Not_Valid"}}),
            Step(http="GET /api/v1/namespaces/{ns}/bogusresources"),
            Step(http="GET /apis/bogus.example.com/v1/things"),
            Step(http="GET /api/v1/namespaces/{ns}/configmaps/x/status"),
            Step(http="GET /version"),
            Step(http="GET /apis/diff.kuberay.io/v1"),
            Step(http="GET /apis/ray.io/v1"),
        ]),
    ]  # fmt: skip


CASES: list[Case] = [*map(lifecycle, KINDS), *crd_cases(), *watch_cases(), *rbac_cases(), *misc_cases()]
