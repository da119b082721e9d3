"""What the services talk to: the Kubernetes API, and Ray dashboards (directly, or through the API
server's service proxy)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kuberay.controllers.dashboards import DashboardAccess
from kuberay.runtime.client import Client

Object = dict[str, Any]


@dataclass(frozen=True)
class Backend:
    kube: Client
    dashboards: DashboardAccess


Handler = Callable[[Backend, Object], Awaitable[Object]]
