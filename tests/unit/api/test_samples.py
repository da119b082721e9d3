"""Every ray.io object in upstream's samples parses into its model and dumps back unchanged."""

import json
from typing import Any

import pytest

from kuberay.api.meta import KubeObject
from kuberay.api.raycluster import RayCluster
from kuberay.api.raycronjob import RayCronJob
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService
from support.shared import UPSTREAM_SAMPLES, yaml_documents

SAMPLES = UPSTREAM_SAMPLES
MODELS: dict[str, type[KubeObject]] = {
    m.model_fields["kind"].default: m for m in (RayCluster, RayJob, RayService, RayCronJob)
}


def _ray_objects() -> list[Any]:
    params = []
    for path in sorted(SAMPLES.rglob("*.yaml")):
        for index, doc in enumerate(yaml_documents(path)):
            if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith("ray.io/"):
                params.append(pytest.param(doc, id=f"{path.relative_to(SAMPLES)}#{index}"))
    return params


SAMPLE_OBJECTS = _ray_objects()


def test_samples_cover_every_kind() -> None:
    assert {p.values[0]["kind"] for p in SAMPLE_OBJECTS} == set(MODELS)


@pytest.mark.parametrize("obj", SAMPLE_OBJECTS)
def test_sample_round_trips(obj: dict[str, Any]) -> None:
    model = MODELS[obj["kind"]].parse(obj)
    assert model.name == obj["metadata"].get("name", "")
    # Compared as JSON text so that a changed type (1 -> 1.0, "1" -> 1) fails too.
    assert json.dumps(model.dump(), sort_keys=True) == json.dumps(obj, sort_keys=True)
