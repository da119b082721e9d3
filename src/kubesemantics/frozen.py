"""Read-only JSON values: what a cache shares between its readers without letting one change it for all.

The Go runtimes live with shared cache objects by convention; here it is enforced, for the operator's caches
(`kuberay.runtime.cache`) and the node agent's (`localkube.node.remote`). `FrozenDict` and `FrozenList` are
`dict` and `list` subclasses whose mutating methods raise `FrozenValueError`, so reading one costs what
reading a plain container costs, orjson and pydantic take them as plain ones, they take no more memory
(`__slots__ = ()`), and `{**obj, "status": ...}` makes a plain top level over the frozen values.
`copy.copy`, `copy.deepcopy` and `thaw` give plain, mutable containers back.

`freeze` copies a value once, on its way into a cache; a container that is frozen already is kept as it is,
so freezing a new top level over values read from the cache walks only what is new.
"""

from __future__ import annotations

from typing import Any, NoReturn

from kubesemantics.errors import SemanticsError


class FrozenValueError(SemanticsError, TypeError):
    """A value shared by every reader of a cache was about to be changed in place."""


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise FrozenValueError(
        f"a {type(self).__name__} is shared by every reader of the cache it came from: copy it "
        "(thaw() or copy.deepcopy()) and change the copy"
    )


class FrozenDict(dict[str, Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        copied: dict[str, Any] = thaw(self)
        return copied

    def __reduce__(self) -> tuple[Any, ...]:
        # pickle builds a dict subclass empty and then sets its items, which this one refuses.
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        copied: list[Any] = thaw(self)
        return copied

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """A read-only copy of a JSON-shaped value: plain dicts and lists become frozen ones, the rest is kept."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, dict):
        return FrozenDict({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList([freeze(item) for item in value])
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a JSON-shaped value, frozen or not."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    return value
