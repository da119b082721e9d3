"""The plugin's pure parts: kubectl's table layout and ages, Go-style YAML, and create cluster's object
against upstream's own expected output (kubectl-plugin/pkg/util/generation/generation_test.go)."""

from __future__ import annotations

import datetime

import yaml

from kuberay.kubectl import generation, printer


def test_table_follows_kubectls_tabwriter() -> None:
    text = printer.table(["Name", "Cpus", "Worker Group"], [["a", "2", "g"], ["longer-name", "10", ""]])
    # Each column is its widest cell plus 3, at least 6; the last column is not padded.
    assert text == "NAME          CPUS   WORKER GROUP\na             2      g\nlonger-name   10     \n"
    assert printer.table(["Name"], []) == ""


def test_age_is_human_duration() -> None:
    now = datetime.datetime(2026, 1, 10, tzinfo=datetime.UTC)

    def created(**delta: float) -> dict[str, object]:
        stamp = (now - datetime.timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"metadata": {"creationTimestamp": stamp}}

    assert printer.age(created(seconds=119), now) == "119s"
    assert printer.age(created(minutes=5, seconds=3), now) == "5m3s"
    assert printer.age(created(hours=3, minutes=2), now) == "3h2m"
    assert printer.age(created(days=3, hours=4), now) == "3d4h"
    assert printer.age({"metadata": {}}, now) == "<unknown>"


def test_yaml_double_quotes_what_would_not_read_as_a_string() -> None:
    assert printer.to_yaml({"b": "2", "a": "4Gi", "c": "true"}) == 'a: 4Gi\nb: "2"\nc: "true"\n'


def test_raycluster_matches_upstreams_expected_object() -> None:
    config = generation.ClusterConfig(
        labels={"purple": "finch", "red-tailed": "hawk"},
        annotations={"american": "goldfinch", "piping": "plover"},
        head=generation.Head(cpu="1", memory="5Gi", gpu="1", ray_start_params={"num-cpus": "0"}),
        worker_groups=[
            generation.WorkerGroup(name="default-group", replicas=3, num_of_hosts=2, cpu="2", memory="10Gi")
        ],
        autoscaler=generation.Autoscaler(version="v1"),
    )
    image = "rayproject/ray:2.52.0"
    expected = f"""apiVersion: ray.io/v1
kind: RayCluster
metadata:
  annotations:
    american: goldfinch
    piping: plover
  labels:
    purple: finch
    red-tailed: hawk
  name: test-ray-cluster
  namespace: default
spec:
  enableInTreeAutoscaling: true
  autoscalerOptions:
    version: v1
  headGroupSpec:
    rayStartParams:
      num-cpus: "0"
    template:
      spec:
        containers:
        - image: {image}
          name: ray-head
          ports:
          - containerPort: 6379
            name: gcs-server
          - containerPort: 8265
            name: dashboard
          - containerPort: 10001
            name: client
          resources:
            limits:
              memory: 5Gi
              nvidia.com/gpu: "1"
            requests:
              cpu: "1"
              memory: 5Gi
              nvidia.com/gpu: "1"
  rayVersion: 2.52.0
  workerGroupSpecs:
  - groupName: default-group
    replicas: 3
    numOfHosts: 2
    template:
      spec:
        containers:
        - image: {image}
          name: ray-worker
          resources:
            limits:
              memory: 10Gi
            requests:
              cpu: "2"
              memory: 10Gi
"""
    assert generation.raycluster(config, "test-ray-cluster", "default") == yaml.safe_load(expected)


def test_config_file_defaults_and_group_names() -> None:
    config = generation.parse_config({"head": {"gpu": 1}, "worker-groups": [{"cpu": 3}, {"memory": "2Gi"}]})
    assert (config.head.cpu, config.head.memory, config.head.gpu) == ("2", "4Gi", "1")
    cluster = generation.raycluster(config, "c", "ns")
    assert [g["groupName"] for g in cluster["spec"]["workerGroupSpecs"]] == [
        "default-group",
        "default-group-1",
    ]
