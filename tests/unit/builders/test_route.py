from pathlib import Path
from typing import Any

import pytest

from kuberay.api.raycluster import RayCluster
from kuberay.builders import route
from support import golden

TESTDATA = Path(__file__).parent / "testdata" / "route"


@pytest.mark.parametrize("case", golden.cases(TESTDATA), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), route.build_route(RayCluster.parse(golden.load(case))))


def build(name: str) -> dict[str, Any]:
    return route.build_route(RayCluster.parse(golden.load(TESTDATA / f"{name}.input.yaml")))


def test_route_copies_all_annotations_and_targets_the_dashboard() -> None:
    r = build("defaults")
    assert r["apiVersion"] == "route.openshift.io/v1"
    assert r["metadata"]["name"] == "raycluster-route-head-route"
    assert r["metadata"]["annotations"] == {
        "kubernetes.io/ingress.class": "openshift-default",
        "haproxy.router.openshift.io/timeout": "5m",
    }
    assert r["metadata"]["labels"]["ray.io/identifier"] == "raycluster-route-head"
    assert r["spec"] == {
        "to": {"kind": "Service", "name": "raycluster-route-head-svc", "weight": 100},
        "port": {"targetPort": 8266},
        "wildcardPolicy": "None",
    }


def test_long_name_keeps_the_first_characters() -> None:
    r = build("long-name")
    assert r["metadata"]["name"] == "raycluster-with-quite-a-long-nam"  # 51 - len("team-analytics-prod")
    assert r["spec"]["to"]["name"] == "custom-head"


def test_route_name_repairs_a_leading_digit() -> None:
    assert route.route_name("1abc", "ns") == "rabc-head-route"
