"""localkube's security, seen through the real kubectl and plain HTTP: who is refused (401), impersonation
checked by RBAC with the API server's denials, and a data directory only its owner can read."""

from __future__ import annotations

import json
import shutil
import stat

import httpx
import pytest

from conformance.support import run_kubectl
from support.localkube_process import LocalKubeProcess

if shutil.which("kubectl") is None:
    pytest.skip("kubectl is not on the PATH", allow_module_level=True)


def test_requests_without_a_token_or_with_a_wrong_one_are_unauthorized(localkube: LocalKubeProcess) -> None:
    anonymous = httpx.get(f"{localkube.url}/api/v1/namespaces", verify=localkube.ssl_context(), timeout=10)
    assert anonymous.status_code == 401
    assert anonymous.json()["reason"] == "Unauthorized"
    wrong = httpx.get(
        f"{localkube.url}/api/v1/namespaces",
        headers={"Authorization": "Bearer not-the-token"},
        verify=localkube.ssl_context(),
        timeout=10,
    )
    assert wrong.status_code == 401
    refused = run_kubectl(localkube, "--token", "wrong", "get", "pods", check=False)
    assert refused.returncode != 0
    # kubectl 1.32's words for a 401 from any API server.
    assert "error: You must be logged in to the server" in refused.stderr
    # Probes stay open, as kubelets and load balancers call them without credentials.
    assert httpx.get(f"{localkube.url}/readyz", verify=localkube.ssl_context(), timeout=10).status_code == 200


def test_the_admin_acting_as_another_user_has_that_users_rights(localkube: LocalKubeProcess, namespace: str) -> None:  # fmt: skip
    denied = run_kubectl(localkube, "--as", "bob", "get", "pods", "-n", namespace, check=False)
    assert denied.returncode != 0
    assert (
        f'User "bob" cannot list resource "pods" in API group "" in the namespace "{namespace}"'
        in denied.stderr
    )
    whoami = run_kubectl(
        localkube, "--as", "bob", "--as-group", "devs", "--as-uid", "u-1", "auth", "whoami", "-o", "json"
    )
    info = json.loads(whoami.stdout)["status"]["userInfo"]
    assert info == {"username": "bob", "groups": ["devs", "system:authenticated"], "uid": "u-1"}
    run_kubectl(localkube, "create", "role", "-n", namespace, "pod-reader", "--verb=list", "--resource=pods")
    run_kubectl(
        localkube, "create", "rolebinding", "-n", namespace, "bob-reads", "--role=pod-reader", "--user=bob"
    )
    assert run_kubectl(localkube, "--as", "bob", "auth", "can-i", "list", "pods", "-n", namespace).stdout.strip() == "yes"  # fmt: skip
    assert run_kubectl(localkube, "--as", "bob", "auth", "can-i", "list", "pods", "-n", "default", check=False).stdout.strip() == "no"  # fmt: skip
    run_kubectl(localkube, "--as", "bob", "get", "pods", "-n", namespace)


