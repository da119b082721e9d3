"""HorizontalPodAutoscalers through the real kubectl and over HTTP: autoscaling/v1 and autoscaling/v2 serve the
same objects, as kube-apiserver does (stored in v2, defaulted as v2 defaults, v1 a converted view whose
missing fields travel in the `autoscaling.alpha.kubernetes.io/*` annotations), with discovery, the status
subresource and kubectl's Table columns."""

from __future__ import annotations

import json

import httpx
import yaml

from conformance.support import PROTOBUF, Kubectl, envelope, f

V1 = "/apis/autoscaling/v1/namespaces/{}/horizontalpodautoscalers"
V2 = "/apis/autoscaling/v2/namespaces/{}/horizontalpodautoscalers"


def _deployment(kubectl: Kubectl, namespace: str) -> None:
    kubectl("create", "deployment", "web", "--image=nginx", "-n", namespace)


def test_kubectl_autoscale_creates_one_listed_and_read_in_v2(kubectl: Kubectl, namespace: str) -> None:
    _deployment(kubectl, namespace)
    # kubectl 1.32 posts an autoscaling/v1 object as protobuf.
    created = kubectl("autoscale", "deployment", "web", "--max=5", "--cpu-percent=70", "-n", namespace)
    assert created.stdout.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    listing = kubectl("get", "hpa", "-n", namespace).stdout.splitlines()
    assert listing[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert listing[1].split()[:7] == ["web", "Deployment/web", "cpu:", "<unknown>/70%", "1", "5", "0"]
    v2 = yaml.safe_load(kubectl("get", "hpa.v2.autoscaling", "web", "-o", "yaml", "-n", namespace).stdout)
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
            }
        ],
    }
    assert v2["status"] == {"currentMetrics": None, "desiredReplicas": 0}
    assert "annotations" not in v2["metadata"]
    v1 = yaml.safe_load(
        kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "yaml", "-n", namespace).stdout
    )
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 70
    assert v1["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    described = kubectl("get", "hpa", "web", "-n", namespace, "-o", "jsonpath={.kind}").stdout
    assert described == "HorizontalPodAutoscaler"


def test_v2_only_fields_round_trip_through_v1(kubectl: Kubectl, namespace: str) -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "mem"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 4,
            "metrics": [
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
        },
    }  # fmt: skip
    kubectl("apply", "-f", "-", "-n", namespace, input=json.dumps(hpa))
    v2 = json.loads(kubectl("get", "hpa.v2.autoscaling", "mem", "-o", "json", "-n", namespace).stdout)
    # A behavior given in part is filled with the defaults of each direction.
    assert v2["spec"]["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }
    v1_text = kubectl(
        "get", "horizontalpodautoscalers.v1.autoscaling", "mem", "-o", "json", "-n", namespace
    ).stdout
    v1 = json.loads(v1_text)
    annotations = v1["metadata"]["annotations"]
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60
    assert annotations["autoscaling.alpha.kubernetes.io/metrics"] == (
        '[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}}]'
    )
    assert annotations["autoscaling.alpha.kubernetes.io/behavior"] == (
        '{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":'
        '[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}]},'
        '"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max","Policies":'
        '[{"Type":"Percent","Value":100,"PeriodSeconds":15}]}}'
    )
    # Written back through v1, the annotations restore what v1 cannot hold; v2 never shows them.
    v1["spec"]["maxReplicas"] = 6
    kubectl("replace", "-f", "-", "-n", namespace, input=json.dumps(v1))
    again = json.loads(kubectl("get", "hpa.v2.autoscaling", "mem", "-o", "json", "-n", namespace).stdout)
    assert again["spec"] == {**v2["spec"], "maxReplicas": 6}
    kept = again["metadata"].get("annotations") or {}
    assert not [key for key in kept if key.startswith("autoscaling.alpha.kubernetes.io/")]
    listing = kubectl("get", "hpa", "mem", "-n", namespace, "--no-headers").stdout.split()
    assert listing[:6] == ["mem", "Deployment/web", "memory:", "<unknown>/100Mi,", "cpu:", "<unknown>/60%"]


def test_discovery_serves_both_versions_v2_preferred(api: httpx.Client) -> None:
    group = api.get("/apis/autoscaling").json()
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    for version in ("v1", "v2"):
        resources = api.get(f"/apis/autoscaling/{version}").json()["resources"]
        names = {r["name"]: r for r in resources}
        assert names["horizontalpodautoscalers"]["shortNames"] == ["hpa"]
        assert names["horizontalpodautoscalers"]["categories"] == ["all"]
        assert names["horizontalpodautoscalers/status"]["kind"] == "HorizontalPodAutoscaler"


def test_status_written_through_v1_reads_as_v2_current_metrics(api: httpx.Client, namespace: str) -> None:
    body = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3},
    }
    created = api.post(V1.format(namespace), json=body)
    assert created.status_code == 201, created.text
    # No target given: conversion makes v1's implicit 80% CPU target explicit.
    assert created.json()["spec"] == {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 3,
        "targetCPUUtilizationPercentage": 80,
    }
    status = {
        **created.json(),
        "status": {"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 91},
    }
    written = api.put(f"{V1.format(namespace)}/web/status", json=status)
    assert written.status_code == 200, written.text
    v2 = api.get(f"{V2.format(namespace)}/web").json()
    assert v2["status"] == {
        "currentReplicas": 2,
        "desiredReplicas": 3,
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 91}}}
        ],
    }
    v1 = api.get(f"{V1.format(namespace)}/web").json()
    assert v1["status"]["currentCPUUtilizationPercentage"] == 91
    assert json.loads(v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/current-metrics"]) == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "currentAverageUtilization": 91, "currentAverageValue": "0"},
        }
    ]
    # The status endpoint leaves the spec alone.
    assert v2["spec"]["maxReplicas"] == 3
    listed = api.get(V1.format(namespace)).json()
    assert listed["kind"] == "HorizontalPodAutoscalerList"
    assert [item["spec"]["targetCPUUtilizationPercentage"] for item in listed["items"]] == [80]
    assert api.delete(f"{V2.format(namespace)}/web").status_code == 200
    assert api.get(f"{V1.format(namespace)}/web").status_code == 404


