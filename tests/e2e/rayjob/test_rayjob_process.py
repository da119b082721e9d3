"""RayJobs on real Ray clusters: localkube in process mode runs the RayCluster's pods (and the submitter
Job's pod) as local processes, so `ray start` and `ray job submit` really run; the operator reaches each
dashboard through the API server's service proxy.

The upstream sample is used with two changes a laptop needs: its script (a ConfigMap mounted into the head
pod upstream) is passed inline, and its runtime env keeps its env_vars but not its pip packages (no network
here), so the script's check of the pip-installed requests version is left out.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from integration.rayjob.harness import operator
from localkube_process import LocalKubeProcess

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO.parent / "shared" / "upstream-samples" / "ray-job.sample.yaml"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def process_localkube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubeProcess]:
    server = LocalKubeProcess(
        tmp_path_factory.mktemp("localkube-process"), extra_args=["--node-mode", "process"]
    )
    server.start()
    try:
        server.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
        yield server
    finally:
        server.stop(timeout=60)


def sample(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    rayjob, configmap = (doc for doc in yaml.safe_load_all(SAMPLE.read_text()) if doc)
    script = "\n".join(
        line
        for line in configmap["data"]["sample_code.py"].splitlines()
        if "requests.__version__" not in line
    )
    job = copy.deepcopy(rayjob)
    job["metadata"] = {"name": name, "namespace": namespace}
    encoded = base64.b64encode(script.encode()).decode()
    job["spec"]["entrypoint"] = f"python -c \"import base64; exec(base64.b64decode('{encoded}'))\""
    runtime_env = yaml.safe_load(job["spec"]["runtimeEnvYAML"])
    job["spec"]["runtimeEnvYAML"] = yaml.safe_dump({"env_vars": runtime_env["env_vars"]})
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    head.pop("volumes")
    head["containers"][0].pop("volumeMounts")
    job["spec"].update(spec)
    return job


@pytest.mark.parametrize("mode", ["K8sJobMode", "HTTPMode", "SidecarMode"])
async def test_the_sample_reaches_complete_on_a_real_ray_cluster(process_localkube, mode):
    async with operator(process_localkube, use_kubernetes_proxy=True) as op:
        await op.create(sample(op.namespace, "rayjob-sample", submissionMode=mode,
                               shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=5))  # fmt: skip
        done = await op.wait_status("rayjob-sample", jobDeploymentStatus="Complete", timeout=240)
        assert (done["status"]["jobStatus"], done["status"]["succeeded"]) == ("SUCCEEDED", 1)
        await op.wait(lambda: _no_cluster(op, done["status"]["rayClusterName"]), timeout=60)


async def test_a_failing_entrypoint_ends_failed_with_rays_message(process_localkube):
    async with operator(process_localkube, use_kubernetes_proxy=True) as op:
        entrypoint = "python -c \"import sys; print('boom'); sys.exit(3)\""
        await op.create(sample(op.namespace, "fails", entrypoint=entrypoint))
        failed = await op.wait_status("fails", jobDeploymentStatus="Failed", timeout=240)
        status = failed["status"]
        assert (status["jobStatus"], status["reason"]) == ("FAILED", "AppFailed")
        assert status["message"].startswith("Job entrypoint command failed with exit code 3")
        assert "boom" in status["message"]


async def _no_cluster(op: Any, name: str) -> bool:
    return await op.cluster(name) is None