def test_impersonation_needs_the_impersonate_verb_for_each_part(localkube: LocalKubeProcess, namespace: str) -> None:  # fmt: skip
    run_kubectl(localkube, "create", "serviceaccount", "-n", namespace, "deputy")
    token = run_kubectl(localkube, "create", "token", "-n", namespace, "deputy").stdout.strip()
    deputy = f"system:serviceaccount:{namespace}:deputy"

    def as_deputy(*args: str) -> str:
        done = run_kubectl(
            localkube, "--token", token, *args, "get", "configmaps", "-n", namespace, check=False
        )
        return done.stderr if done.returncode else ""

    cannot = f'is forbidden: User "{deputy}" cannot impersonate resource'
    assert f'users "alice" {cannot} "users" in API group "" at the cluster scope' in as_deputy(
        "--as", "alice"
    )
    role = f"{namespace}-impersonator"
    rules = [
        {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["alice"]}
    ]
    with localkube.client(timeout=30) as api:
        api.post(
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json={"metadata": {"name": role}, "rules": rules},
        ).raise_for_status()
    run_kubectl(localkube, "create", "clusterrolebinding", role, f"--clusterrole={role}", f"--serviceaccount={namespace}:deputy")  # fmt: skip
    # Allowed to act as alice, the deputy now has alice's rights (none yet), not its own.
    as_alice = as_deputy("--as", "alice")
    assert (
        f'User "alice" cannot list resource "configmaps" in API group "" in the namespace "{namespace}"'
        in as_alice
    )
    assert f'users "mallory" {cannot} "users"' in as_deputy("--as", "mallory")
    assert f'groups "admins" {cannot} "groups" in API group "" at the cluster scope' in as_deputy(
        "--as", "alice", "--as-group", "admins"
    )
    assert (
        f'uids.authentication.k8s.io "u-9" {cannot} "uids" in API group "authentication.k8s.io" at the cluster scope'
        in as_deputy("--as", "alice", "--as-uid", "u-9")
    )
    other = as_deputy("--as", f"system:serviceaccount:{namespace}:other")
    expected = (
        f'serviceaccounts "other" {cannot} "serviceaccounts" in API group "" in the namespace "{namespace}"'
    )
    assert expected in other
    run_kubectl(localkube, "create", "rolebinding", "-n", namespace, "alice-views", "--clusterrole=cluster-admin", "--user=alice")  # fmt: skip
    assert as_deputy("--as", "alice") == ""

    url = f"{localkube.url}/api/v1/namespaces/{namespace}/configmaps"
    with httpx.Client(verify=localkube.ssl_context(), headers={"Authorization": f"Bearer {token}"}) as http:
        extra = http.get(url, headers={"Impersonate-User": "alice", "Impersonate-Extra-Scopes": "view"})
        assert extra.status_code == 403
        assert extra.json()["message"] == (
            f'userextras.authentication.k8s.io "view" {cannot} "userextras/scopes" '
            'in API group "authentication.k8s.io" at the cluster scope'
        )
        no_user = http.get(url, headers={"Impersonate-Group": "admins"})
        assert no_user.status_code == 400
        assert no_user.json()["message"].endswith("without impersonating a user")
    run_kubectl(localkube, "delete", "clusterrolebinding,clusterrole", role)


def test_the_data_directory_is_readable_by_its_owner_only(localkube: LocalKubeProcess) -> None:
    data_dir = localkube.data_dir
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    secrets = ["admin-token", "kubeconfig", "pki/sa.key", "pki/server.key", "state.db", "state.db-wal"]
    for name in secrets:
        assert stat.S_IMODE((data_dir / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE((data_dir / "pki").stat().st_mode) == 0o700


def test_an_impersonated_group_brings_that_groups_rights(localkube: LocalKubeProcess, namespace: str) -> None:
    """`--as-group` allowed by the impersonate verb: the request has the group's rights, which the user alone
    lacks; a group the impersonator may not name is refused even with the user allowed."""
    run_kubectl(localkube, "create", "serviceaccount", "-n", namespace, "deputy")
    token = run_kubectl(localkube, "create", "token", "-n", namespace, "deputy").stdout.strip()
    role = f"{namespace}-group-impersonator"
    rules = [
        {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["carol"]},
        {"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"], "resourceNames": ["readers"]},
    ]
    with localkube.client(timeout=30) as api:
        api.post(
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json={"metadata": {"name": role}, "rules": rules},
        ).raise_for_status()
    run_kubectl(localkube, "create", "clusterrolebinding", role, f"--clusterrole={role}", f"--serviceaccount={namespace}:deputy")  # fmt: skip
    run_kubectl(
        localkube, "create", "role", "-n", namespace, "cm-reader", "--verb=list", "--resource=configmaps"
    )
    run_kubectl(localkube, "create", "rolebinding", "-n", namespace, "readers-read", "--role=cm-reader", "--group=readers")  # fmt: skip

    def as_deputy(*args: str) -> tuple[int, str]:
        done = run_kubectl(
            localkube, "--token", token, *args, "get", "configmaps", "-n", namespace, check=False
        )
        return done.returncode, done.stderr

    code, err = as_deputy("--as", "carol")
    assert code != 0 and 'User "carol" cannot list resource "configmaps"' in err
    assert as_deputy("--as", "carol", "--as-group", "readers")[0] == 0
    code, err = as_deputy("--as", "carol", "--as-group", "readers", "--as-group", "writers")
    assert code != 0 and 'groups "writers" is forbidden' in err
    run_kubectl(localkube, "delete", "clusterrolebinding,clusterrole", role)
