"""kill -9 of localkube during a burst of concurrent writes: every acknowledged write survives."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx

from support.localkube_process import LocalKubeProcess

WRITERS = 6


def test_acknowledged_writes_survive_kill_9(localkube_factory: Callable[..., LocalKubeProcess]) -> None:
    server = localkube_factory()
    acknowledged: dict[str, int] = {}  # name -> acknowledged resourceVersion (creates, then updates)
    lock = threading.Lock()
    stop = threading.Event()

    def write(writer: int) -> None:
        with server.client(timeout=5) as api:
            for n in range(100_000):
                if stop.is_set():
                    return
                name = f"w{writer}-{n}"
                try:
                    created = api.post(
                        "/api/v1/namespaces/default/configmaps",
                        json={"metadata": {"name": name}, "data": {"n": "0"}},
                    )
                    if created.status_code != 201:
                        return
                    body = created.json()
                    body["data"]["n"] = "1"
                    updated = api.put(f"/api/v1/namespaces/default/configmaps/{name}", json=body)
                except httpx.TransportError:
                    return
                with lock:
                    acknowledged[name] = int(body["metadata"]["resourceVersion"])
                    if updated.status_code == 200:
                        acknowledged[name] = int(updated.json()["metadata"]["resourceVersion"])

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    server.kill()
    stop.set()
    for thread in threads:
        thread.join()
    assert len(acknowledged) > 50, "the burst acknowledged too few writes to mean anything"

    server.start()
    with server.client() as api:
        listing = api.get("/api/v1/namespaces/default/configmaps").json()
        stored = {
            item["metadata"]["name"]: int(item["metadata"]["resourceVersion"]) for item in listing["items"]
        }
        lost = {name for name, revision in acknowledged.items() if stored.get(name, -1) < revision}
        assert not lost, f"acknowledged writes lost after kill -9: {sorted(lost)[:10]}"
        newest = max(stored.values())
        after = api.post(
            "/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "after-restart"}}
        ).json()
        assert int(after["metadata"]["resourceVersion"]) > newest
        assert int(listing["metadata"]["resourceVersion"]) >= newest
