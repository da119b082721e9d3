"""Real Ray for the end-to-end tests, shared per test run.

`ray_head`: one real Ray head (for the dashboard client). `local_process`: one `kuberay local up
--node-mode process --port 0`, started as the README tells a user, for every test that runs examples on
real Ray clusters; each test works in its own namespace. Under pytest-xdist the workers share that one
instance (started by the first worker that needs it, taken down by the controller at the end, see
tests/conftest.py): one Ray-mode localkube and operator per run, not one per worker. The namespaces a test
makes there (`local_process.namespace()`) are deleted after it, with what is left in them: a real Ray
cluster idles at about a third of a core, and one a test forgot ran on for the rest of the run.
"""

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.local_instance import LocalInstance, shared_instance
from support.ray_process import RayHead


@pytest.fixture(scope="module")
def ray_head() -> Iterator[RayHead]:
    """One real Ray head for a test file (starting one costs ~5-10 s and ~600 MB; kept for the run, it idled
    at a third of a core on its worker after its tests were done).

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


# The session's `local_process`, once a test asked for it: a failed test's report describes its namespaces.
_process_instance: list[LocalInstance] = []


@pytest.fixture(scope="session")
def local_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalInstance]:
    args = ("--node-mode", "process", "--port", "0")
    if "PYTEST_XDIST_WORKER" not in os.environ:  # no pytest-xdist workers: this process owns the instance
        with LocalInstance(tmp_path_factory.mktemp("local") / "process", *args) as local:
            _process_instance.append(local)
            yield local
    else:  # the directory of the run, of which each worker's base directory is one entry
        local = shared_instance(tmp_path_factory.getbasetemp().parent, "process", *args)
        _process_instance.append(local)
        yield local
    _process_instance.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """A failed test on `local_process` reports what its namespaces held (pods, containers, the tails of
    those not ready, Events) while they still hold it: a Ray cluster that never became ready in CI is
    otherwise only a timeout."""
    report: pytest.TestReport = yield
    if (
        report.failed
        and "local_process" in item.fixturenames
        and _process_instance
        and _process_instance[0].namespaces
    ):
        local = _process_instance[0]
        try:
            description = local.describe(local.namespaces)
        except Exception as error:  # the report goes on without it, saying why
            description = f"could not describe them: {error!r}"
        report.sections.append(("the namespaces on local_process", description))
    return report


@pytest.fixture(autouse=True)
def _delete_the_tests_namespaces(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test on `local_process`: `kubectl delete namespace` (not waited for) of each it made.
    Namespaces made before it (by module fixtures, set up first) are theirs to remove."""
    if "local_process" not in request.fixturenames:
        yield
        return
    local: LocalInstance = request.getfixturevalue("local_process")
    before = len(local.namespaces)
    yield
    made = local.namespaces[before:]
    del local.namespaces[before:]
    if made:
        local.kubectl("delete", "namespace", *made, "--wait=false")
