"""The rolling-update arithmetic: int-or-percent rounding, fenceposts, and the next replica counts."""

import pytest

from localkube.controllers.rollout import (
    POD_TEMPLATE_HASH,
    SAFE_ALPHABET,
    RolloutError,
    ScaledSet,
    SetCounts,
    fenceposts,
    new_set_target,
    old_set_targets,
    proportional_targets,
    same_template,
    scaled_value,
    template_hash,
)


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [
        (1, 10, True, 1),
        (7, 3, False, 7),  # an int is taken as it is, even above the total
        ("25%", 10, True, 3),
        ("25%", 10, False, 2),
        ("33%", 3, True, 1),
        ("33%", 3, False, 0),
        ("50%", 1, True, 1),
        ("50%", 1, False, 0),
        ("0%", 5, True, 0),
        ("100%", 3, False, 3),
        ("25%", 0, True, 0),
    ],
)
def test_scaled_value_rounds_as_upstream(value: int | str, total: int, round_up: bool, expected: int) -> None:
    assert scaled_value(value, total, round_up=round_up) == expected


@pytest.mark.parametrize("value", ["5", "x%", "", True])
def test_scaled_value_refuses_what_is_neither_an_int_nor_a_percentage(value: object) -> None:
    with pytest.raises(RolloutError, match="invalid value for IntOrString"):
        scaled_value(value, 10, round_up=True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        (None, None, 4, (1, 1)),  # the 25% defaults
        (None, None, 1, (1, 0)),  # surge rounds up, unavailability down
        (None, None, 10, (3, 2)),
        (0, 0, 3, (0, 1)),  # both zero: one may be unavailable
        ("0%", "0%", 10, (0, 1)),
        ("10%", "10%", 1, (1, 0)),
        (2, "50%", 5, (2, 2)),
        ("100%", 0, 3, (3, 0)),
    ],
)
def test_fenceposts(
    surge: int | str | None, unavailable: int | str | None, desired: int, expected: tuple[int, int]
) -> None:
    assert fenceposts(surge, unavailable, desired) == expected


@pytest.mark.parametrize(
    ("desired", "surge", "new", "old", "expected"),
    [
        (3, 1, SetCounts(0), [SetCounts(3, 3, 3)], 1),
        (3, 1, SetCounts(1, 1, 1), [SetCounts(3, 3, 3)], 1),  # at the surge limit already
        (3, 1, SetCounts(1, 1, 1), [SetCounts(2, 2, 2)], 2),
        # An old pod above its set's spec still runs: it counts against the surge until it is gone.
        (3, 1, SetCounts(1, 1, 1), [SetCounts(2, 3, 3)], 1),
        # New pods not yet made count by the set's spec.
        (3, 1, SetCounts(2, 0, 0), [SetCounts(2, 2, 2)], 2),
        (10, 3, SetCounts(0), [SetCounts(10, 10, 10)], 3),
        (3, 0, SetCounts(0), [SetCounts(2, 2, 2)], 1),
        (3, 1, SetCounts(5, 5, 5), [], 3),  # scaled down: straight to desired
        (5, 1, SetCounts(2, 2, 2), [], 5),  # scaled up with no old set: straight to desired
        (0, 1, SetCounts(2, 2, 2), [], 0),
    ],
)
def test_new_set_target(
    desired: int, surge: int, new: SetCounts, old: list[SetCounts], expected: int
) -> None:
    assert new_set_target(desired, surge, new, old) == expected


@pytest.mark.parametrize(
    ("desired", "unavailable", "new", "old", "expected"),
    [
        # The new pod is not available yet: nothing old may go (maxUnavailable 0).
        (3, 0, SetCounts(1, 1, 0), [SetCounts(3, 3, 3)], [3]),
        (3, 0, SetCounts(1, 1, 1), [SetCounts(3, 3, 3)], [2]),
        (4, 1, SetCounts(0), [SetCounts(4, 4, 4)], [3]),
        # Unavailable old replicas go first: they cost no availability.
        (3, 0, SetCounts(1, 1, 1), [SetCounts(3, 3, 1)], [2]),
        # Oldest first.
        (4, 2, SetCounts(0), [SetCounts(2, 2, 2), SetCounts(2, 2, 2)], [0, 2]),
        # An old pod above spec is about to go: it does not count towards availability.
        (3, 0, SetCounts(1, 1, 1), [SetCounts(2, 3, 3)], [2]),
        (3, 1, SetCounts(3, 3, 3), [SetCounts(0), SetCounts(0)], [0, 0]),
        (2, 2, SetCounts(2, 0, 0), [SetCounts(2, 2, 2)], [0]),  # Recreate-like: all may go at once
    ],
)
def test_old_set_targets(
    desired: int, unavailable: int, new: SetCounts, old: list[SetCounts], expected: list[int]
) -> None:
    assert old_set_targets(desired, unavailable, new, old) == expected


