"""Listing and entering stored sessions, and the cookies that keep a session entered (upstream's rules)."""

from __future__ import annotations

from http.cookies import SimpleCookie

from kuberay.history import layout
from unit.history.stored import JOB_CLUSTER, SESSION, STANDALONE, Store


def _max_ages(set_cookie_headers: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for header in set_cookie_headers:
        cookie: SimpleCookie = SimpleCookie()
        cookie.load(header)
        for name, morsel in cookie.items():
            found[name] = morsel["max-age"]
    return found


def test_standalone_clusters_omit_their_owner_as_upstream_does(store: Store) -> None:
    with store.client() as client:
        listed = {c["name"]: c for c in client.get("/clusters").json()}
    assert "ownerKind" not in listed[STANDALONE.name] and "ownerName" not in listed[STANDALONE.name]
    assert (listed[JOB_CLUSTER.name]["ownerKind"], listed[JOB_CLUSTER.name]["ownerName"]) == (
        "rayjob",
        "train",
    )


def test_a_rayjobs_cluster_is_entered_by_its_cluster_name_as_a_raycluster(store: Store) -> None:
    with store.client() as client:
        entered = client.get(f"/enter_cluster/team-a/raycluster/{JOB_CLUSTER.name}")
        assert entered.status_code == 200, entered.text
        assert entered.json()["name"] == JOB_CLUSTER.name
        assert client.cookies["owner_kind"] == "rayjob" and client.cookies["owner_name"] == "train"
        assert client.get("/api/jobs/").status_code == 200  # the session answers


def test_kinds_are_not_case_sensitive(store: Store) -> None:
    # A metadata directory named in another case (what a hand-made or older writer may leave).
    upper = layout.ClusterRef("team-b", "svc-xyz", "rayservice", "svc").metadata_key("", SESSION)
    store.storage.put(upper.replace("/rayservice/", "/RayService/"), b"{}")
    with store.client() as client:
        names = [(c["namespace"], c.get("ownerKind")) for c in client.get("/clusters").json()]
        assert ("team-b", "rayservice") in names
        assert client.get("/enter_cluster/team-b/RayService/svc").status_code == 200
    with store.client() as client:
        # Cookies written with the kind as Kubernetes spells it still name the session.
        client.cookies.set("owner_kind", "RayJob")
        client.cookies.set("owner_name", "train")
        client.cookies.set("cluster_name", JOB_CLUSTER.name)
        client.cookies.set("cluster_namespace", "team-a")
        client.cookies.set("session_name", SESSION)
        assert client.get("/api/jobs/").status_code == 200


def test_every_session_request_refreshes_the_cookies(store: Store) -> None:
    with store.client() as client:
        client.get("/enter_cluster/team-a/rayjob/train")
        answered = client.get("/api/jobs/")
        ages = _max_ages(answered.headers.get_list("set-cookie"))
        assert ages == dict.fromkeys(("cluster_name", "cluster_namespace", "session_name", "owner_kind", "owner_name"), "600")  # fmt: skip
        assert answered.cookies["session_name"] == SESSION
