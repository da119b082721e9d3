from pathlib import Path

import yaml

from kuberay.local import monitoring


def pod(
    name: str, node_type: str | None, ip: str | None, ports: list[dict[str, object]]
) -> dict[str, object]:
    labels = {"ray.io/cluster": "c"} | ({"ray.io/node-type": node_type} if node_type else {})
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {"containers": [{"name": "ray", "ports": ports}]},
        "status": {"podIP": ip} if ip else {},
    }


def test_target_groups_are_the_ray_pods_metrics_ports_with_an_address() -> None:
    ports = [{"name": "metrics", "containerPort": 8080}, {"name": "dashboard", "containerPort": 8265}, {"name": "as-metrics", "containerPort": 44217}]  # fmt: skip
    groups = monitoring.target_groups(
        [
            pod("head", "head", "10.0.0.1", ports),
            pod("pending", "worker", None, ports),
            pod("other", None, "10.0.0.3", ports),
        ]  # fmt: skip
    )
    assert [g["targets"] for g in groups] == [["10.0.0.1:8080"], ["10.0.0.1:44217"]]
    assert groups[0]["labels"] == {
        "namespace": "ns",
        "pod": "head",
        "ray_io_cluster": "c",
        "ray_io_node_type": "head",
    }


def test_configuration_scrapes_the_operator_and_the_targets_file(tmp_path: Path) -> None:
    targets = monitoring.write_configuration(tmp_path, "127.0.0.1:9000")
    assert targets.read_text() == "[]"
    config = yaml.safe_load((tmp_path / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["kuberay-operator"]["static_configs"] == [{"targets": ["127.0.0.1:9000"]}]
    assert jobs["ray-pods"]["file_sd_configs"][0]["files"] == [str(targets)]
    assert "--config.file=" + str(tmp_path / "prometheus.yml") in monitoring.command(
        "prometheus", tmp_path, 1
    )