@pytest.mark.parametrize(
    ("desired", "surge", "unavailable"), [(3, 1, 0), (3, 0, 1), (10, 3, 2), (5, 2, 2), (1, 1, 0), (4, 0, 4)]
)
def test_a_simulated_rollout_keeps_both_bounds_and_finishes(
    desired: int, surge: int, unavailable: int
) -> None:
    """Each step: the controller decides, then every set gets its pods, which become available one step
    later. The pods never exceed desired + surge, availability never drops below desired - unavailable."""
    new = SetCounts(0)
    old = SetCounts(desired, desired, desired)
    for _ in range(100):
        if new == SetCounts(desired, desired, desired) and old.spec == old.active == 0:
            break
        new_spec = new_set_target(desired, surge, new, [old])
        (old_spec,) = old_set_targets(
            desired, unavailable, SetCounts(new_spec, new.active, new.available), [old]
        )
        # Old pods go (unavailable ones first), new pods appear, then the earlier new pods become available.
        old = SetCounts(old_spec, old_spec, min(old.available, old_spec))
        new = SetCounts(new_spec, new_spec, min(new.active, new_spec))
        assert new.active + old.active <= desired + surge
        assert new.available + old.available >= min(desired - unavailable, desired)
    else:
        pytest.fail("the rollout did not finish")


def test_template_hash_is_stable_and_ignores_its_own_label() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "a"}]}}
    value = template_hash(template)
    assert value == template_hash({**template})
    assert set(value) <= set(SAFE_ALPHABET)
    labelled = {**template, "metadata": {"labels": {"app": "web", POD_TEMPLATE_HASH: value}}}
    assert template_hash(labelled) == value
    assert template_hash(template, collision_count=1) != value
    changed = {**template, "spec": {"containers": [{"name": "c", "image": "b"}]}}
    assert template_hash(changed) != value


def test_same_template_ignores_what_a_client_round_trip_adds() -> None:
    stored = {
        "metadata": {"labels": {"app": "web", POD_TEMPLATE_HASH: "abc"}, "generation": 0},
        "spec": {"x": 1},
    }
    sent_back = {"metadata": {"labels": {"app": "web"}, "creationTimestamp": None}, "spec": {"x": 1}}
    assert same_template(stored, sent_back)
    assert not same_template(stored, {**sent_back, "spec": {"x": 2}})
    assert not same_template(stored, {"metadata": {"labels": {"app": "other"}}, "spec": {"x": 1}})


@pytest.mark.parametrize(
    ("desired", "surge", "sets", "current", "expected"),
    [
        # 10 -> 20 replicas (surge 3) with old 8 and new 5 sized for 13: 10 more, spread 8:5.
        # old: round(8 * 23 / 13) - 8 = 6; new: min(round(5 * 23 / 13) - 5, 10 - 6) = 4.
        (20, 3, [ScaledSet(8, 13), ScaledSet(5, 13)], 13, [14, 9]),
        # And back to 10: 10 fewer; old: round(14 * 13 / 23) - 14 = -6; new: round(9 * 13 / 23) - 9 = -4.
        (10, 3, [ScaledSet(14, 23), ScaledSet(9, 23)], 23, [8, 5]),
        # To zero: every set goes.
        (0, 3, [ScaledSet(14, 23), ScaledSet(9, 23)], 23, [0, 0]),
        # Equal sizes: the rounding leftover goes to the newer set when growing...
        (5, 0, [ScaledSet(2, 4), ScaledSet(2, 4)], 4, [2, 3]),
        # ... and the older one gives it up when shrinking.
        (3, 0, [ScaledSet(2, 4), ScaledSet(2, 4)], 4, [1, 2]),
        # Without the annotation a set is taken as sized for the current total.
        (8, 0, [ScaledSet(2), ScaledSet(2)], 4, [4, 4]),
        # Inactive sets stay at zero.
        (6, 0, [ScaledSet(0, 3), ScaledSet(1, 3), ScaledSet(2, 3)], 3, [0, 2, 4]),
        # Nothing to add: nothing changes.
        (4, 1, [ScaledSet(3, 5), ScaledSet(2, 5)], 5, [3, 2]),
    ],
)
def test_proportional_targets(
    desired: int, surge: int, sets: list[ScaledSet], current: int, expected: list[int]
) -> None:
    assert proportional_targets(desired, surge, sets, current) == expected
