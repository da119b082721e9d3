"""What the API client says when no answer comes: a request that never left (nothing listens) is
`Unavailable`, one that was sent and then lost its connection is `OutcomeUnknown`, since the server may have
carried it out. A real TCP server that hangs up after reading the request plays the broken server."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from prometheus_client import CollectorRegistry

from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.metrics import RestClientMetrics
from kuberay.runtime.resources import CONFIG_MAP

CONFIG = {"metadata": {"name": "cm"}, "data": {"k": "v"}}


async def test_a_write_sent_without_an_answer_may_have_been_done_one_never_sent_was_not() -> None:
    requests: list[bytes] = []

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests.append(await reader.readuntil(b"\r\n\r\n"))
        writer.transport.abort()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    http = httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}")
    client = Client(http, metrics=RestClientMetrics(CollectorRegistry()))
    try:
        with pytest.raises(errors.OutcomeUnknown) as lost:
            await client.create(CONFIG_MAP, CONFIG, "ns")
        assert requests and requests[0].startswith(b"POST /api/v1/namespaces/ns/configmaps")
        assert lost.value.message.startswith("POST /api/v1/namespaces/ns/configmaps: ")
        assert lost.value.message.endswith("sent without an answer: it may have been carried out")
        server.close()
        await server.wait_closed()
        with pytest.raises(errors.Unavailable) as refused:
            await client.create(CONFIG_MAP, CONFIG, "ns")
        assert not isinstance(refused.value, errors.OutcomeUnknown)
        assert len(requests) == 1
    finally:
        await http.aclose()
