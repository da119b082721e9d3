"""The reconcile a log line belongs to, carried in a context variable.

The controller sets `current` around every reconcile (controller name, object namespace and name, and a
fresh reconcile id); `ReconcileContextFilter`, installed on the process's log handlers, copies those fields
onto every record emitted inside the reconcile, from any module, so every line can be traced to one pass.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import NamedTuple


class ReconcileContext(NamedTuple):
    controller: str
    namespace: str
    name: str
    reconcile_id: str


current: ContextVar[ReconcileContext | None] = ContextVar("reconcile", default=None)

# The record attributes a formatter can rely on (empty outside a reconcile), with controller-runtime's keys.
FIELDS = ("controller", "namespace", "name", "reconcileID")


class ReconcileContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        context = current.get()
        values = (
            (context.controller, context.namespace, context.name, context.reconcile_id)
            if context
            else ("",) * 4
        )
        for field, value in zip(FIELDS, values, strict=True):
            setattr(record, field, value)
        return True
