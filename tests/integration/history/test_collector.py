"""`kuberay-history-collector` as the sidecar runs it, on a Ray session directory laid out as Ray lays it out
(no Ray needed: the collector only reads files and takes HTTP posts): logs, Ray's rotated files and posted
events reach storage; SIGTERM flushes within the bound; a collector SIGKILLed mid-upload (caught with an
upload's temporary file present in storage) and started again loses nothing acknowledged and duplicates
nothing; S3 stopped mid-upload and started again loses nothing acknowledged."""

from __future__ import annotations

import json
import os
import posixpath
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kuberay.history import layout
from kuberay.history.backends import from_env
from kuberay.local.ports import free_port
from support.eventually import eventually
from support.history_processes import S3Proxy

COLLECTOR = str(Path(sys.executable).parent / "kuberay-history-collector")
SESSION = "session_2026-01-02_03-04-05_678901_42"
NODE = "ab" * 28
CLUSTER = layout.ClusterRef("team-a", "demo-raycluster-x1", "RayJob", "demo")


class Node:
    """A Ray node's /tmp/ray as Ray leaves it, and a collector process for it."""

    def __init__(self, root: Path, storage_env: dict[str, str] | None = None) -> None:
        self.storage_env = storage_env or {
            "STORAGE_BACKEND": "local",
            "STORAGE_LOCAL_DIR": str(root / "store"),
        }
        self.ray_root = root / "ray"
        self.logs = self.ray_root / SESSION / "logs"
        self.logs.mkdir(parents=True)
        (self.ray_root / "session_latest").symlink_to(SESSION)
        (self.logs / "raylet.out").write_text(f"[raylet] main.cc:711: Setting node ID node_id={NODE}\n")
        self.store = root / "store"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = root / "collector.log"

    def start(self) -> None:
        env = {
            **os.environ, "RAY_CLUSTER_NAME": CLUSTER.name, "RAY_CLUSTER_NAMESPACE": CLUSTER.namespace,
            "RAY_ROLE": "Worker", "OWNER_KIND": CLUSTER.owner_kind, "OWNER_NAME": CLUSTER.owner_name,
            "EVENTS_PORT": str(self.port), "RAY_TMP_ROOT": str(self.ray_root), "POD_IP": "127.0.0.1",
            # No dashboard here: the node id comes from the raylet's log.
            "FQ_RAY_IP": "127.0.0.1:1", **self.storage_env,
            "PUSH_INTERVAL": "0.2s", "RAY_COLLECTOR_FLUSH_TIMEOUT": "60s",
        }  # fmt: skip
        with self.log.open("ab") as log:
            self.process = subprocess.Popen([COLLECTOR], env=env, stdout=log, stderr=log)
        eventually(self._listening, 60, "the collector listening", every=0.1)

    def _listening(self) -> bool:
        try:
            return httpx.post(f"http://127.0.0.1:{self.port}/v1/events", content="x").status_code == 400
        except httpx.HTTPError:
            return False

    def stop(self, sig: int) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        return self.process.wait(90)

    def stored(self, rel: str) -> Path:
        return self.store / CLUSTER.logs_dir("", SESSION, NODE) / rel

    def stored_events(self) -> list[dict[str, object]]:
        base = self.store / CLUSTER.node_dir("", SESSION, NODE)
        lines = [line for p in sorted(base.rglob("*.jsonl")) for line in p.read_text().splitlines()]
        return [json.loads(line) for line in lines]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    node = Node(tmp_path)
    yield node
    if node.process is not None and node.process.poll() is None:
        node.stop(signal.SIGKILL)


def _post(node: Node, events: list[dict[str, object]]) -> bool:
    """True when the collector acknowledged the batch."""
    try:
        return (
            httpx.post(f"http://127.0.0.1:{node.port}/v1/events", json=events, timeout=10).status_code == 200
        )
    except httpx.HTTPError:
        return False


def test_logs_rotated_files_and_events_reach_storage_and_sigterm_flushes(node: Node) -> None:
    node.start()
    (node.logs / "worker-1.out").write_text("first\n")
    job_event = {
        "eventType": "TASK_DEFINITION_EVENT",
        "sessionName": SESSION,
        "taskDefinitionEvent": {"jobId": "AQAAAA=="},
    }
    node_event = {"eventType": "NODE_DEFINITION_EVENT", "sessionName": SESSION}
    assert _post(node, [job_event, node_event])
    eventually(lambda: node.stored("worker-1.out").is_file(), 30, "the log uploaded", every=0.1)
    # Ray rotates: the file becomes .1 and a new one starts; both are kept.
    (node.logs / "worker-1.out").rename(node.logs / "worker-1.out.1")
    (node.logs / "worker-1.out").write_text("second\n")
    (node.logs / "late.err").write_text("written just before the pod goes\n")
    assert node.stop(signal.SIGTERM) == 0
    assert node.stored("worker-1.out.1").read_text() == "first\n"
    assert node.stored("worker-1.out").read_text() == "second\n"
    assert node.stored("late.err").read_text() == "written just before the pod goes\n"
    base = node.store / CLUSTER.node_dir("", SESSION, NODE)
    (job_file,) = (base / "job_events" / "01000000").iterdir()
    assert json.loads(job_file.read_text()) == job_event
    (node_file,) = (base / "node_events").iterdir()
    assert node_file.name.startswith(f"{NODE}-") and json.loads(node_file.read_text()) == node_event


