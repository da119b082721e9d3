from collections.abc import Iterator

import pytest

from support.history_processes import S3Proxy, running_s3proxy


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Proxy]:
    with running_s3proxy(tmp_path_factory.mktemp("s3proxy")) as proxy:
        yield proxy
