"""The Unsupported-value causes of apps/v1 workload validation, worded as apimachinery's `NotSupported`."""

from __future__ import annotations

from localkube.server.workloadvalidation import validate_workload

SELECTED = {"selector": {"matchLabels": {"app": "a"}}, "template": {"metadata": {"labels": {"app": "a"}}}}


def test_unsupported_values_list_what_is_supported() -> None:
    spec = {
        **SELECTED,
        "template": {**SELECTED["template"], "spec": {"restartPolicy": "Never"}},
        "podManagementPolicy": "Random",
        "updateStrategy": {"type": "Blue"},
    }
    assert [str(cause) for cause in validate_workload("StatefulSet", {"spec": spec}, None)] == [
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
        'spec.podManagementPolicy: Unsupported value: "Random": supported values: "OrderedReady", "Parallel"',
        'spec.updateStrategy.type: Unsupported value: "Blue": supported values: "OnDelete", "RollingUpdate"',
    ]
    deployment = {**SELECTED, "strategy": {"type": "Canary"}}
    assert [str(cause) for cause in validate_workload("Deployment", {"spec": deployment}, None)] == [
        'spec.strategy.type: Unsupported value: "Canary": supported values: "Recreate", "RollingUpdate"'
    ]
