from pathlib import Path
from typing import Any

import pytest

from kuberay.api.features import FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.api.rayjob import RayJob
from kuberay.builders import submitter
from support import golden

TESTDATA = Path(__file__).parent / "testdata" / "submitter"
HEALTH = (
    "python -c \"import urllib.request; r=urllib.request.urlopen('{url}', timeout=10); "
    "exit(0 if b'success' in r.read() else 1)\""
)


def build(case: dict[str, Any]) -> dict[str, Any]:
    job, cluster = RayJob.parse(case["job"]), RayCluster.parse(case["cluster"])
    gates = FeatureGates.from_mapping(case.get("gates") or {})
    login = (case.get("options") or {}).get("loginShell", False)
    if job.spec.submission_mode == "SidecarMode":
        return {"container": submitter.build_submitter_container(job, cluster, gates, login_shell=login)}
    return {"job": submitter.build_submitter_job(job, cluster, gates, login_shell=login)}


def load(name: str) -> dict[str, Any]:
    return build(golden.load(TESTDATA / f"{name}.input.yaml"))


@pytest.mark.parametrize("case", golden.cases(TESTDATA), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), build(golden.load(case)))


def upstream_template_job(mode: str, ray_version: str = "2.6.0") -> RayJob:
    """Upstream's `rayJobTemplate()` (common/job_test.go)."""
    return RayJob.parse(
        {
            "metadata": {"name": "job"},
            "spec": {
                "submissionMode": mode,
                "runtimeEnvYAML": "test: test",
                "metadata": {"testKey": "testValue"},
                "rayClusterSpec": {
                    "rayVersion": ray_version,
                    "headGroupSpec": {
                        "template": {
                            "spec": {
                                "containers": [{"ports": [{"name": "dashboard", "containerPort": 8265}]}]
                            }
                        }
                    },
                },
                "entrypoint": "echo no quote 'single quote' \"double quote\"",
                "entrypointNumCpus": 1,
                "entrypointNumGpus": 0.5,
                "entrypointResources": '{"Custom_1": 1, "Custom_2": 5.5}',
            },
            "status": {"dashboardURL": "http://127.0.0.1:8265", "jobId": "testJobId"},
        }
    )


WAIT = [
    "until", HEALTH.format(url="{url}"), ">/dev/null", "2>&1", ";",
    "do", "echo", '"Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ..."',
    ";", "sleep", "2", ";", "done", ";",
]  # fmt: skip
SUBMIT_ARGS = [
    "--runtime-env-json", '"{\\"test\\":\\"test\\"}"',
    "--metadata-json", '"{\\"testKey\\":\\"testValue\\"}"',
    "--submission-id", "testJobId",
    "--entrypoint-num-cpus", "1.000000",
    "--entrypoint-num-gpus", "0.500000",
    "--entrypoint-resources", '"{\\"Custom_1\\": 1, \\"Custom_2\\": 5.5}"',
    "--", "echo no quote 'single quote' \"double quote\"", ";",
]  # fmt: skip


def wait(url: str) -> list[str]:
    return [HEALTH.format(url=url) if token.startswith("python -c") else token for token in WAIT]


def test_k8s_job_mode_command_is_upstreams() -> None:
    tokens = submitter.build_submit_command(upstream_template_job("K8sJobMode"), "K8sJobMode", FeatureGates())
    assert tokens == [
        *wait("http://127.0.0.1:8265/api/gcs_healthz"),
        "if", "!", "ray", "job", "status", "--address", "http://127.0.0.1:8265", "testJobId", ">/dev/null", "2>&1",
        ";", "then",
        "ray", "job", "submit", "--address", "http://127.0.0.1:8265", "--no-wait",
        *SUBMIT_ARGS,
        "fi", ";", "ray", "job", "logs", "--address", "http://127.0.0.1:8265", "--follow", "testJobId",
    ]  # fmt: skip


def test_sidecar_mode_command_is_upstreams() -> None:
    tokens = submitter.build_submit_command(
        upstream_template_job("SidecarMode"), "SidecarMode", FeatureGates()
    )
    assert tokens == [
        *wait("http://localhost:8265/api/gcs_healthz"),
        "ray", "job", "submit", "--address", "http://127.0.0.1:8265",
        *SUBMIT_ARGS,
    ]  # fmt: skip


