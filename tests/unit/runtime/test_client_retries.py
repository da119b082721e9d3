"""The API client's answers to a server that asks for a retry (429 or 5xx with `Retry-After`), as client-go
gives them, and how they show in the rest_client_* metrics.

localkube never asks for a retry, so a mock transport plays that server here; the metrics of ordinary
traffic are tested against a real operator and localkube (tests/integration/raycluster/test_operator.py).
"""

from __future__ import annotations

from collections.abc import Callable

import httpx2
import pytest
from prometheus_client import CollectorRegistry

from kuberay.runtime import errors
from kuberay.runtime.client import MAX_RETRIES, Client
from kuberay.runtime.metrics import RestClientMetrics
from kuberay.runtime.resources import CONFIG_MAP

HOST = "api.test:6443"


def retry_after(code: int) -> httpx2.Response:
    return httpx2.Response(code, headers={"Retry-After": "0"}, json={"kind": "Status", "code": code})


def client_answering(
    answers: Callable[[int], httpx2.Response],
) -> tuple[Client, CollectorRegistry, list[int]]:
    attempts: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        attempts.append(len(attempts))
        return answers(len(attempts) - 1)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler), base_url=f"https://{HOST}")
    registry = CollectorRegistry()
    return Client(http, metrics=RestClientMetrics(registry)), registry, attempts


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, {"host": HOST, **labels}) or 0.0


async def test_answers_asking_for_a_retry_are_retried_and_each_retry_is_counted() -> None:
    script = [retry_after(429), retry_after(503), httpx2.Response(200, json={"metadata": {"name": "cm"}})]
    client, registry, attempts = client_answering(lambda n: script[n])
    assert await client.get(CONFIG_MAP, "cm", "ns") == {"metadata": {"name": "cm"}}
    assert len(attempts) == 3
    for code in ("429", "503", "200"):
        assert sample(registry, "rest_client_requests_total", code=code, method="GET") == 1
    assert sample(registry, "rest_client_request_retries_total", code="429", verb="GET") == 0  # the first try
    assert sample(registry, "rest_client_request_retries_total", code="503", verb="GET") == 1
    assert sample(registry, "rest_client_request_retries_total", code="200", verb="GET") == 1
    assert sample(registry, "rest_client_rate_limiter_duration_seconds_count", verb="GET") == 3
    assert sample(registry, "rest_client_request_duration_seconds_count", verb="GET") == 1
    assert sample(registry, "rest_client_request_size_bytes_count", verb="GET") == 3


async def test_an_error_without_retry_after_is_not_retried() -> None:
    client, registry, attempts = client_answering(lambda n: httpx2.Response(500, json={"code": 500}))
    with pytest.raises(errors.KubeError):
        await client.get(CONFIG_MAP, "cm", "ns")
    assert len(attempts) == 1
    assert sample(registry, "rest_client_requests_total", code="500", method="GET") == 1
    assert sample(registry, "rest_client_response_size_bytes_count", verb="GET") == 1


async def test_retries_stop_after_client_gos_limit() -> None:
    client, registry, attempts = client_answering(lambda n: retry_after(429))
    with pytest.raises(errors.KubeError):
        await client.create(CONFIG_MAP, {"metadata": {"name": "cm", "namespace": "ns"}})
    assert len(attempts) == MAX_RETRIES + 1
    assert sample(registry, "rest_client_request_retries_total", code="429", verb="POST") == MAX_RETRIES
    assert sample(registry, "rest_client_request_size_bytes_sum", verb="POST") > 0
