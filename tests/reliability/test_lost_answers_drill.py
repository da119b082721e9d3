"""Drill: the operator's writes are lost, or carried out with their answers lost, and its connections drop.

Between the operator and localkube sits a cable (tests/support/cable.py) that, in the middle of a scale-up, swallows
every answer for a second (the creates sent meanwhile make their pods, the operator hears nothing), then cuts
every connection, watches too, for a few seconds, as a server dying between a write and its answer would;
again until a cut has caught a create. Then the same with the requests dropped instead: creates sent that
never arrive. The operator must neither count an unanswered create as failed (its pod may exist) nor trust
a cache that was cut off, nor wait for ever for a pod that was never made: the drill ends with exactly the
workers asked for, none made twice and taken back.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml

from reliability import invariants
from support.cable import ThreadedCable
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

pytestmark = pytest.mark.timers

NAMESPACE = "lost-answers-drill"
WORKERS = 100
# Only requests on connections already open go out while traffic is lost (a new connection's TLS handshake
# never completes), so a cut may catch no create in flight: cut again, up to this many times. The operator's
# client makes 10 requests a second of each kind, so a scale-up lasts through several cuts.
CUTS = 4
# The operator's log line for a create sent without an answer (the connection cut while it waited).
UNANSWERED_CREATE = re.compile(r"POST /api/v1/namespaces/[a-z-]+/pods: [^\"]*sent without an answer")


def creating(client: httpx.Client) -> None:
    """Returns once the operator is seen making workers (after a cut it may first wait for its cache)."""
    start = len(invariants.workers(client, NAMESPACE, "big"))
    eventually(lambda: len(invariants.workers(client, NAMESPACE, "big")) > start, 60, "a new worker")


def cut(cable: ThreadedCable) -> None:
    """Drops every connection, watches too, for a few seconds."""
    cable.unplug()
    time.sleep(3)
    cable.plug()


@pytest.mark.slow
def test_creates_whose_answers_were_lost_make_no_pod_twice(
    localkube_factory: Callable[..., LocalKubeProcess], tmp_path: Path
) -> None:
    server = localkube_factory()
    server.apply_files(invariants.CRDS)
    cable = ThreadedCable("127.0.0.1", int(server.url.rsplit(":", 1)[1]))
    cable.plug()
    kubeconfig = yaml.safe_load(server.kubeconfig.read_text())
    kubeconfig["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{cable.cable.port}"
    through_cable = tmp_path / "kubeconfig"
    through_cable.write_text(yaml.safe_dump(kubeconfig))
    log = tmp_path / "operator.log"
    operator = OperatorProcess(through_cable, log, "--qps=10", "--burst=1").start()
    try:
        with server.client(timeout=30) as client:
            client.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).raise_for_status()
            invariants.start_scale_up(client, NAMESPACE, "big", WORKERS)
            unheard = 0
            for _ in range(CUTS):
                creating(client)
                cable.swallow()
                # Read after swallowing began: a pod that appears later was made by a create whose answer
                # was swallowed (a lower bound, which is all the drill needs).
                before = len(invariants.workers(client, NAMESPACE, "big"))
                time.sleep(1)
                unheard += len(invariants.workers(client, NAMESPACE, "big")) - before
                cut(cable)
                if unheard:
                    break
            assert unheard > 0, f"in {CUTS} cuts no create was carried out while its answer was swallowed"
            # Now creates that are sent and never arrive, in a second scale-up: the operator expects pods
            # that will never show up, and must give up on them (30 s after its cache is back) and make
            # them after all.
            invariants.settle(client, NAMESPACE, {"big": WORKERS})
            invariants.scale(client, NAMESPACE, "big", 2 * WORKERS, 2 * WORKERS)
            lost = 0
            for _ in range(CUTS):
                creating(client)
                logged = log.read_text()
                cable.sink()
                time.sleep(1)
                cut(cable)
                lost = len(UNANSWERED_CREATE.findall(log.read_text()[len(logged) :]))
                if lost:
                    break
            assert lost > 0, f"in {CUTS} cuts no create was sent while requests were dropped"
            invariants.settle(client, NAMESPACE, {"big": 2 * WORKERS})
            assert not invariants.deleted_workers(client, NAMESPACE)
    finally:
        operator.stop()
        cable.close()
