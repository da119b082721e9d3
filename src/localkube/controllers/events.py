"""Events the in-process controllers record about the objects they act on, as core/v1 Events.

Each is what upstream's event recorder writes: named `<object>.<hex nanoseconds>` in the object's namespace,
`involvedObject` naming the object, `source.component` / `reportingComponent` the controller, `count` 1 and
first/last timestamps. `kubectl describe` and `kubectl events` show them (`SuccessfulCreate`,
`ScalingReplicaSet`, ...).
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from kubesemantics import times
from localkube.controllers.api import ControllerApi


def record_event(
    api: ControllerApi,
    component: str,
    about: dict[str, Any],
    reason: str,
    message: str,
    now: datetime.datetime,
    kind: str = "Normal",
) -> None:
    metadata = about["metadata"]
    moment = times.format_time(now)
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{metadata['name']}.{time.time_ns():x}", "namespace": metadata["namespace"]},
        "involvedObject": {
            "apiVersion": about.get("apiVersion", ""),
            "kind": about.get("kind", ""),
            "namespace": metadata["namespace"],
            "name": metadata["name"],
            "uid": metadata.get("uid", ""),
            "resourceVersion": metadata.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": "",
        "firstTimestamp": moment,
        "lastTimestamp": moment,
        "count": 1,
        "type": kind,
    }
    api.create("", "events", metadata["namespace"], event)