def test_sidecar_restart_gate_checks_status_first() -> None:
    gates = FeatureGates.parse("SidecarSubmitterRestart=true")
    tokens = submitter.build_submit_command(upstream_template_job("SidecarMode"), "SidecarMode", gates)
    assert tokens[len(WAIT) : len(WAIT) + 3] == ["if", "!", "ray"]
    assert "--no-wait" in tokens and tokens[-9:-7] == ["fi", ";"]


def test_k8s_job_mode_adds_the_scheme_once() -> None:
    job = upstream_template_job("K8sJobMode")
    assert job.status is not None
    job.status.dashboard_url = "svc.ns.svc.cluster.local:8265"
    tokens = submitter.build_submit_command(job, "K8sJobMode", FeatureGates())
    assert tokens[tokens.index("submit") + 2] == "http://svc.ns.svc.cluster.local:8265"


def test_runtime_env_yaml_is_go_json() -> None:
    job = upstream_template_job("K8sJobMode")
    job.spec.runtime_env_yaml = (
        'working_dir: "https://github.com/ray-project/serve_config_examples/archive/b393e77.zip"\n'
        'pip: ["python-multipart==0.0.6"]\n'
    )
    tokens = submitter.build_submit_command(job, "K8sJobMode", FeatureGates())
    assert tokens[tokens.index("--runtime-env-json") + 1] == (
        '"{\\"pip\\":[\\"python-multipart==0.0.6\\"],'
        '\\"working_dir\\":\\"https://github.com/ray-project/serve_config_examples/archive/b393e77.zip\\"}"'
    )


@pytest.mark.parametrize(
    ("version", "error"),
    [
        ("2.5.0", "the Ray version must be at least 2.6.0 to use the metadata field"),
        ("2.7.0-rc1", "the Ray version must be at least 2.6.0 to use the metadata field"),
        ("nightly", "failed to parse Ray version: nightly: invalid semantic version"),
        ("2.6", None),
        ("v2.52.0", None),
        ("", None),
    ],
)
def test_metadata_requires_ray_2_6(version: str, error: str | None) -> None:
    job = upstream_template_job("K8sJobMode", ray_version=version)
    if error is None:
        assert "--metadata-json" in submitter.build_submit_command(job, "K8sJobMode", FeatureGates())
    else:
        with pytest.raises(submitter.SubmitterError, match=f"^{error}$"):
            submitter.build_submit_command(job, "K8sJobMode", FeatureGates())


def test_other_modes_have_no_command() -> None:
    with pytest.raises(submitter.SubmitterError, match="unsupported submission mode"):
        submitter.build_submit_command(upstream_template_job("HTTPMode"), "HTTPMode", FeatureGates())


