"""Real Ray for the end-to-end tests, shared per test run.

`ray_head`: one real Ray head (for the dashboard client). `local_process`: one `kuberay local up
--node-mode process --port 0`, started as the README tells a user, for every test that runs examples on
real Ray clusters; each test works in its own namespace.
"""

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_instance import LocalInstance
from ray_process import RayHead


@pytest.fixture(scope="session")
def ray_head() -> Iterator[RayHead]:
    """One real Ray head for the whole test run (starting one costs ~5-10 s and ~600 MB).

    Its directory is a short one of its own, not under pytest's base temp: Ray's socket paths inside it must
    fit AF_UNIX's 107 bytes, which a deeper base (pytest-xdist's per-worker one) overflows. It is removed
    after a clean stop and kept, with `ray-head.log`, when Ray fails to start."""
    short = Path(tempfile.mkdtemp(prefix="ray-"))
    head = RayHead(short / "t")
    head.temp_dir.mkdir()
    head.start()
    yield head
    head.stop()
    shutil.rmtree(short, ignore_errors=True)


@pytest.fixture(scope="session")
def local_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalInstance]:
    with LocalInstance(
        tmp_path_factory.mktemp("local") / "process", "--node-mode", "process", "--port", "0"
    ) as local:
        yield local
