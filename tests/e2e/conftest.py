from collections.abc import Iterator

import pytest

from ray_process import RayHead


@pytest.fixture(scope="session")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayHead]:
    """One real Ray head for the whole test run (starting one costs ~5-10 s and ~600 MB)."""
    head = RayHead(tmp_path_factory.mktemp("ray") / "t")
    head.temp_dir.mkdir()
    head.start()
    yield head
    head.stop()
