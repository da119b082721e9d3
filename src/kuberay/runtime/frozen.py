"""Read-only JSON values for the cache: `freeze` once on the way in, `thaw` (or `copy.deepcopy`) to edit.

Cached objects are shared by every reader, so a reconciler that edited one in place would corrupt the
cache for everyone (the Go runtime lives with this by convention; here it is enforced). `FrozenDict` and
`FrozenList` are `dict` and `list` subclasses with every mutating method refused, so reading costs
nothing, orjson and pydantic accept them as they are, and they take no more memory than plain containers
(`__slots__ = ()`). `copy.deepcopy` and `thaw` return plain, mutable containers.

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
from typing import Any, NoReturn

from kuberay.runtime.errors import ControllerRuntimeError

# Longer strings (a serve config, a script) are rarely repeated and would only grow the intern table.
_INTERNED_MAX_LENGTH = 256
# Members whose values change with each version of an object or are unique to it.
_PER_VERSION_KEYS = frozenset({"resourceVersion", "containerID", "podIP", "ip"})


class ReadOnlyError(ControllerRuntimeError, TypeError):
    """A cached object was about to be changed in place; `thaw` it (or `copy.deepcopy`) first."""


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise ReadOnlyError("cached objects are read-only; thaw() or copy.deepcopy() before changing them")


class FrozenDict(dict[str, Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        thawed: dict[str, Any] = thaw(self)
        return thawed

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        thawed: list[Any] = thaw(self)
        return thawed

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


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


def thaw(value: Any) -> Any:
    """A mutable deep copy of a JSON-shaped value (frozen or not)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value
