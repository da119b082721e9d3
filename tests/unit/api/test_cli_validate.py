"""`kuberay validate -f FILE`: offline schema check and validation of the ray.io objects in manifests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kuberay.cli import app

CLUSTER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: demo}
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    template: {spec: {containers: [{name: ray-head, image: rayproject/ray:2.52.0}]}}
  workerGroupSpecs:
  - groupName: small
    maxReplicas: 4
    template: {spec: {containers: [{name: ray-worker, image: rayproject/ray:2.52.0}]}}
"""
CONFIG_MAP = """
apiVersion: v1
kind: ConfigMap
metadata: {name: scripts}
data: {run.py: print(1)}
"""
BAD_JOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: nightly.job}
spec:
  entrypoint: python run.py
  backoffLimit: -1
  rayClusterSpec:
    headGroupSpec:
      template: {spec: {containers: [{name: ray-head, image: rayproject/ray}]}}
"""
DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["validate", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, name: str, *documents: str) -> str:
    path = tmp_path / name
    path.write_text("---".join(documents))
    return str(path)


def test_valid_objects_print_ok_and_other_kinds_are_skipped(tmp_path: Path) -> None:
    code, out, _ = run("-f", write(tmp_path, "a.yaml", CONFIG_MAP, CLUSTER))
    assert (code, out) == (0, "RayCluster/demo: ok\n")


def test_each_error_names_object_and_field_and_exit_is_1(tmp_path: Path) -> None:
    code, out, _ = run("-f", write(tmp_path, "a.yaml", CLUSTER), "-f", write(tmp_path, "b.yaml", BAD_JOB))
    assert code == 1
    assert out.splitlines() == [
        "RayCluster/demo: ok",
        f"RayJob/nightly.job: metadata.name: The RayJob metadata is invalid: RayJob name should be a valid "
        f"DNS1035 label: [{DNS1035}]",
        "RayJob/nightly.job: spec.backoffLimit: The RayJob spec is invalid: backoffLimit must be a positive integer",
    ]


def test_schema_errors_come_first_and_stop_there(tmp_path: Path) -> None:
    broken = yaml.safe_load(CLUSTER)
    del broken["spec"]["headGroupSpec"]
    broken["spec"]["workerGroupSpecs"][0]["maxReplicas"] = "four"
    broken["spec"]["managedBy"] = "someone"
    code, out, _ = run("-f", write(tmp_path, "a.yaml", yaml.safe_dump(broken)))
    assert code == 1
    assert sorted(out.splitlines()) == [
        "RayCluster/demo: spec.headGroupSpec: Required value",
        'RayCluster/demo: spec.managedBy: Invalid value: "string": the managedBy field value must be either '
        "'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
        'RayCluster/demo: spec.workerGroupSpecs[0].maxReplicas: Invalid value: "string": '
        'spec.workerGroupSpecs[0].maxReplicas in body must be of type integer: "string"',
    ]


def test_feature_gates_enable_alpha_fields(tmp_path: Path) -> None:
    cluster = yaml.safe_load(CLUSTER)
    cluster["spec"]["tlsOptions"] = {"enabled": True}
    path = write(tmp_path, "a.yaml", yaml.safe_dump(cluster))
    assert run("-f", path)[:2] == (
        1,
        "RayCluster/demo: spec.tlsOptions: spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled\n",
    )
    assert run("-f", path, "--feature-gates", "RayClusterMTLS=true")[:2] == (0, "RayCluster/demo: ok\n")


def test_stdin_and_generate_name(tmp_path: Path) -> None:
    job = yaml.safe_load(BAD_JOB)
    job["metadata"] = {"generateName": "nightly-"}
    del job["spec"]["backoffLimit"]
    assert run("-f", "-", stdin=yaml.safe_dump(job))[:2] == (0, "RayJob/nightly-: ok\n")


def test_v1alpha1_objects_are_checked_against_their_own_schema(tmp_path: Path) -> None:
    cluster = yaml.safe_load(CLUSTER)
    cluster["apiVersion"] = "ray.io/v1alpha1"
    code, out, _ = run("-f", write(tmp_path, "a.yaml", yaml.safe_dump(cluster)))
    assert code == 1
    assert out.splitlines() == [
        "RayCluster/demo: spec.headGroupSpec.rayStartParams: Required value",
        "RayCluster/demo: spec.workerGroupSpecs[0].rayStartParams: Required value",
    ]


def test_unknown_ray_kind_is_an_error(tmp_path: Path) -> None:
    code, out, _ = run(
        "-f", write(tmp_path, "a.yaml", "apiVersion: ray.io/v1\nkind: RayThing\nmetadata: {name: x}\n")
    )
    assert (code, out) == (1, 'RayThing/x: kind: no matches for kind "RayThing" in version "ray.io/v1"\n')


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "No such file or directory"),
        ("a: [unclosed", "invalid YAML: while parsing a flow sequence"),
        ("- just\n- a list\n", "document 1 is not an object"),
    ],
)
def test_unreadable_input_exits_2_with_one_line(tmp_path: Path, content: str | None, reason: str) -> None:
    path = tmp_path / "input.yaml"
    if content is not None:
        path.write_text(content)
    code, out, err = run("-f", write(tmp_path, "ok.yaml", CLUSTER), "-f", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {path}: {reason}")
    assert err.count("\n") == 1


def test_bad_feature_gate_exits_2(tmp_path: Path) -> None:
    code, _, err = run("-f", write(tmp_path, "a.yaml", CLUSTER), "--feature-gates", "NoSuchGate=true")
    assert code == 2
    assert err.startswith("error: unrecognized feature gate: NoSuchGate")


def test_an_object_needs_a_name(tmp_path: Path) -> None:
    code, out, _ = run(
        "-f", write(tmp_path, "a.yaml", CLUSTER.replace("metadata: {name: demo}", "metadata: {}"))
    )
    assert (code, out) == (
        1,
        "RayCluster/<no name>: metadata.name: Required value: name or generateName is required\n",
    )


def test_a_name_the_api_server_refuses_is_refused_first() -> None:
    # Found by tests/reliability/test_hostile_input.py: a RayCronJob (whose own validation has no name rule)
    # named "UPPER" passed here and was refused by the API server.
    cron = yaml.safe_load((Path(__file__).parents[3] / "examples" / "ray-cronjob.yaml").read_text())
    cron["metadata"]["name"] = "UPPER"
    code, out, _ = run("-f", "-", stdin=yaml.safe_dump(cron))
    assert code == 1
    assert out.startswith(
        'RayCronJob/UPPER: metadata.name: Invalid value: "UPPER": a lowercase RFC 1123 subdomain'
    )


def test_a_value_nested_past_the_api_servers_bound_is_named() -> None:
    cluster = yaml.safe_load(CLUSTER)
    deep: dict[str, object] = {}
    cluster["spec"]["headGroupSpec"]["rayStartParams"] = deep
    for _ in range(150):
        deep["a"] = deep = {}
    code, out, _ = run("-f", "-", stdin=json.dumps(cluster))
    assert code == 1
    assert (
        out
        == f"RayCluster/demo: spec.headGroupSpec.rayStartParams{'.a' * 97}: nested deeper than 100 levels\n"
    )
    too_deep_for_yaml = json.dumps(cluster).replace('"a": {}', '"a": ' + "[" * 5000 + "]" * 5000)
    code, _, err = run("-f", "-", stdin=too_deep_for_yaml)
    assert (code, err) == (2, "error: -: invalid YAML: nested deeper than 100 levels\n")


def test_labels_and_annotations_the_api_server_refuses_are_refused() -> None:
    # Found by tests/reliability/test_hostile_input.py: a label value of 70 characters passed here.
    job = yaml.safe_load(BAD_JOB)
    del job["spec"]["backoffLimit"]
    job["metadata"] = {"name": "nightly", "labels": {"UPPER": "x" * 70}, "annotations": {"bad key": "v"}}
    code, out, _ = run("-f", "-", stdin=yaml.safe_dump(job))
    assert code == 1
    assert [line.split(": Invalid value: ")[0] for line in out.splitlines()] == [
        "RayJob/nightly: metadata.labels",
        "RayJob/nightly: metadata.annotations",
    ]
    assert "must be no more than 63 bytes" in out


def test_names_are_printed_with_control_characters_escaped() -> None:
    # Found by tests/reliability/test_hostile_input.py: a name with \x1e split the output line in two.
    cron = yaml.safe_load((Path(__file__).parents[3] / "examples" / "ray-cronjob.yaml").read_text())
    cron["metadata"]["name"] = "a\x1eb\x1b[31m"
    code, out, _ = run("-f", "-", stdin=yaml.safe_dump(cron))
    assert code == 1
    assert out.startswith("RayCronJob/a\\x1eb\\x1b[31m: metadata.name: Invalid value: ")
    assert out.count("\n") == 1
