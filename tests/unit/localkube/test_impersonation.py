"""The identity an impersonating request acts as: the groups Kubernetes' impersonation filter gives it."""

from __future__ import annotations

import pytest

from localkube.server.impersonation import act_as
from localkube.server.rbac import Authorizer, UserInfo, bootstrap_policy

ADMIN = UserInfo("admin", ("system:masters",))
POLICY = Authorizer(lambda plural: [o for o in bootstrap_policy() if o["kind"].lower() + "s" == plural])


@pytest.mark.parametrize(
    ("headers", "name", "groups"),
    [
        ((("impersonate-user", "bob"),), "bob", ("system:authenticated",)),
        (
            (("impersonate-user", "system:serviceaccount:ns:robot"),),
            "system:serviceaccount:ns:robot",
            ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"),
        ),
        (
            (("impersonate-user", "system:serviceaccount:ns:robot"), ("impersonate-group", "team")),
            "system:serviceaccount:ns:robot",
            ("team", "system:authenticated"),
        ),
        (
            (("impersonate-user", "bob"), ("impersonate-group", "system:unauthenticated")),
            "bob",
            ("system:unauthenticated",),
        ),
        ((("impersonate-user", "system:anonymous"),), "system:anonymous", ("system:unauthenticated",)),
        # Not a ServiceAccount's name (three parts): an ordinary user.
        (
            (("impersonate-user", "system:serviceaccount:a:b:c"),),
            "system:serviceaccount:a:b:c",
            ("system:authenticated",),
        ),  # fmt: skip
    ],
)
def test_the_identity_acted_as(headers: tuple[tuple[str, str], ...], name: str, groups: tuple[str, ...]) -> None:  # fmt: skip
    user = act_as(ADMIN, headers, POLICY)
    assert (user.name, user.groups) == (name, groups)


def test_extras_are_unescaped_and_kept_per_key() -> None:
    headers = (
        ("impersonate-user", "bob"),
        ("impersonate-extra-example.com%2fscopes", "read"),
        ("impersonate-extra-example.com%2fscopes", "write"),
    )
    assert act_as(ADMIN, headers, POLICY).extra == (("example.com/scopes", ("read", "write")),)


def test_without_impersonation_the_requestor_acts() -> None:
    assert act_as(ADMIN, (), POLICY) is ADMIN
