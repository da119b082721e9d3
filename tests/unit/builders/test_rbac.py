from pathlib import Path
from typing import Any

import pytest

from kuberay.api.raycluster import RayCluster
from kuberay.builders import rbac
from support import golden

TESTDATA = Path(__file__).parent / "testdata" / "rbac"


def build(path: Path) -> list[dict[str, Any]]:
    return list(rbac.build_autoscaler_rbac(RayCluster.parse(golden.load(path))))


@pytest.mark.parametrize("case", golden.cases(TESTDATA), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), build(case))


def test_default_names_labels_and_rules() -> None:
    account, role, binding = build(TESTDATA / "default-service-account.input.yaml")
    assert [o["kind"] for o in (account, role, binding)] == ["ServiceAccount", "Role", "RoleBinding"]
    assert {o["metadata"]["name"] for o in (account, role, binding)} == {"raycluster-autoscaler"}
    for obj in (account, role, binding):
        assert obj["metadata"]["labels"] == {
            "ray.io/cluster": "raycluster-autoscaler",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator",
        }
        assert obj["metadata"]["ownerReferences"][0]["name"] == "raycluster-autoscaler"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
        {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
        {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "raycluster-autoscaler",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "raycluster-autoscaler", "namespace": "default"}
    ]


def test_user_service_account_is_clipped_everywhere() -> None:
    cluster = RayCluster.parse(golden.load(TESTDATA / "long-names.input.yaml"))
    account, role, binding = rbac.build_autoscaler_rbac(cluster)
    assert rbac.user_service_account(cluster)
    assert rbac.service_account_name(cluster) == "team-a-2-the-service-account-name-for-the-ray-autoscaler0"
    # The last 50 characters, then the leading digit becomes "r".
    assert account["metadata"]["name"] == "r-the-service-account-name-for-the-ray-autoscaler0"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "ray-system"}
    ]
    assert role["metadata"]["name"] == binding["roleRef"]["name"] == "autoscaled"
