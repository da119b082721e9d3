"""`/api/v0/logs/file` of a stored session, asked the ways Ray's pages ask it: by actor (the Actors and
Serve replica Logs tabs), task attempt, pid, with `lines` and `filter_ansi_code`."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from kuberay.history.server.logfile import content_disposition
from unit.history.stored import JOB_CLUSTER, NODE, Store

WORKER, OTHER = "11" * 28, "22" * 28
ACTOR_LOG = f"worker-{WORKER}-02000000-4242.out"


def _ray_list(records: list[dict[str, object]]) -> dict[str, object]:
    return {"result": True, "msg": "", "data": {"result": {"total": len(records), "result": records}}}


@pytest.fixture
def client(store: Store, job_client: TestClient) -> TestClient:
    store.answer(JOB_CLUSTER, "restful__logical__actors", {"result": True, "data": {"actors": {
        "a1": {"actorId": "a1", "address": {"nodeId": NODE, "workerId": WORKER}, "pid": 4242}}}})  # fmt: skip
    store.answer(
        JOB_CLUSTER, "restful__api__v0__actors", _ray_list([{"actor_id": "a2", "node_id": NODE, "pid": 5151}])
    )
    store.log(JOB_CLUSTER, ACTOR_LOG, b"actor out\n")
    store.log(JOB_CLUSTER, f"worker-{WORKER}-02000000-4242.err", b"actor err\n")
    store.log(JOB_CLUSTER, f"worker-{OTHER}-02000000-5151.out", b"second actor\n")
    lines = b"".join(b"task line %d\n" % i for i in range(30))
    store.log(JOB_CLUSTER, f"worker-{OTHER}-02000000-7.out", b"before\n" + lines + b"after\n")
    start, end = len(b"before\n"), len(b"before\n") + len(lines)
    info = {
        "stdout_file": f"/tmp/ray/session/logs/worker-{OTHER}-02000000-7.out",
        "stdout_start": start,
        "stdout_end": end,
    }
    store.answer(JOB_CLUSTER, "restful__api__v0__tasks", _ray_list([
        {"task_id": "t1", "attempt_number": 0, "node_id": NODE, "task_log_info": {**info, "stdout_end": start + 3}},
        {"task_id": "t1", "attempt_number": 1, "node_id": NODE, "task_log_info": info},
        {"task_id": "t2", "attempt_number": 0, "node_id": NODE, "actor_id": "a1"}]))  # fmt: skip
    store.log(JOB_CLUSTER, "color.log", b"\x1b[31mred\x1b[0m plain \x1b[1;32mbold green\x1b[0m\n")
    return job_client


def _log(client: TestClient, **params: object) -> tuple[int, str]:
    reply = client.get("/api/v0/logs/file", params=params)
    return reply.status_code, reply.text


def test_an_actors_log_is_found_by_actor_id_as_the_actor_and_serve_pages_ask(client: TestClient) -> None:
    # Ray's frontend: actor_id, lines, filter_ansi_code (and suffix for stderr); no node, no file name.
    assert _log(client, actor_id="a1", lines=50000, filter_ansi_code="true") == (200, "actor out\n")
    assert _log(client, actor_id="a1", suffix="err") == (200, "actor err\n")
    assert _log(client, actor_id="a2") == (200, "second actor\n")  # by node and pid of the state record
    assert _log(client, actor_id="nope")[0] == 404


def test_a_pid_on_a_node_names_its_worker_log(client: TestClient) -> None:
    assert _log(client, node_id=NODE, pid=4242, suffix="err") == (200, "actor err\n")
    assert _log(client, pid=4242)[0] == 400  # which node?


def test_a_task_log_is_its_attempts_range_tailed_by_lines(client: TestClient) -> None:
    status, text = _log(client, task_id="t1", attempt_number=1, lines=2)
    assert (status, text) == (200, "task line 28\ntask line 29\n")
    whole = _log(client, task_id="t1", attempt_number=1, lines=-1)[1]
    assert whole.splitlines() == [f"task line {i}" for i in range(30)]
    assert _log(client, task_id="t1") == (200, "tas")  # attempt 0's range
    assert _log(client, task_id="t1", attempt_number=7)[0] == 404
    actor_task = _log(client, task_id="t2")
    assert actor_task[0] == 400 and "actor_id" in actor_task[1]


def test_lines_0_means_rays_default_of_1000(store: Store, client: TestClient) -> None:
    store.log(JOB_CLUSTER, "long.log", b"".join(b"%d\n" % i for i in range(1500)))
    text = _log(client, node_id=NODE, filename="long.log", lines=0)[1]
    assert text.splitlines() == [str(i) for i in range(500, 1500)]


def test_filter_ansi_code_strips_rays_color_codes(client: TestClient) -> None:
    assert (
        _log(client, node_id=NODE, filename="color.log", filter_ansi_code="true")[1]
        == "red plain bold green\n"
    )
    assert "\x1b[31m" in _log(client, node_id=NODE, filename="color.log")[1]


def test_a_suffix_other_than_out_or_err_is_refused(client: TestClient) -> None:
    assert _log(client, task_id="t1", suffix="log")[0] == 400


def test_a_file_under_a_directory_is_read_and_one_outside_refused(store: Store, client: TestClient) -> None:
    # The Serve replica page asks its "Serve logger" tab by node and the log's path under the logs directory.
    store.log(JOB_CLUSTER, "serve/replica_app_dep_x1.log", b"replica ready\n")
    assert _log(client, node_id=NODE, filename="serve/replica_app_dep_x1.log") == (200, "replica ready\n")
    assert _log(client, node_id=NODE, filename="../../../cluster-metadata/x")[0] == 400


def test_a_download_name_can_neither_end_the_header_nor_add_a_parameter() -> None:
    assert content_disposition("raylet.out") == 'attachment; filename="raylet.out"'
    # Was the name as it came: `filename="a"; x=""`, and a CR/LF or NUL made a header uvicorn refuses (a 500).
    assert (
        content_disposition('a"; x="')
        == "attachment; filename=\"a_; x=_\"; filename*=UTF-8''a%22%3B%20x%3D%22"
    )
    assert content_disposition("a\r\nSet-Cookie: x=1") == (
        "attachment; filename=\"a__Set-Cookie: x=1\"; filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x%3D1"
    )
    assert content_disposition("café.log").endswith("filename*=UTF-8''caf%C3%A9.log")
