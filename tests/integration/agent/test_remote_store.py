"""`RemoteStore`, the cache `localkube agent`'s kubelets read and write through, against the session's
localkube over HTTP: what it hands out (reads, events) cannot be changed in place, as every reader shares it,
and what a caller gives it (an update, a create) is copied on the way in, so a caller that changes its own
object afterwards changes neither the cache nor what is sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kuberay.runtime.resources import EVENT, POD
from kubesemantics.frozen import FrozenValueError
from localkube.node.apiclient import ApiClient, load_config
from localkube.node.remote import Kind, RemoteStore
from support.eventually import eventually

from ..runtime.kube import client_for, new_namespace

# No kubelet runs this node: the status of its pods is only what this test's RemoteStore writes.
NODE = "remote-store-node"


async def test_what_the_cache_hands_out_is_read_only_and_what_it_is_given_is_copied(localkube: Any) -> None:
    kube = client_for(localkube)
    api = ApiClient(load_config(str(localkube.kubeconfig)))
    remote = RemoteStore(api, [Kind("pods", f"spec.nodeName={NODE}")])
    try:
        namespace = await new_namespace(kube)
        container = {"name": "main", "image": "busybox", "command": ["sleep", "3600"]}
        pod = {"metadata": {"name": "p", "namespace": namespace}, "spec": {"nodeName": NODE, "containers": [container]}}  # fmt: skip
        await kube.create(POD, pod)
        await remote.start()
        key = f"/registry/core/pods/{namespace}/p"
        read = remote.get(key)
        assert read is not None
        with pytest.raises(FrozenValueError):
            read["spec"]["containers"][0]["image"] = "changed"
        with pytest.raises(FrozenValueError):
            read["metadata"]["labels"] = {"changed": "true"}
        (listed,), _ = remote.list(f"/registry/core/pods/{namespace}/")
        with pytest.raises(FrozenValueError):
            listed["spec"]["containers"].append(container)

        watch = remote.watch("/registry/core/pods/", remote.revision)
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        remote.update(key, {**read, "status": status}, int(read["metadata"]["resourceVersion"]))
        status["phase"] = "Failed"  # the caller's own object, changed after the write
        status["conditions"].append({"type": "Changed", "status": "True"})
        written = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        cached = remote.get(key)
        assert cached is not None and cached["status"] == written

        async def sent() -> bool:
            served = await kube.get(POD, "p", namespace)
            return bool(served["status"]["phase"] == "Running" and served["status"]["conditions"] == written["conditions"])  # fmt: skip

        await eventually(sent, 30, "the status as the update was given, on the server")
        event = await asyncio.wait_for(anext(aiter(watch)), 30)
        assert event.object["status"]["phase"] == "Running"
        with pytest.raises(FrozenValueError):
            event.object["status"]["phase"] = "changed"
        watch.close()

        reference = {"kind": "Pod", "namespace": namespace, "name": "p", "uid": read["metadata"]["uid"]}
        recorded = {"metadata": {"name": "e", "namespace": namespace}, "involvedObject": reference,
                    "reason": "Tested", "message": "as given", "type": "Normal"}  # fmt: skip
        remote.create(f"/registry/core/events/{namespace}/e", recorded)
        recorded["message"] = "changed after the create"

        async def created() -> str:
            try:
                return str((await kube.get(EVENT, "e", namespace))["message"])
            except Exception:  # not sent yet
                return ""

        assert await eventually(created, 30, "the Event the create queued") == "as given"
    finally:
        await remote.stop()
        await api.close()
        await kube.close()
