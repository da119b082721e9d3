import json
from typing import Any

from kuberay.operator import webhooks
from kuberay.runtime.serving import HttpRequest


def review(operation: str, obj: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u-1", "operation": operation, "object": obj}}  # fmt: skip
    status, content_type, reply = webhooks.review_raycluster(HttpRequest("POST", webhooks.RAYCLUSTER_PATH, {}, json.dumps(body).encode()))  # fmt: skip
    return status, json.loads(reply) if content_type == "application/json" else {}


def cluster(name: str, *groups: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"workerGroupSpecs": [{"groupName": g} for g in groups]}}


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


def test_deletes_are_allowed_and_garbage_is_a_bad_request() -> None:
    assert review("DELETE", None)[1]["response"]["allowed"] is True
    status, _, _ = webhooks.review_raycluster(HttpRequest("POST", webhooks.RAYCLUSTER_PATH, {}, b"{"))
    assert status == 400