def test_an_invalid_autoscaler_is_refused_in_the_servers_words(api: httpx.Client, namespace: str) -> None:
    body = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bad"},
        "spec": {"scaleTargetRef": {"kind": "Deployment"}, "minReplicas": 3, "maxReplicas": 2},
    }
    refused = api.post(V2.format(namespace), json=body)
    assert refused.status_code == 422
    assert refused.json()["message"] == (
        'HorizontalPodAutoscaler.autoscaling "bad" is invalid: [spec.maxReplicas: Invalid value: 2: must be '
        "greater than or equal to `minReplicas`, spec.scaleTargetRef.name: Required value]"
    )


def test_a_v2_autoscaler_as_client_go_encodes_it(api: httpx.Client, namespace: str) -> None:
    reference = f(1, "Deployment") + f(2, "web") + f(3, "apps/v1")  # CrossVersionObjectReference
    target = f(1, "AverageValue") + f(3, f(1, "100Mi"))  # MetricTarget: type, averageValue (Quantity)
    metric = f(1, "Resource") + f(4, f(1, "memory") + f(2, target))  # MetricSpec.resource
    spec = f(1, reference) + f(2, 2) + f(3, 7) + f(4, metric)  # scaleTargetRef, min, max, metrics
    status = f(4, 0)  # desiredReplicas, as Go writes every non-pointer field
    body = envelope("autoscaling/v2", "HorizontalPodAutoscaler", f(1, f(1, "pb")) + f(2, spec) + f(3, status))
    headers = {"Content-Type": PROTOBUF, "Accept": f"{PROTOBUF},application/json"}
    created = api.post(V2.format(namespace), content=body, headers=headers)
    assert created.status_code == 201, created.text
    assert created.json()["spec"] == {
        "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
        "minReplicas": 2,
        "maxReplicas": 7,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}},
            }
        ],
    }
