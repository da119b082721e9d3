"""The metav1 Status body: Go's member order and omitempty."""

from __future__ import annotations

from kubesemantics.status import status_body


def test_a_failure_leaves_out_its_empty_members() -> None:
    body = status_body(413, "too large")
    assert list(body) == ["kind", "apiVersion", "metadata", "status", "message", "code"]
    assert body["status"] == "Failure"


def test_details_keep_their_place_before_the_code_even_when_empty() -> None:
    body = status_body(409, "taken", "Conflict", {})
    assert list(body) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"]


def test_a_success_carries_only_its_code() -> None:
    assert status_body(201, success=True) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201,
    }  # fmt: skip


def test_a_deletion_status_has_no_code() -> None:
    body = status_body(0, details={"name": "x"}, success=True)
    assert "code" not in body and body["details"] == {"name": "x"}
