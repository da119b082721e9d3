from pathlib import Path
from typing import Any

import pytest

from kuberay.api.raycluster import RayCluster
from kuberay.builders import ingress
from support import golden

TESTDATA = Path(__file__).parent / "testdata" / "ingress"


@pytest.mark.parametrize("case", golden.cases(TESTDATA), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), ingress.build_ingress(RayCluster.parse(golden.load(case))))


def build(name: str) -> dict[str, Any]:
    return ingress.build_ingress(RayCluster.parse(golden.load(TESTDATA / f"{name}.input.yaml")))


def test_defaults() -> None:
    ing = build("defaults")
    assert ing["metadata"]["name"] == "raycluster-ingress-head-ingress"
    assert ing["metadata"]["labels"] == {
        "ray.io/cluster": "raycluster-ingress",
        "ray.io/identifier": "raycluster-ingress-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert "annotations" not in ing["metadata"] and "ingressClassName" not in ing["spec"]
    assert ing["spec"]["rules"] == [
        {
            "http": {
                "paths": [
                    {
                        "path": "/",
                        "pathType": "Prefix",
                        "backend": {
                            "service": {"name": "raycluster-ingress-head-svc", "port": {"number": 8265}}
                        },
                    }
                ]
            }
        }
    ]


def test_options_and_ingress_class() -> None:
    ing = build("options-and-class")
    assert ing["spec"]["ingressClassName"] == "nginx"
    assert ing["metadata"]["annotations"] == {"nginx.ingress.kubernetes.io/rewrite-target": "/$1"}
    rule = ing["spec"]["rules"][0]
    assert rule["host"] == "ray.example.com"
    path = rule["http"]["paths"][0]
    assert (path["path"], path["pathType"]) == ("/ray/(.*)", "Exact")
    assert path["backend"]["service"] == {"name": "my-head", "port": {"number": 9265}}
    assert ing["spec"]["tls"] == [{"hosts": ["ray.example.com"], "secretName": "ray-tls"}]


def test_long_name_is_clipped_from_the_front() -> None:
    ing = build("long-name")
    assert ing["metadata"]["name"] == "rname-that-goes-on-and-on-and-on-x1ab-head-ingress"
    assert len(ing["metadata"]["name"]) == 50
