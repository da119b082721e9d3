import json
from typing import Any

import pytest

from kuberay.api.features import FeatureGates
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService
from kuberay.api.validation import validate_rayjob, validate_rayservice
from kuberay.operator import webhooks
from kuberay.runtime.serving import HttpRequest

LONG = "this-name-is-tooooooooooooooooooooooooooooooooooooooooooo-long-and-should-be-invalid"


def review(operation: str, obj: dict[str, Any] | None, webhook: webhooks.Webhook = webhooks.RAYCLUSTER) -> tuple[int, dict[str, Any]]:  # fmt: skip
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u-1", "operation": operation, "object": obj}}  # fmt: skip
    status, content_type, reply = webhook.review(HttpRequest("POST", webhook.path, {}, json.dumps(body).encode()))  # fmt: skip
    return status, json.loads(reply) if content_type == "application/json" else {}


def cluster(name: str, *groups: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"workerGroupSpecs": [{"groupName": g} for g in groups]}}


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name}, "spec": {"entrypoint": "python -V", **spec}}  # fmt: skip


def service(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"annotations": annotations} if annotations else {})}
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}}  # fmt: skip
    return {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": meta, "spec": {"rayClusterConfig": {"headGroupSpec": head}}}  # fmt: skip


def test_upstreams_three_webhooks() -> None:
    assert [(w.kind, w.name, w.path) for w in webhooks.WEBHOOKS] == [
        ("RayCluster", "vraycluster.kb.io", "/validate-ray-io-v1-raycluster"),
        ("RayJob", "vrayjob.kb.io", "/validate-ray-io-v1-rayjob"),
        ("RayService", "vrayservice.kb.io", "/validate-ray-io-v1-rayservice"),
    ]


def test_a_valid_cluster_is_allowed_with_the_request_uid() -> None:
    status, body = review("CREATE", cluster("fine", "a", "b"))
    assert status == 200
    assert body["kind"] == "AdmissionReview"
    assert body["response"] == {"uid": "u-1", "allowed": True}


def test_refusals_carry_upstreams_invalid_status() -> None:
    _, body = review("UPDATE", cluster("x.y", "a", "a"))
    response = body["response"]
    assert response["allowed"] is False
    status = response["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"].startswith(
        'RayCluster.ray.io "x.y" is invalid: [metadata.name: Invalid value: "x.y": '
    )
    assert status["message"].endswith(
        'spec.workerGroupSpecs[1]: Invalid value: {"groupName":"a"}: worker group names must be unique]'
    )
    assert [c["field"] for c in status["details"]["causes"]] == ["metadata.name", "spec.workerGroupSpecs[1]"]


@pytest.mark.parametrize(
    ("webhook", "obj", "message"),
    [(webhooks.RAYJOB, job("a.b"), 'RayJob.ray.io "a.b" is invalid: metadata.name: Invalid value: "a.b": The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: [a DNS-1035 label must consist of'),  # noqa: E501
     (webhooks.RAYJOB, job(LONG), f'RayJob.ray.io "{LONG}" is invalid: metadata.name: Invalid value: "{LONG}": The RayJob metadata is invalid: RayJob name should be no more than 47 characters'),  # noqa: E501
     (webhooks.RAYSERVICE, service("a.b"), 'RayService.ray.io "a.b" is invalid: metadata.name: Invalid value: "a.b": The RayService metadata is invalid: RayService name should be a valid DNS1035 label: ['),  # noqa: E501
     (webhooks.RAYSERVICE, service(LONG), f'RayService.ray.io "{LONG}" is invalid: metadata.name: Invalid value: "{LONG}": The RayService metadata is invalid: RayService name should be no more than 47 characters'),  # noqa: E501
     # Upstream reports the annotation's error at metadata.name too (the webhook wraps whatever
     # ValidateRayServiceMetadata returns), with the name as the value.
     (webhooks.RAYSERVICE, service("svc", {"ray.io/initializing-timeout": "soon"}), 'RayService.ray.io "svc" is invalid: metadata.name: Invalid value: "svc": The RayService metadata is invalid: RayService annotations is invalid: annotation ray.io/initializing-timeout has invalid format: soon.')],  # noqa: E501
)  # fmt: skip
def test_rayjob_and_rayservice_refusals_in_upstreams_words(webhook: webhooks.Webhook, obj: dict[str, Any], message: str) -> None:  # fmt: skip
    response = review("CREATE", obj, webhook)[1]["response"]
    assert response["allowed"] is False
    status = response["status"]
    assert status["message"].startswith(message)
    assert (status["code"], status["reason"], status["details"]["kind"]) == (422, "Invalid", webhook.kind)
    assert [c["field"] for c in status["details"]["causes"]] == ["metadata.name"]


def test_only_metadata_is_checked_at_admission_as_upstream() -> None:
    # Suspending without shutdownAfterJobFinishes is a spec rule: the RayJob reconciler's, not the webhook's.
    assert review("CREATE", job("fine", suspend=True), webhooks.RAYJOB)[1]["response"]["allowed"] is True
    assert review("UPDATE", service("fine"), webhooks.RAYSERVICE)[1]["response"]["allowed"] is True


@pytest.mark.parametrize(
    "obj", [job("a.b"), job(LONG), job("fine", suspend=True), job("fine"), service("a.b"), service(LONG),
            service("svc", {"ray.io/initializing-timeout": "0"}), service("fine")],
)  # fmt: skip
def test_the_webhook_never_refuses_what_the_reconciler_accepts(obj: dict[str, Any]) -> None:
    """What admission refuses, the reconciler refuses first, with the same message."""
    gates = FeatureGates.parse("")
    if obj["kind"] == "RayJob":
        webhook, reconciled = webhooks.RAYJOB, validate_rayjob(RayJob.parse(obj), gates)
    else:
        webhook, reconciled = webhooks.RAYSERVICE, validate_rayservice(RayService.parse(obj), gates)
    admitted = webhook.validate(obj)
    if admitted:
        assert [e.message for e in admitted] == [reconciled[0].message]


def test_deletes_are_allowed_and_garbage_is_a_bad_request() -> None:
    for webhook in webhooks.WEBHOOKS:
        assert review("DELETE", None, webhook)[1]["response"]["allowed"] is True
        status, _, _ = webhook.review(HttpRequest("POST", webhook.path, {}, b"{"))
        assert status == 400
