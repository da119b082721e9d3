"""The head's Ray container waits, in its preStop hook, for the history collector's final snapshot (issue 49,
item 3); a user's own preStop hook still runs, after it."""

from __future__ import annotations

import copy
from typing import Any

from kuberay.api.raycluster import RayCluster
from kuberay.builders import collector, pod
from support import golden
from unit.builders import podcases

CASE = podcases.DIRECTORY / "history-collector.input.yaml"
FINAL_SNAPSHOT = {"httpGet": {"path": "/v1/final-snapshot", "port": 8084}}


def _pods(head_lifecycle: dict[str, Any] | None = None) -> dict[str, Any]:
    _, options, _ = podcases.load(CASE)
    raw = golden.load(CASE)["cluster"]
    if head_lifecycle is not None:
        raw["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["lifecycle"] = head_lifecycle
    cluster = RayCluster.parse(raw)
    workers = {
        g.group_name: pod.build_worker_pod(cluster, g, options) for g in cluster.spec.worker_group_specs or ()
    }
    return {"head": pod.build_head_pod(cluster, options), "workers": workers}


def test_the_head_waits_for_the_final_snapshot_and_workers_do_not() -> None:
    pods = _pods()
    ray = pods["head"]["spec"]["containers"][0]
    assert ray["lifecycle"] == {"preStop": FINAL_SNAPSHOT}
    worker = pods["workers"]["workers"]["spec"]["containers"][0]
    assert "lifecycle" not in worker
    # The sidecar has none: the head's hook is what keeps the dashboard up.
    assert "lifecycle" not in pods["head"]["spec"]["containers"][1]


def test_a_users_exec_hook_runs_after_the_collector_was_asked() -> None:
    user = {
        "postStart": {"exec": {"command": ["true"]}},
        "preStop": {"exec": {"command": ["/bin/sh", "-c", "ray stop"]}},
    }
    ray = _pods(copy.deepcopy(user))["head"]["spec"]["containers"][0]
    assert ray["lifecycle"]["postStart"] == user["postStart"]
    command = ray["lifecycle"]["preStop"]["exec"]["command"]
    assert command[:2] == ["python", "-c"]
    assert command[3:] == ["http://localhost:8084/v1/final-snapshot", "/bin/sh", "-c", "ray stop"]


def test_a_users_http_and_sleep_hooks_are_composed_and_a_tcp_one_is_kept() -> None:
    ray: dict[str, Any] = {
        "name": "ray-head",
        "ports": [{"name": "serve", "containerPort": 8000}],
        "lifecycle": {
            "preStop": {
                "httpGet": {"path": "drain", "port": "serve", "httpHeaders": [{"name": "X", "value": "1"}]}
            }
        },
    }
    collector.add_head_pre_stop(ray)
    assert ray["lifecycle"]["preStop"]["exec"]["command"][4:] == [
        "--get",
        "http",
        "",
        "8000",
        "/drain",
        '{"X": "1"}',
    ]
    slept: dict[str, Any] = {"lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}
    collector.add_head_pre_stop(slept)
    assert slept["lifecycle"]["preStop"]["exec"]["command"][4:] == ["sleep", "5"]
    for hook in ({"tcpSocket": {"port": 80}}, {"httpGet": {"port": "missing"}}):
        kept: dict[str, Any] = {"lifecycle": {"preStop": copy.deepcopy(hook)}}
        collector.add_head_pre_stop(kept)
        assert kept["lifecycle"]["preStop"] == hook
