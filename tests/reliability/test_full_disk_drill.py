"""Drill: the disk holding localkube's data directory fills up.

localkube runs (as `localkube serve`, simulated node and all) on a data directory on a 16 MiB tmpfs that
also holds an 8 MiB ballast file. ConfigMaps of 200 kB are created until a write is refused. The refusal
must say what is wrong and what to do (kube-apiserver passes etcd's "mvcc: database space exceeded" on as
a 500), the server must keep serving reads of everything acknowledged, and once the ballast is deleted,
writes work again. (The ballast is large because SQLite's checkpoint, once it can write, first moves
what the write-ahead log holds into the database file.) After a kill -9 and a restart on the same directory, SQLite's integrity check passes
and every acknowledged write is there, the refused one is not.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from support.localkube_process import LocalKubeProcess

VALUE = "x" * 200_000
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs, unmounted afterwards (whatever ran on it must be stopped first)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], check=False).returncode != 0:
            subprocess.run(["umount", "--lazy", str(mount)], check=True)


def _configmap(name: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "data": {"v": VALUE}}


def _fill(client: httpx.Client) -> tuple[list[str], httpx.Response]:
    """Creates ConfigMaps until one is refused; the acknowledged names and the refusal."""
    acknowledged = []
    for i in range(200):
        response = client.post(CONFIGMAPS, json=_configmap(f"fill-{i}"))
        if response.status_code != 201:
            return acknowledged, response
        acknowledged.append(f"fill-{i}")
    pytest.fail("200 writes of 200 kB fitted on a 16 MiB disk")


@pytest.mark.slow
def test_a_full_disk_refuses_writes_clearly_keeps_reads_and_recovers(
    small_disk: Path, localkube_factory: Callable[..., LocalKubeProcess]
) -> None:
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * (8 << 20))
    server = localkube_factory(data_dir=small_disk / "localkube")
    try:
        with server.client(timeout=30) as client:
            acknowledged, refused = _fill(client)
            assert acknowledged
            assert refused.status_code == 500, refused.text
            message = refused.json()["message"]
            assert "database space exceeded" in message and "free space" in message, message
            for name in acknowledged:
                assert client.get(f"{CONFIGMAPS}/{name}").json()["data"]["v"] == VALUE
            listed = {c["metadata"]["name"] for c in client.get(CONFIGMAPS).json()["items"]}
            assert set(acknowledged) <= listed and f"fill-{len(acknowledged)}" not in listed

            ballast.unlink()
            client.delete(f"{CONFIGMAPS}/{acknowledged[0]}").raise_for_status()
            client.post(CONFIGMAPS, json=_configmap("after-space-returned")).raise_for_status()
        server.kill()
        with sqlite3.connect(small_disk / "localkube" / "state.db") as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        server.start()
        with server.client(timeout=30) as client:
            kept = {*acknowledged[1:], "after-space-returned"}
            stored = {
                c["metadata"]["name"]: c.get("data", {}).get("v")
                for c in client.get(CONFIGMAPS).json()["items"]
            }
            assert {name: stored.get(name) for name in kept} == dict.fromkeys(kept, VALUE)
            assert acknowledged[0] not in stored
            assert f"fill-{len(acknowledged)}" not in stored  # the refused write left nothing behind
    finally:
        server.stop()
