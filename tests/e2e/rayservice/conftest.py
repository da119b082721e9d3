"""The RayService tests' fixture: a user's RayServices, each in a namespace of its own, deleted at the end."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from e2e.rayservice.users import UsersService
from support.local_instance import LocalInstance


@pytest.fixture
async def user_service(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[UsersService]]]:
    """Makes a namespace on `local` and applies a RayService there; deletes the RayServices at the end (their
    Ray clusters' processes go with them) and closes the clients."""
    made: list[UsersService] = []

    async def make(local: LocalInstance, namespace: str, obj: dict[str, Any]) -> UsersService:
        local.namespace(namespace)
        service = UsersService(local, namespace, tmp_path, obj)
        made.append(service)
        await service.apply()
        return service

    yield make
    for service in made:
        service.local.kubectl("delete", "rayservice", service.name, "-n", service.namespace, "--wait=false")
        await service.http.aclose()
