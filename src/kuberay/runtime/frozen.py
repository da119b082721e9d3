"""The operator's cache values: frozen (`kubesemantics.frozen`, whose `thaw` or `copy.deepcopy` gives an
editable copy) and with their repeated strings interned.

`freeze` also interns the strings it stores: the pods of one group repeat the same images, commands,
environment values and label values thousands of times, and a decoder makes a new string for each. Shared,
they cost a cached pod about a third less memory (benchmarks/cache_memory.py). Interned strings are freed
with their last reference (CPython), so names and uids of deleted objects do not pile up. Values that are
new with every write and shared by nothing (resourceVersions, container IDs, pod IPs) are left out: each
would be one more insertion into CPython's intern table, whose freed slots stay used until it rebuilds
itself, and a rebuild sizes it to three times its live entries, so churn alone grew a warm operator's
memory (benchmarks/README.md, "Memory once warm"). Timestamps stay: the objects written in one second share
one, and there are at most one a second.
"""

from __future__ import annotations

from sys import intern
from typing import Any

from kubesemantics.frozen import FrozenDict, FrozenList, thaw
from kubesemantics.frozen import FrozenValueError as ReadOnlyError

__all__ = ["FrozenDict", "FrozenList", "ReadOnlyError", "freeze", "thaw"]

# Longer strings (a serve config, a script) are rarely repeated and would only grow the intern table.
_INTERNED_MAX_LENGTH = 256
# Members whose values change with each version of an object or are unique to it.
_PER_VERSION_KEYS = frozenset({"resourceVersion", "containerID", "podIP", "ip"})


def freeze(value: Any) -> Any:
    """A read-only copy of a JSON-shaped value (dicts and lists become frozen; scalars are shared)."""
    if isinstance(value, dict):
        return FrozenDict(
            (intern(k), v if k in _PER_VERSION_KEYS and isinstance(v, str) else freeze(v))
            for k, v in value.items()
        )
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    if isinstance(value, str) and len(value) <= _INTERNED_MAX_LENGTH:
        return intern(value)
    return value
