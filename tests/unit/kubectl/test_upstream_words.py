"""The plugin's words where upstream's tests pin them, without a cluster: `log`'s target, node-type and
directory lines and errors (kubectl-plugin/pkg/cmd/log/log_test.go), its GKE link and warnings on stderr,
`get`'s unknown words (kubectl-plugin/pkg/cmd/get/get.go), and `get job|service` headers against the CRDs'
printer columns."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from kuberay.api import crd
from kuberay.kubectl import cli, listing, log
from kuberay.kubectl.kube import Kube, KubeFlags, PluginError, TargetError

QUERY = (
    "https://console.cloud.google.com/logs/query;query=resource.type%3D%22k8s_container%22%0A"
    "resource.labels.namespace_name%3D%22default%22%0Alabels.%22k8s-pod%2Fray_io%2Fcluster%22%3D%22test-cluster%22"
    "%0Alabels.%22k8s-pod%2Fray_io%2Fis-ray-node%22%3D%22yes%22"
)


def plugin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """`kubectl ray ARGS` through the plugin's entry point: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["kubectl-ray", *args])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


@pytest.mark.parametrize(
    ("arg", "target"),
    [("test-raycluster", ("raycluster", "test-raycluster")), ("rayCluster/c", ("raycluster", "c")),
     ("rayservice/s", ("rayservice", "s")), ("rayJob/test-rayJob", ("rayjob", "test-rayJob"))],
)  # fmt: skip
def test_log_targets(arg: str, target: tuple[str, str]) -> None:
    assert log.parse_target(arg) == target


@pytest.mark.parametrize(
    ("arg", "message"),
    [("invalid-type/test-resource", "unsupported resource type: invalid-type"),
     ("/test-resource", "unsupported resource type: "), ("raycluster/", "invalid resource type/name: raycluster/")],
)  # fmt: skip
def test_log_names_only_the_unsupported_type(arg: str, message: str) -> None:
    with pytest.raises(TargetError) as e:
        log.parse_target(arg)
    assert str(e.value) == message


def test_log_says_the_type_alone_on_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = plugin(monkeypatch, capsys, "log", "invalid-type/test-resource")
    assert code == 2 and err.endswith("Error: unsupported resource type: invalid-type\n")


def test_log_checks_the_directory_in_upstreams_words(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = plugin(monkeypatch, capsys, "log", "fake-cluster", "--out-dir", "randomPath-here", "--node-type", "head")  # fmt: skip
    assert (code, out) == (1, "Command set to retrieve only head node logs.\n")
    assert (
        err
        == "Error: Directory does not exist. Failed with: stat randomPath-here: no such file or directory\n"
    )
    (tmp_path / "a-file").write_text("")
    with pytest.raises(
        PluginError, match="^Path is not a directory. Please input a directory and try again$"
    ):
        log.prepare("worker", None, "a-file", "fake-cluster")
    assert capsys.readouterr().out == "Command set to retrieve only worker node logs.\n"
    assert log.prepare("all", None, str(tmp_path), "fake-cluster") == (tmp_path, False)


def test_log_without_a_directory_makes_one_from_the_name_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = plugin(
        monkeypatch, capsys, "log", "fake-cluster", "--kubeconfig", str(tmp_path / "none")
    )
    assert out == (
        "Command set to retrieve both head and worker node logs.\n"
        "No output directory specified, creating dir under current directory using resource name.\n"
    )
    # The cluster could not be reached: the directory made for it, still empty, is gone again.
    assert code == 1 and err.startswith("Error: cannot load Kubernetes configuration")
    assert not (tmp_path / "fake-cluster").exists()
    assert log.prepare("head", None, None, "fake-cluster") == (Path("fake-cluster"), True)
    assert (tmp_path / "fake-cluster").is_dir()


def test_log_link_checks_come_before_the_cluster(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = plugin(monkeypatch, capsys, "log", "c", "--link", "aws")
    assert (code, out, err) == (
        1, "Command set to retrieve both head and worker node logs.\n",
        'Error: unsupported link type "aws", only "gke" is supported\n',
    )  # fmt: skip
    code, _, err = plugin(monkeypatch, capsys, "log", "c", "--link", "gke", "--out-dir", str(tmp_path))
    assert (code, err) == (1, "Error: --out-dir is incompatible with --link\n")


class Pods:
    """The one call `--link gke` makes: the cluster's head pods, each given by its containers' names."""

    def __init__(self, *heads: list[str]) -> None:
        self.items = [{"metadata": {"name": f"head-{i}"}, "spec": {"containers": [{"name": c} for c in containers]}}
                      for i, containers in enumerate(heads)]  # fmt: skip
        self.selectors: list[str] = []

    async def list_all(self, resource: Any, namespace: str, label_selector: str) -> Any:
        self.selectors.append(label_selector)
        return SimpleNamespace(items=self.items)


def link(capsys: pytest.CaptureFixture[str], pods: Pods, context: str) -> tuple[str, str]:
    kube = Kube(pods, "default", False, context)  # type: ignore[arg-type]
    asyncio.run(log.logs(kube, KubeFlags(), "raycluster", "test-cluster", None, "all"))
    out, err = capsys.readouterr()
    return out, err


GKE = "gke_my-project_us-central1-a_my-cluster"
NO_FLUENTBIT = "Warning: The head pod does not have a 'fluentbit' container. Logs might not be exported to Google Cloud Logging.\n"
NOT_GKE = "Warning: The current kubectl context does not appear to be a GKE cluster. The generated link may not work.\n"


def test_gke_link_warns_on_stderr_as_upstream(capsys: pytest.CaptureFixture[str]) -> None:
    with_fluentbit = Pods(["ray-head", "fluentbit"])
    assert link(capsys, with_fluentbit, GKE) == (f"{QUERY}?project=my-project\n", "")
    assert with_fluentbit.selectors == ["ray.io/cluster=test-cluster,ray.io/node-type=head"]
    assert link(capsys, Pods(["ray-head"]), GKE) == (f"{QUERY}?project=my-project\n", NO_FLUENTBIT)
    assert link(capsys, Pods(), "minikube") == (f"{QUERY}\n", NOT_GKE)
    assert link(capsys, Pods(["ray-head"]), "kind-kind") == (f"{QUERY}\n", NO_FLUENTBIT + NOT_GKE)


@pytest.mark.parametrize("group", ["get", "create", "scale"])
def test_unknown_words_after_a_group_are_named_then_its_help(group: str) -> None:
    result = CliRunner().invoke(cli.ray, [group, "invalid-type", "-n", "ns", "more"])
    assert result.exit_code == 0, result.output
    first, rest = result.output.split("\n", 1)
    assert first == 'unknown command(s) "invalid-type more"'
    assert rest.startswith("Usage: ") and f" {group} [OPTIONS] [COMMAND] [ARGS]..." in rest.split("\n", 1)[0]


def printer_columns(kind: str) -> list[str]:
    [manifest] = [m for m in crd.crds() if m["spec"]["names"]["kind"] == kind]
    return [c["name"] for c in manifest["spec"]["versions"][0]["additionalPrinterColumns"]]


@pytest.mark.parametrize(("kind", "shown"), [("RayJob", listing.JOBS), ("RayService", listing.SERVICES)])
def test_get_job_and_service_begin_with_their_crds_printer_columns(kind: str, shown: listing.Listing) -> None:
    columns = printer_columns(kind)
    assert [h.lower() for h in shown.headers[:2]] == ["name", "namespace"]
    assert [h.lower() for h in shown.headers[2 : 2 + len(columns)]] == columns
    assert not {h.lower() for h in shown.wide_headers} & set(columns)
