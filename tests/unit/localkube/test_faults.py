"""Injected API faults: how often, which refusals for which verbs, and off when the share is 0."""

from __future__ import annotations

import random

import pytest

from localkube.server.errors import ApiError
from localkube.server.faults import Faults
from localkube.server.registry import Registry
from localkube.server.routing import Target

PODS = Registry().get("", "v1", "pods")
assert PODS is not None
TARGET = Target(PODS, "default", "p", None)


def _codes(faults: Faults, verb: str, n: int = 400) -> list[int]:
    codes = []
    for _ in range(n):
        try:
            faults.check(TARGET, verb)
            codes.append(200)
        except ApiError as refused:
            codes.append(refused.code)
    return codes


def test_every_request_fails_at_share_one_with_conflicts_only_for_updates_and_patches() -> None:
    faults = Faults(1.0, random.Random(7))
    assert set(_codes(faults, "get")) == {429, 500}
    assert set(_codes(faults, "patch")) == {409, 429, 500}
    assert sum(faults.injected.values()) == 800


def test_share_zero_injects_nothing_and_a_share_outside_0_1_is_refused() -> None:
    assert set(_codes(Faults(0.0), "update")) == {200}
    with pytest.raises(ValueError, match="between 0 and 1"):
        Faults(1.5)


def test_a_conflict_reads_as_the_api_servers() -> None:
    faults = Faults(1.0, random.Random(0))
    while True:
        try:
            faults.check(TARGET, "update")
        except ApiError as refused:
            if refused.code == 409:
                assert refused.message.startswith('Operation cannot be fulfilled on pods "p": ')
                return
