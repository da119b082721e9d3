"""deploy/ (rendered by kubectl's kustomize, as `kubectl apply -k deploy/` would) and the Containerfile:
every object validates, every generated CRD is installed, the operator runs its console script."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import yaml

from install.rendered import find, kinds, load_all, validate_all

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


def test_kustomization_renders_valid_objects() -> None:
    rendered = subprocess.run(
        ["kubectl", "kustomize", str(REPO / "deploy")], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    objects = load_all(rendered)
    validate_all(objects)
    crds = {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}
    generated = {
        load_all(p.read_text())[0]["metadata"]["name"] for p in (REPO / "deploy" / "crds").glob("*.yaml")
    }
    assert crds == generated
    assert {("Namespace", "ray-system"), ("ServiceAccount", "kuberay-operator"), ("ClusterRole", "kuberay-operator"),
            ("ClusterRoleBinding", "kuberay-operator"), ("Role", "kuberay-operator-leader-election"),
            ("RoleBinding", "kuberay-operator-leader-election"), ("Deployment", "kuberay-operator"),
            ("Service", "kuberay-operator")} <= kinds(objects)  # fmt: skip
    namespaced = [
        o for o in objects if o["kind"] in ("ServiceAccount", "Role", "RoleBinding", "Deployment", "Service")
    ]
    assert {o["metadata"]["namespace"] for o in namespaced} == {"ray-system"}
    deployment = find(objects, "Deployment")
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["command"][0] in SCRIPTS and container["image"] == "kuberay:latest"
    assert pod["spec"]["serviceAccountName"] == "kuberay-operator"
    service = find(objects, "Service")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["metadata"]["annotations"]["prometheus.io/port"] == "8080"


def test_containerfile_entrypoint_is_the_operators_console_script() -> None:
    text = (REPO / "Containerfile").read_text()
    # The last stage is the default image (the operator's); an earlier one (the History Server's collector)
    # is built with --target. Each runs a console script of ours.
    entrypoints = [yaml.safe_load(e) for e in re.findall(r"^ENTRYPOINT (.+)$", text, re.MULTILINE)]
    assert entrypoints[-1] == ["kuberay-operator"]
    assert all(len(e) == 1 and e[0] in SCRIPTS for e in entrypoints), entrypoints
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.MULTILINE):
        for path in source.split():
            assert (REPO / path).exists(), f"Containerfile copies {path}, which does not exist"


def test_charts_reference_the_generated_files() -> None:
    chart = REPO / "helm-chart" / "kuberay-operator"
    assert (chart / "crds").resolve() == (REPO / "deploy" / "crds").resolve()
    assert (chart / "files" / "operator-rules.yaml").resolve() == (
        REPO / "deploy" / "rbac" / "role.yaml"
    ).resolve()
