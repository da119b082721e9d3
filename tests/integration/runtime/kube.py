"""Helpers for the runtime's integration tests: a client for a localkube, namespaces, waiting."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from kuberay.runtime.client import Client, load_config
from kuberay.runtime.resources import NAMESPACE


def client_for(localkube: Any, **kwargs: Any) -> Client:
    return Client.from_config(load_config(str(localkube.kubeconfig)), **kwargs)


async def new_namespace(client: Client) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    await client.create(NAMESPACE, {"metadata": {"name": name}})
    return name


async def eventually(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Waits until `condition()` holds; fails the test after `timeout` seconds (a bound, not a measurement)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.02)
