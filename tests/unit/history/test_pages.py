"""Pages of a stored session as Ray's frontend reads them: Ray's empty shapes where a session never ran
Serve, Ray Data or placement groups, upstream's keys, and stored answers mended where Ray's page needs it."""

from __future__ import annotations

from starlette.testclient import TestClient

from unit.history.stored import JOB_CLUSTER, Store

PG_URI = "/api/v0/placement_groups?detail=1&limit=10000"  # what Ray's frontend asks


def test_a_session_that_never_ran_serve_data_or_placement_groups_answers_rays_empty_shapes(
    store: Store,
) -> None:
    with store.client() as client:
        client.get("/enter_cluster/team-a/raycluster/plain")
        assert client.get("/api/serve/applications/").json() == {"applications": {}}
        assert client.get("/api/data/datasets/02000000").json() == {"datasets": []}
        groups = client.get(PG_URI)
        assert groups.status_code == 200
        listed = groups.json()["data"]["result"]
        assert (listed["total"], listed["result"]) == (0, [])
        assert client.get("/api/v0/cluster_metadata").status_code == 404  # no empty shape is Ray's


def test_placement_groups_are_read_under_upstreams_key_and_given_bundles(
    store: Store, job_client: TestClient
) -> None:
    groups = [{"placement_group_id": "pg1", "state": "CREATED", "bundles": [{"bundle_id": "b"}]},
              {"placement_group_id": "pg2", "state": "REMOVED"}]  # fmt: skip
    answer = {"result": True, "msg": "", "data": {"result": {"total": 2, "result": groups}}}
    store.answer(JOB_CLUSTER, "restful__api__v0__placement_groups?detail=1&limit=10000", answer)
    served = job_client.get(PG_URI).json()["data"]["result"]["result"]
    assert [(g["placement_group_id"], g["bundles"]) for g in served] == [
        ("pg1", [{"bundle_id": "b"}]),
        ("pg2", []),
    ]


def test_placement_groups_stored_under_the_path_alone_are_still_read_and_given_bundles(
    store: Store, job_client: TestClient
) -> None:
    answer = {"result": True, "msg": "", "data": {"result": {"result": [{"placement_group_id": "old"}]}}}
    store.answer(JOB_CLUSTER, "restful__api__v0__placement_groups", answer)
    served = job_client.get(PG_URI).json()["data"]["result"]["result"]
    assert [(g["placement_group_id"], g["bundles"]) for g in served] == [("old", [])]
