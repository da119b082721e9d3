"""Real Ray for the end-to-end tests, shared per test run.

`ray_head`: one real Ray head (for the dashboard client). `local_process`: one `kuberay local up
--node-mode process --port 0`, started as the README tells a user, for every test that runs examples on
real Ray clusters; each test works in its own namespace.
"""

from collections.abc import Iterator

import pytest

from local_instance import LocalInstance
from ray_process import RayHead


@pytest.fixture(scope="session")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayHead]:
    """One real Ray head for the whole test run (starting one costs ~5-10 s and ~600 MB)."""
    head = RayHead(tmp_path_factory.mktemp("ray") / "t")
    head.temp_dir.mkdir()
    head.start()
    yield head
    head.stop()


@pytest.fixture(scope="session")
def local_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalInstance]:
    with LocalInstance(
        tmp_path_factory.mktemp("local") / "process", "--node-mode", "process", "--port", "0"
    ) as local:
        yield local
