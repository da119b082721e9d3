from pathlib import Path
from typing import Any

import pytest

from kuberay.api.raycluster import RayCluster
from kuberay.builders import networkpolicy
from support import golden

TESTDATA = Path(__file__).parent / "testdata" / "networkpolicy"
SAME_CLUSTER = {"podSelector": {"matchLabels": {"ray.io/cluster": "raycluster-deny-all"}}}


def build(name: str) -> list[dict[str, Any]]:
    return networkpolicy.build_network_policies(
        RayCluster.parse(golden.load(TESTDATA / f"{name}.input.yaml"))
    )


@pytest.mark.parametrize("case", golden.cases(TESTDATA), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(
        golden.output_for(case), networkpolicy.build_network_policies(RayCluster.parse(golden.load(case)))
    )


def test_deny_all() -> None:
    head, cpu, gpu = build("deny-all")
    assert [p["metadata"]["name"] for p in (head, cpu, gpu)] == [
        "raycluster-deny-all-head",
        "raycluster-deny-all-workers-cpu",
        "raycluster-deny-all-workers-gpu",
    ]
    assert head["metadata"]["labels"] == {
        "ray.io/cluster": "raycluster-deny-all",
        "ray.io/group": "headgroup",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert cpu["metadata"]["labels"]["ray.io/group"] == "cpu"
    assert head["spec"]["podSelector"] == {
        "matchLabels": {"ray.io/cluster": "raycluster-deny-all", "ray.io/node-type": "head"}
    }
    assert gpu["spec"]["podSelector"]["matchLabels"] == {
        "ray.io/cluster": "raycluster-deny-all",
        "ray.io/node-type": "worker",
        "ray.io/group": "gpu",
    }
    for policy in (head, cpu, gpu):
        assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
        assert policy["spec"]["ingress"][0] == {"from": [SAME_CLUSTER]}
        assert policy["spec"]["egress"][0] == {"to": [SAME_CLUSTER]}
        assert policy["metadata"]["ownerReferences"][0]["name"] == "raycluster-deny-all"
    assert len(head["spec"]["ingress"]) == 2 and head["spec"]["ingress"][1]["ports"] == [{"port": 8080}]
    assert head["spec"]["egress"][1]["ports"][0] == {"port": 53, "protocol": "UDP"}
    assert cpu["spec"]["egress"][1]["ports"] == [{"port": 53, "protocol": "UDP"}]
    assert cpu["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}]
    assert (
        gpu["spec"]["egress"][1]["to"] == [{"ipBlock": {"cidr": "0.0.0.0/0"}}]
        and len(gpu["spec"]["egress"]) == 2
    )


def test_single_direction_modes() -> None:
    head, workers = build("deny-all-ingress")
    for policy in (head, workers):
        assert policy["spec"]["policyTypes"] == ["Ingress"] and "egress" not in policy["spec"]
    assert workers["spec"]["ingress"][1] == {"from": [{"podSelector": {"matchLabels": {"app": "client"}}}]}
    (head,) = build("deny-all-egress")
    assert head["spec"]["policyTypes"] == ["Egress"] and "ingress" not in head["spec"]
    assert head["spec"]["egress"] == [
        {"to": [{"podSelector": {"matchLabels": {"ray.io/cluster": "egress-only"}}}]}
    ]


def test_rayjob_submitter_may_reach_the_dashboard() -> None:
    (head,) = build("rayjob-submitter")
    assert head["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert head["spec"]["ingress"][1] == {
        "from": [
            {
                "podSelector": {
                    "matchLabels": {
                        "ray.io/originated-from-cr-name": "rayjob-sample",
                        "ray.io/originated-from-crd": "RayJob",
                    }
                }
            }
        ],
        "ports": [{"protocol": "TCP", "port": 8266}],
    }


@pytest.mark.parametrize(
    "change",
    [
        {"labels": {"ray.io/job-submission-mode": "SidecarMode"}},
        {"ownerReferences": []},
        {
            "ownerReferences": [
                {"apiVersion": "other.io/v1", "kind": "RayJob", "name": "x", "uid": "u", "controller": True}
            ]
        },
    ],
)
def test_no_submitter_rule_without_a_k8s_job_mode_rayjob_owner(change: dict[str, Any]) -> None:
    raw = golden.load(TESTDATA / "rayjob-submitter.input.yaml")
    raw["metadata"].update(change)
    (head,) = networkpolicy.build_network_policies(RayCluster.parse(raw))
    assert head["spec"]["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": "rayjob-sample-x7k2p"}}}]}
    ]


@pytest.mark.parametrize(("param", "port"), [("9000", 9000), ("not-a-port", 8265), ("99999999999", 8265)])
def test_dashboard_port_param(param: str, port: int) -> None:
    raw = golden.load(TESTDATA / "rayjob-submitter.input.yaml")
    raw["spec"]["headGroupSpec"]["rayStartParams"]["dashboard-port"] = param
    (head,) = networkpolicy.build_network_policies(RayCluster.parse(raw))
    assert head["spec"]["ingress"][1]["ports"] == [{"protocol": "TCP", "port": port}]


def test_no_config_no_policies() -> None:
    raw = golden.load(TESTDATA / "deny-all.input.yaml")
    del raw["spec"]["networkPolicy"]
    assert networkpolicy.build_network_policies(RayCluster.parse(raw)) == []


def test_with_default_protocols() -> None:
    head = build("deny-all")[0]
    normalized = networkpolicy.with_default_protocols(head)
    assert normalized["spec"]["ingress"][1]["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert normalized["spec"]["egress"][1]["ports"][0] == {"port": 53, "protocol": "UDP"}
    assert head["spec"]["ingress"][1]["ports"] == [{"port": 8080}]  # the original is untouched
