"""Events localkube's own components record about the objects they act on, as core/v1 Events.

Each is what upstream's event recorder writes: named `<object>.<hex nanoseconds>` in the object's namespace,
`involvedObject` naming the object, `source.component` / `reportingComponent` the controller or the kubelet
(with its node as `source.host` and `reportingInstance`), `count` 1 and first/last timestamps. `kubectl
describe` and `kubectl events` show them (`SuccessfulCreate`, `ScalingReplicaSet`, `FailedMount`, ...).
`event_object` builds one; the in-process controllers create it through the REST layer, the kubelet writes it
to the store as it writes its pods' status.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from kubesemantics import times


def event_object(
    component: str,
    about: dict[str, Any],
    reason: str,
    message: str,
    now: datetime.datetime,
    kind: str = "Normal",
    host: str = "",
) -> dict[str, Any]:
    """The Event `component` (on node `host`, for a kubelet) records about the object `about`."""
    metadata = about["metadata"]
    moment = times.format_time(now)
    involved = {
        "apiVersion": about.get("apiVersion", ""),
        "kind": about.get("kind", ""),
        "namespace": metadata["namespace"],
        "name": metadata["name"],
        "uid": metadata.get("uid", ""),
    }
    if "resourceVersion" in metadata:
        involved["resourceVersion"] = metadata["resourceVersion"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{metadata['name']}.{time.time_ns():x}", "namespace": metadata["namespace"]},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "source": {"component": component, **({"host": host} if host else {})},
        "reportingComponent": component,
        "reportingInstance": host,
        "firstTimestamp": moment,
        "lastTimestamp": moment,
        "count": 1,
        "type": kind,
    }
