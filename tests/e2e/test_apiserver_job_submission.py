"""A job submitted through kuberay-apiserver succeeds on real Ray (process mode): a compute template and a
head-only cluster made through the APIServer, the cluster ready, the job submitted to its dashboard
(through the API server's service proxy, `-use-kubernetes-proxy`, as from outside a cluster), its status
and log read back, then everything deleted, all with upstream's Python client contract."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from support.apiserver_process import ApiServerProcess
from support.eventually import eventually
from support.kuberay_apis import KubeRayAPIs
from support.local_instance import KUBECTL_POLL, LocalInstance

pytestmark = pytest.mark.slow

READY_TIMEOUT = 300.0  # real Ray on a loaded two-core machine: a bound, not a measurement


@pytest.fixture
def apiserver(local_process: LocalInstance, tmp_path: Path) -> Iterator[ApiServerProcess]:
    process = ApiServerProcess(
        Path(local_process.kubeconfig), tmp_path / "apiserver.log", "-use-kubernetes-proxy"
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


def test_job_submitted_through_the_apiserver_succeeds(
    local_process: LocalInstance, apiserver: ApiServerProcess
) -> None:
    ns = local_process.namespace(f"api-{uuid.uuid4().hex[:6]}")
    apis = KubeRayAPIs(server_url=apiserver.url, wait_interval=2)
    assert apis.create_compute_template({"name": "head", "namespace": ns, "cpu": 1, "memory": 2}) == (
        200,
        None,
    )
    cluster = {"name": "viaapi", "namespace": ns, "user": "e2e", "version": ray.__version__,
               "clusterSpec": {"headGroupSpec": {"computeTemplate": "head",
                                                 "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "1",
                                                                    "object-store-memory": "100000000"}}}}  # fmt: skip
    assert apis.create_cluster(cluster) == (200, None)
    try:
        assert apis.wait_cluster_ready(ns, "viaapi", wait=READY_TIMEOUT) == (200, None)
        # The dashboard answers a little after the head is ready: retry the submission, within a bound.
        submitted = eventually(
            lambda: _submit(apis, ns), READY_TIMEOUT, "the job submission", every=KUBECTL_POLL
        )
        status = eventually(
            lambda: _finished(apis, ns, submitted), READY_TIMEOUT, "the job to finish", every=KUBECTL_POLL
        )
        assert status == "SUCCEEDED", apis.get_job_log(ns, "viaapi", submitted)
        code, error, log = apis.get_job_log(ns, "viaapi", submitted)
        assert (code, error) == (200, None) and "hello from the apiserver" in log
        code, error, infos = apis.list_job_info(ns, "viaapi")
        assert submitted in {i["submissionId"] for i in infos}
        assert apis.delete_ray_job(ns, "viaapi", submitted) == (200, None)
        code, error, info = apis.get_job_info(ns, "viaapi", submitted)
        if code == 200:
            # Ray's own race, not the APIServer's: its job monitor polls the job's supervisor actor every
            # second, and one that finds the actor gone after the job's record was deleted writes a new
            # record, FAILED "Job supervisor actor died" (ray/dashboard/modules/job/job_manager.py). Such a
            # record is deleted like any other, and nothing writes it back then.
            assert (info["status"], info["errorType"]) == ("FAILED", "JOB_SUPERVISOR_ACTOR_DIED"), info
            assert apis.delete_ray_job(ns, "viaapi", submitted) == (200, None)
            code, error, info = apis.get_job_info(ns, "viaapi", submitted)
        assert code == 404 and error, info
    finally:
        assert apis.delete_cluster(ns, "viaapi") == (200, None)
        local_process.kubectl("delete", "namespace", ns, "--wait=false")


def _submit(apis: KubeRayAPIs, ns: str) -> str | None:
    code, _, submission = apis.submit_job(ns, "viaapi", {"entrypoint": "python -c \"print('hello from the apiserver')\"",
                                                         "runtimeEnv": "env_vars:\n  GREETING: hi\n"})  # fmt: skip
    if code != 200:
        time.sleep(2)
        return None
    return str(submission)


def _finished(apis: KubeRayAPIs, ns: str, submission: str) -> str | None:
    code, _, info = apis.get_job_info(ns, "viaapi", submission)
    if code == 200 and info.get("status") in ("SUCCEEDED", "FAILED", "STOPPED"):
        return str(info["status"])
    time.sleep(2)
    return None
