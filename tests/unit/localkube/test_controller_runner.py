"""The controller runner: one watch per prefix, every event to every controller observing it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from localkube.controllers.runner import Runner
from localkube.storage import Event, Store
from support.eventually import eventually


class _Recorder:
    def __init__(self, name: str, prefixes: tuple[str, ...]) -> None:
        self.name = name
        self.prefixes = prefixes
        self.seen: list[tuple[str, str, int]] = []
        self.reconciled: list[str] = []

    def observe(self, event: Event) -> Iterable[str]:
        self.seen.append((event.type, event.key, event.revision))
        return [event.key]

    def reconcile(self, key: str) -> float | None:
        self.reconciled.append(key)
        return None


async def test_controllers_sharing_a_prefix_share_its_watch_and_each_sees_every_event(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.create("/pods/a", {"metadata": {"name": "a"}})
    first, second = _Recorder("first", ("/pods/",)), _Recorder("second", ("/pods/", "/nodes/"))
    runner = Runner(store, [first, second])
    await runner.start()
    try:
        await eventually(lambda: len(second.seen) == 1, timeout=5, every=0.01)
        assert len(store._watches) == 2  # /pods/ and /nodes/, not one per controller and prefix
        store.update("/pods/a", {"metadata": {"name": "a"}, "spec": {}})
        store.create("/nodes/n", {"metadata": {"name": "n"}})
        store.delete("/pods/a")
        await eventually(lambda: len(second.seen) == 4 and len(first.seen) == 3, timeout=5, every=0.01)
        assert first.seen == [("ADDED", "/pods/a", 1), ("MODIFIED", "/pods/a", 2), ("DELETED", "/pods/a", 4)]
        assert sorted(second.seen, key=lambda e: e[2]) == [
            *first.seen[:2],
            ("ADDED", "/nodes/n", 3),
            first.seen[2],
        ]
        await eventually(lambda: "/nodes/n" in second.reconciled, timeout=5, every=0.01)
        assert "/nodes/n" not in first.reconciled
    finally:
        await runner.stop()
        store.close()
