"""The data directory's lock and state file: one holder, named to the next; nothing left when released."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kuberay.local.instance import AlreadyRunning, InstanceLock, InstanceState, holder, read_state, stop


def _state(data_dir: Path) -> InstanceState:
    return InstanceState(pid=os.getpid(), phase="ready", node_mode="simulate", data_dir=str(data_dir),
                         kubeconfig=str(data_dir / "kubeconfig"), children={"localkube": 1})  # fmt: skip


def test_the_second_lock_names_the_first_and_leaves_its_state_alone(tmp_path: Path) -> None:
    first = InstanceLock(tmp_path)
    first.acquire()
    first.write(_state(tmp_path))
    with pytest.raises(AlreadyRunning, match=f"process {os.getpid()}") as refused:
        InstanceLock(tmp_path).acquire()
    assert refused.value.pid == os.getpid()
    assert holder(tmp_path) == os.getpid()
    assert read_state(tmp_path) == _state(tmp_path)
    first.release()
    assert (holder(tmp_path), read_state(tmp_path)) == (None, None)
    assert not (tmp_path / "local.json").exists()


def test_a_state_file_without_a_holder_is_not_believed(tmp_path: Path) -> None:
    (tmp_path / "local.json").write_bytes(_state(tmp_path).to_json())
    (tmp_path / "local.lock").write_text("12345\n")  # left by a launcher that was killed
    assert (holder(tmp_path), read_state(tmp_path)) == (None, None)
    lock = InstanceLock(tmp_path)
    lock.acquire()  # and it does not block the next launcher
    assert holder(tmp_path) == os.getpid()
    lock.release()


def test_stopping_a_directory_where_nothing_runs(tmp_path: Path) -> None:
    assert stop(tmp_path, timeout=1) is None
