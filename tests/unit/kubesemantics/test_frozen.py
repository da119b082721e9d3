"""Read-only JSON values (`kubesemantics.frozen`): every way of changing one in place is refused, copies of
one are plain and mutable, and freezing keeps what is frozen already."""

from __future__ import annotations

import copy
import pickle

import orjson
import pytest

from kubesemantics.frozen import FrozenDict, FrozenList, FrozenValueError, freeze, thaw

POD = {
    "metadata": {"name": "p", "labels": {"a": "1"}},
    "spec": {"containers": [{"name": "c", "args": ["x"]}]},
}


def test_changing_a_frozen_value_in_place_is_refused_at_every_depth() -> None:
    frozen = freeze(POD)
    changes = [
        lambda: frozen.__setitem__("kind", "Pod"),
        lambda: frozen["metadata"]["labels"].update(b="2"),
        lambda: frozen["metadata"].pop("name"),
        lambda: frozen["spec"]["containers"].append({}),
        lambda: frozen["spec"]["containers"][0]["args"].__setitem__(0, "y"),
        lambda: frozen["spec"]["containers"][0]["args"].sort(),
    ]
    for change in changes:
        with pytest.raises(FrozenValueError):
            change()
    assert frozen == POD


def test_copies_are_plain_and_encode_as_the_original() -> None:
    frozen = freeze(POD)
    for copied in (copy.deepcopy(frozen), thaw(frozen)):
        copied["spec"]["containers"][0]["args"].append("y")
        assert type(copied) is dict and type(copied["spec"]["containers"]) is list
    assert orjson.dumps(frozen) == orjson.dumps(POD)
    assert pickle.loads(pickle.dumps(frozen)) == POD
    written = {**frozen, "status": {"phase": "Running"}}  # how the kubelets write: a new top level
    written["status"]["phase"] = "Failed"
    assert isinstance(written["spec"], FrozenDict) and freeze(written)["spec"] is frozen["spec"]
    assert isinstance(freeze([1, [2]])[1], FrozenList)
