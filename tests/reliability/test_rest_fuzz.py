"""localkube's REST layer fuzzed by schemathesis from localkube's own OpenAPI v3 documents (`/openapi/v3/...`):
the operations of a few group-versions, their path parameters, query parameters and bodies generated from
the published schemas, sent over HTTPS with the admin's token.

Properties: no 5xx, no hang (a bounded timeout per request), every refusal is a Status with a message, and
every 422 names its fields. Writes stay in the test's namespace: operations on cluster-scoped paths are
only read (the session's localkube is shared). Derandomized, without shrinking, bounded per document; the
catalogue of (document, method, status) is printed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reliability.hostile import Catalogue, named_fields
from support.localkube_process import LocalKubeProcess

DOCUMENTS = {  # group-version: examples per document
    "apis/ray.io/v1": 60,
    "api/v1": 80,
    "apis/apps/v1": 30,
    "apis/batch/v1": 20,
    "apis/rbac.authorization.k8s.io/v1": 20,
    "apis/coordination.k8s.io/v1": 10,
}


@pytest.fixture
def catalogue() -> Iterator[Catalogue]:
    found = Catalogue("schemathesis over localkube's OpenAPI (document method x status)")
    yield found
    found.report()


@pytest.mark.parametrize("document", list(DOCUMENTS))
def test_the_rest_layer_answers_every_generated_request_without_a_5xx(
    localkube: LocalKubeProcess, namespace: str, document: str, catalogue: Catalogue
) -> None:
    with localkube.client(timeout=30) as api:
        published = api.get(f"/openapi/v3/{document}")
        published.raise_for_status()
    schema = schemathesis.openapi.from_dict(published.json())
    headers = {"Authorization": f"Bearer {localkube.token}"}

    def allowed(operation: schemathesis.APIOperation) -> bool:
        return "{namespace}" in operation.path or operation.method.upper() == "GET"

    strategies = [o.as_strategy() for o in (r.ok() for r in schema.get_all_operations()) if allowed(o)]
    assert strategies, document

    @settings(
        max_examples=DOCUMENTS[document],
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate),
    )
    @given(case=st.one_of(strategies))
    def fuzz(case: schemathesis.Case) -> None:
        if "namespace" in (case.path_parameters or {}):
            case.path_parameters["namespace"] = namespace
        with requests.Session() as session:
            reply = case.call(base_url=localkube.url, headers=headers, verify=str(localkube.ca_cert), timeout=10, session=session)  # fmt: skip
        catalogue.add(f"{document} {case.method}", str(reply.status_code))
        where = f"{case.method} {case.formatted_path} {case.query} {str(case.body)[:300]}"
        assert reply.status_code < 500, (where, reply.text[:500])
        if reply.status_code >= 400:
            status = reply.json()
            assert status.get("kind") == "Status" and status.get("message"), (where, reply.text[:500])
            if reply.status_code == 422:
                assert named_fields(status), (where, status)

    fuzz()
