import asyncio
from collections.abc import AsyncIterator

import pytest

from kuberay.history.server import logfile, logs, stateapi
from kuberay.history.server.cache import ByteCache
from kuberay.history.storage import LocalDirectory


def test_the_cache_holds_at_most_its_bytes_evicting_the_least_recently_used():
    cache = ByteCache(100)
    cache.put("a", "A", 40)
    cache.put("b", "B", 40)
    assert cache.get("a") == "A"  # now b is the least recently used
    cache.put("c", "C", 40)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), cache.bytes) == ("A", None, "C", 80)
    cache.put("huge", "H", 101)  # larger than the whole bound: not kept, nothing evicted for it
    assert (cache.get("huge"), len(cache), cache.bytes) == (None, 2, 80)


def test_state_filters_are_rays():
    tasks = [
        {"state": "FAILED", "job_id": "01"},
        {"state": "FINISHED", "job_id": "01"},
        {"state": "FINISHED", "job_id": "02"},
    ]
    assert stateapi.filtered(tasks, ["job_id", "state"], ["=", "!="], ["01", "FINISHED"]) == [tasks[0]]
    with pytest.raises(ValueError, match="unsupported filter predicate '~'"):
        stateapi.filtered(tasks, ["state"], ["~"], ["x"])
    with pytest.raises(ValueError, match="equal numbers"):
        stateapi.filtered(tasks, ["state"], [], ["x"])
    result = stateapi.list_result(tasks, 3, limit=1)
    assert (result["total"], result["num_after_truncation"], len(result["result"])) == (3, 3, 1)


def test_summary_counts_states_by_function():
    tasks = [
        {"func_or_class_name": "f", "type": "NORMAL_TASK", "state": s}
        for s in ("FAILED", "FINISHED", "FINISHED")
    ]
    cluster = stateapi.task_summary(tasks)["result"]["node_id_to_summary"]["cluster"]
    assert cluster["summary"]["f"]["state_counts"] == {"FAILED": 1, "FINISHED": 2}
    assert cluster["total_tasks"] == 3


@pytest.mark.parametrize("trailing_newline", [True, False])
@pytest.mark.parametrize("wanted", [0, 1, 3, 700, 5000])
def test_tail_start_finds_the_last_lines_across_chunks(tmp_path, wanted, trailing_newline):
    storage = LocalDirectory(tmp_path)
    lines = [f"line {i} " + "y" * (i % 900) for i in range(2000)]
    body = "\n".join(lines) + ("\n" if trailing_newline else "")
    storage.put("f.log", body.encode())
    start = logs.tail_start(storage, "f.log", len(body), wanted)
    expected = lines[-wanted:] if wanted else []
    assert body.encode()[start:].decode().splitlines() == expected


def test_log_files_are_categorized_as_ray_does():
    files = ["worker-1-01-2.out", "worker-1-01-2.err", "python-core-worker-1_2.log", "raylet.out", "gcs_server.out",
             "job-driver-raysubmit_1.log", "monitor.log", "log_monitor.log", "dashboard_agent.log", "dashboard.log"]  # fmt: skip
    assert logs.categorize(files) == {
        "worker_out": ["worker-1-01-2.out"], "worker_err": ["worker-1-01-2.err"],
        "core_worker": ["python-core-worker-1_2.log"], "raylet": ["raylet.out"], "gcs_server": ["gcs_server.out"],
        "internal": ["job-driver-raysubmit_1.log", "log_monitor.log"], "autoscaler": ["monitor.log"],
        "agent": ["dashboard_agent.log"], "dashboard": ["dashboard.log"],
    }  # fmt: skip


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


@pytest.mark.parametrize("cut", range(1, 12))
def test_color_codes_cut_by_a_chunk_boundary_are_still_stripped(cut: int) -> None:
    body = b"a\x1b[1;31mb\x1b[0mc"

    async def collect() -> bytes:
        return b"".join([c async for c in logfile.without_ansi(_chunks(body[:cut], body[cut:]))])

    assert asyncio.run(collect()) == b"abc"
