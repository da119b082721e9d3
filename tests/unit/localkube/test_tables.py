from typing import Any

import pytest

from localkube.server.tables import jsonpath_values

CERTIFICATE = {
    "spec": {"dnsNames": ["localhost", "head.ns.svc"], "isCA": True},
    "status": {
        "conditions": [
            {"type": "Issuing", "status": "False", "observedGeneration": 2},
            {
                "type": "Ready",
                "status": "True",
                "message": "Certificate is up to date",
                "observedGeneration": 2,
            },
        ]
    },
}


@pytest.mark.parametrize(
    ("path", "values"),
    [
        ('.status.conditions[?(@.type == "Ready")].status', ["True"]),  # cert-manager's READY column
        (".status.conditions[?(@.type=='Ready')].message", ["Certificate is up to date"]),
        ('.status.conditions[?(@.type != "Ready")].type', ["Issuing"]),
        (".status.conditions[?(@.observedGeneration == 2)].type", ["Issuing", "Ready"]),
        ('.status.conditions[?(@.type == "Missing")].status', []),
        ("{.spec.dnsNames[*]}", ["localhost", "head.ns.svc"]),
        (".spec.dnsNames[-1]", ["head.ns.svc"]),
        (".spec.isCA", [True]),
        ('.spec[?(@.x == "y")]', []),  # a filter on an object, not a list, reaches nothing
    ],
)
def test_jsonpath_values(path: str, values: list[Any]) -> None:
    assert jsonpath_values(CERTIFICATE, path) == values


def test_filter_literal_true_matches_a_boolean() -> None:
    items = {"items": [{"name": "a", "ready": True}, {"name": "b", "ready": False}]}
    assert jsonpath_values(items, ".items[?(@.ready == true)].name") == ["a"]