def test_default_submitter_job() -> None:
    job = load("k8sjob-defaults")["job"]
    assert job["metadata"]["name"] == "rayjob-sample" and job["spec"]["backoffLimit"] == 2
    labels = {
        "ray.io/originated-from-cr-name": "rayjob-sample",
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert job["metadata"]["labels"] == labels and job["spec"]["template"]["metadata"]["labels"] == labels
    assert job["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (c,) = pod["containers"]
    assert (c["name"], c["image"]) == ("ray-job-submitter", "rayproject/ray:2.52.0")
    assert c["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "200Mi"},
    }
    assert c["command"] == ["/bin/bash", "-ce", "--"]
    assert c["env"] == [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {
            "name": "RAY_DASHBOARD_ADDRESS",
            "value": "rayjob-sample-x7k2p-head-svc.default.svc.cluster.local:8265",
        },
        {"name": "RAY_JOB_SUBMISSION_ID", "value": "rayjob-sample-m2k4q"},
    ]
    script = c["args"][0]
    assert (
        '--runtime-env-json "{\\"env_vars\\":{\\"counter_name\\":\\"test_counter\\"},'
        '\\"pip\\":[\\"requests==2.26.0\\",\\"pendulum==2.1.2\\"]}"' in script
    )
    assert '--metadata-json "{\\"app\\":\\"\\\\u003cdemo\\\\u003e\\",\\"owner\\":\\"team-a\\"}"' in script
    assert script.endswith(
        "-- python /home/ray/samples/sample_code.py ; fi ; ray job logs --address "
        "http://rayjob-sample-x7k2p-head-svc.default.svc.cluster.local:8265 --follow rayjob-sample-m2k4q"
    )


def test_custom_template_keeps_user_command() -> None:
    job = load("k8sjob-custom-template")["job"]
    assert job["spec"]["backoffLimit"] == 5
    template = job["spec"]["template"]
    assert template["metadata"]["labels"]["team"] == "a"
    assert template["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayJob"
    (c,) = template["spec"]["containers"]
    assert c["command"][0] == "ray" and "args" not in c
    assert [e["name"] for e in c["env"]] == [
        "PYTHONUNBUFFERED", "PYTHONUNBUFFERED", "RAY_DASHBOARD_ADDRESS", "RAY_JOB_SUBMISSION_ID",
        "RAY_AUTH_MODE", "RAY_AUTH_TOKEN",
    ]  # fmt: skip
    assert c["env"][-1]["valueFrom"] == {"secretKeyRef": {"name": "existing-cluster", "key": "auth_token"}}
    assert "volumes" not in template["spec"]


def test_template_without_command_and_k8s_token_auth() -> None:
    pod = load("k8sjob-template-without-command")["job"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["command"] == ["/bin/bash", "-ce", "--"]
    assert c["args"][0].endswith(
        '-- python -c "print(1)" ; fi ; ray job logs --address '
        "http://k8sauth-abc12-head-svc.default.svc.cluster.local:8265 --follow k8sauth-q2w3e"
    )
    assert {"name": "RAY_ENABLE_K8S_TOKEN_AUTH", "value": "true"} in c["env"]
    assert c["volumeMounts"] == [
        {"name": "ray-token", "readOnly": True, "mountPath": "/var/run/secrets/ray.io/serviceaccount"}
    ]
    assert pod["volumes"] == [
        {"name": "ray-token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
    ]
    assert pod["restartPolicy"] == "OnFailure"  # the user's, even though the API server will reject it


def test_login_shell() -> None:
    (c,) = load("k8sjob-login-shell")["job"]["spec"]["template"]["spec"]["containers"]
    assert c["command"] == ["/bin/bash", "-cel", "--"]


def test_sidecar_container() -> None:
    c = load("sidecar")["container"]
    assert c["name"] == "ray-job-submitter" and "restartPolicy" not in c
    assert c["command"] == ["/bin/bash", "-ce", "--"]
    assert c["env"] == [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "RAY_DASHBOARD_ADDRESS"},
        {"name": "RAY_JOB_SUBMISSION_ID", "value": "rayjob-sidecar-mode-h7g6f"},
    ]
    assert c["args"][0].startswith(
        "until python -c \"import urllib.request; r=urllib.request.urlopen('http://localhost:8266/api/gcs_healthz'"
    )
    assert "ray job submit --address http://127.0.0.1:8266 --runtime-env-json" in c["args"][0]
    assert "ray job status" not in c["args"][0] and c["args"][0].endswith(
        "-- python /home/ray/samples/sample_code.py ;"
    )


def test_sidecar_restart_container() -> None:
    c = load("sidecar-restart")["container"]
    assert c["restartPolicy"] == "OnFailure"
    assert "if ! ray job status --address http://127.0.0.1:8265 restart-r5t6y" in c["args"][0]
    assert c["env"][-1] == {
        "name": "RAY_AUTH_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "my-token", "key": "auth_token"}},
    }


def test_a_head_without_containers_is_named() -> None:
    job = upstream_template_job("SidecarMode")
    assert job.spec.ray_cluster_spec is not None
    job.spec.ray_cluster_spec.head_group_spec.template = {"spec": {"containers": []}}
    with pytest.raises(
        submitter.SubmitterError,
        match=r"^RayJob /job: spec\.rayClusterSpec\.headGroupSpec\.template\.spec\.containers is empty$",
    ):
        submitter.build_submit_command(job, "SidecarMode", FeatureGates())
