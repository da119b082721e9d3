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

# controller-runtime's log keys, and the record attributes that carry them (empty outside a reconcile);
# prefixed because LogRecord already has a `name` (the logger's).
FIELDS = {
    "controller": "reconcile_controller",
    "namespace": "reconcile_namespace",
    "name": "reconcile_name",
    "reconcileID": "reconcile_id",
}


class ReconcileContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        context = current.get()
        values = (
            (context.controller, context.namespace, context.name, context.reconcile_id)
            if context
            else ("",) * 4
        )
        for attribute, value in zip(FIELDS.values(), values, strict=True):
            setattr(record, attribute, value)
        return True