def test_a_collector_killed_mid_upload_loses_and_duplicates_nothing(node: Node) -> None:
    node.start()
    stop_writing = threading.Event()
    acknowledged: list[int] = []
    big = node.logs / "python-core-worker-big.log"

    def write() -> None:
        """Ray's side: a growing log (rotated now and then) and a stream of event batches."""
        sequence, rotation = 0, 0
        line = b"x" * 1000 + b"\n"
        while not stop_writing.is_set():
            with big.open("ab") as f:
                f.write(line * 4000)  # 4 MB a round: each put of the file takes a while
            if big.stat().st_size > 24_000_000:
                rotation += 1
                big.rename(big.with_name(f"{big.name}.{rotation}"))
            batch = [
                {"eventType": "TASK_LIFECYCLE_EVENT", "sessionName": SESSION, "seq": sequence + i}
                for i in range(50)
            ]
            if _post(node, batch):
                acknowledged.extend(range(sequence, sequence + 50))
            sequence += 50

    writer = threading.Thread(target=write)
    writer.start()
    kills = 0
    try:
        while kills < 3:
            # Mid-upload: a put's temporary file is there (not one a previous kill left behind).
            left = set(node.store.rglob(".put-*"))
            eventually(
                lambda: set(node.store.rglob(".put-*")) - left,  # noqa: B023
                120,
                "an upload under way",
                every=0.005,
            )
            node.stop(signal.SIGKILL)
            kills += 1
            node.start()
    finally:
        stop_writing.set()
        writer.join()
    assert node.stop(signal.SIGTERM) == 0

    for path in node.logs.iterdir():
        assert node.stored(path.name).read_bytes() == path.read_bytes(), path.name
    assert not list(node.store.rglob(".put-*")), "the killed uploads' temporary files were left behind"
    seen = [int(e["seq"]) for e in node.stored_events()]  # type: ignore[call-overload]
    assert len(seen) == len(set(seen)), "an event was stored twice"
    assert set(acknowledged) <= set(seen), "an acknowledged event was lost"
    assert acknowledged, "no batch was acknowledged"


def test_the_object_store_unreachable_mid_upload_loses_nothing_acknowledged(
    tmp_path: Path, s3: S3Proxy
) -> None:
    """S3 stopped while the collector uploads, for as many rounds as an outage of minutes gives it (each
    round fails the same way: at its first request, after boto3's retries), with Ray posting events all
    along: first with the logs all stored (the events' upload is the one that fails), then with a log
    growing (its upload fails first); started again over the same store, the collector's next rounds upload
    everything: every acknowledged event, once, and every byte of the log."""
    node = Node(tmp_path, s3.env())
    storage = from_env(s3.env())
    log_file = node.logs / "python-core-worker-w.log"
    log_file.write_bytes(b"z\n")
    key = posixpath.join(CLUSTER.logs_dir("", SESSION, NODE), log_file.name)
    node.start()
    stop_writing, growing = threading.Event(), threading.Event()
    acknowledged: list[int] = []
    during: list[int] = []  # batches acknowledged while S3 was away

    def write() -> None:
        sequence = 0
        while not stop_writing.is_set():
            if growing.is_set():
                with log_file.open("ab") as f:
                    f.write(b"y" * 1000 + b"\n" * 200)
            batch = [{"eventType": "TASK_LIFECYCLE_EVENT", "sessionName": SESSION, "seq": sequence + i} for i in range(20)]  # fmt: skip
            if _post(node, batch):
                acknowledged.extend(range(sequence, sequence + 20))
                if s3.process is not None and s3.process.poll() is not None:
                    during.append(sequence)
            sequence += 20
            stop_writing.wait(0.05)

    def events() -> list[int]:
        base = CLUSTER.node_dir("", SESSION, NODE)
        keys = [k for k in storage.keys(base) if k.endswith(".jsonl")]
        return [int(json.loads(line)["seq"]) for k in keys for line in storage.get(k).splitlines()]

    def failed_rounds() -> int:
        return node.log.read_text().count("upload failed")

    writer = threading.Thread(target=write)
    writer.start()
    try:
        eventually(lambda: storage.size(key) == 2 and events(), 60, "the log and events stored", every=0.1)
        s3.stop()  # events are uploaded every round: mid-upload, or a round from one
        for phase in ("with only events", "with a log growing"):
            failed, before = failed_rounds(), len(during)
            eventually(lambda: failed_rounds() >= failed + 3 and len(during) >= before + 3,  # noqa: B023
                       120, f"three failed rounds {phase}, batches acknowledged meanwhile", every=0.2)  # fmt: skip
            growing.set()
        s3.start()
    finally:
        stop_writing.set()
        writer.join()
    eventually(lambda: set(acknowledged) <= set(events()), 120, "every acknowledged event uploaded", every=0.5)  # fmt: skip
    eventually(lambda: storage.size(key) == log_file.stat().st_size, 60, "the whole log uploaded", every=0.5)
    assert node.stop(signal.SIGTERM) == 0
    assert storage.get(key) == log_file.read_bytes()
    seen = events()
    assert len(seen) == len(set(seen)), "an event was stored twice"
    assert set(acknowledged) <= set(seen), "an acknowledged event was lost"
