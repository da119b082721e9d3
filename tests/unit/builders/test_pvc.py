from pathlib import Path
from typing import Any

import pytest

from kuberay.api.raycluster import RayCluster
from kuberay.builders import pvc
from support import golden

TESTDATA = Path(__file__).parent / "testdata" / "pvc"


def build(name: str) -> dict[str, Any]:
    return pvc.build_gcs_pvc(RayCluster.parse(golden.load(TESTDATA / f"{name}.input.yaml")))


@pytest.mark.parametrize("case", golden.cases(TESTDATA), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), pvc.build_gcs_pvc(RayCluster.parse(golden.load(case))))


def test_defaults() -> None:
    claim = build("defaults")
    assert claim["metadata"]["name"] == "raycluster-embedded-gcs-pvc"
    assert claim["metadata"]["labels"] == {"ray.io/cluster": "raycluster-embedded"}
    assert claim["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    assert claim["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


def test_retain_has_no_owner() -> None:
    claim = build("retain")
    assert "ownerReferences" not in claim["metadata"]
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"],
        "resources": {"requests": {"storage": "10Gi"}},
        "storageClassName": "fast-ssd",
    }


def test_delete_with_cluster_is_owned() -> None:
    claim = build("delete-with-cluster")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == "0d6ba5a3-0000-4000-8000-000000000503"
    assert claim["spec"]["storageClassName"] == ""


def test_managed_only_for_rocksdb_without_claim_name() -> None:
    def cluster(options: dict[str, Any] | None) -> RayCluster:
        spec: dict[str, Any] = {"headGroupSpec": {"template": {}}}
        if options is not None:
            spec["gcsFaultToleranceOptions"] = options
        return RayCluster.parse({"metadata": {"name": "c"}, "spec": spec})

    assert pvc.needs_managed_pvc(cluster({"backend": "rocksdb"}))
    assert not pvc.needs_managed_pvc(cluster({"backend": "rocksdb", "storage": {"claimName": "mine"}}))
    assert not pvc.needs_managed_pvc(cluster({"redisAddress": "redis:6379"}))
    assert not pvc.needs_managed_pvc(cluster(None))


def test_drift_names_what_cannot_change_in_place() -> None:
    desired = build("retain")
    live = {
        "spec": {
            "accessModes": ["ReadWriteOncePod", "ReadWriteOnce"],
            "resources": {"requests": {"storage": "10240Mi"}},
            "storageClassName": "fast-ssd",
        }
    }
    assert pvc.drift(desired, live) == ""
    live["spec"].update(
        accessModes=["ReadWriteOnce"], resources={"requests": {"storage": "5Gi"}}, storageClassName="standard"
    )
    assert pvc.drift(desired, live) == (
        "requested size 10Gi != current 5Gi; storageClassName fast-ssd != current standard; "
        "accessModes [ReadWriteOnce ReadWriteOncePod] != current [ReadWriteOnce]"
    )
    # No class asked for: the class the cluster resolved is not drift.
    assert (
        pvc.drift(build("defaults"), {"spec": {**build("defaults")["spec"], "storageClassName": "std"}}) == ""
    )
