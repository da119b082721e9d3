"""The read verbs: get, and list with label and field selectors, paging (`limit`, `continue`) and the
list's resourceVersion. A field selector that is exactly `metadata.name=x` is one lookup, not a scan."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesemantics.selectors import SelectorError, field_matcher, label_matcher
from localkube.server import errors
from localkube.server.registry import ResourceType
from localkube.server.rest.common import Core, Query, decode_continue, encode_continue


class Reads:
    """get and list."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def get(self, resource_type: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        return self.core.output(resource_type, self.core.existing(resource_type, namespace, name))

    def list_objects(
        self, resource_type: ResourceType, namespace: str | None, query: Query
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The selected objects and the list metadata (resourceVersion, continue, remainingItemCount)."""
        try:
            label_match = label_matcher(query.get("labelSelector"))
            field_match = field_matcher(query.get("fieldSelector"))
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc
        if field_match is not None and resource_type.stored_as:
            # Field paths name the served form (events.k8s.io's `regarding.name`), not the stored one.
            stored_match = field_match
            field_match = lambda obj: stored_match(self.core.output(resource_type, obj))  # noqa: E731
        limit = _limit(query.get("limit"))
        token = query.get("continue")
        revision, start_after = decode_continue(token) if token else (self.core.store.revision, None)
        prefix = resource_type.prefix(namespace)
        exact_name = _exact_name(query.get("fieldSelector"))
        if exact_name is not None and start_after is None and (namespace or not resource_type.namespaced):
            # kubectl's delete and wait list by name: one lookup instead of a scan.
            found = self.core.store.get(resource_type.key(namespace, exact_name))
            objects = [found] if found is not None and (label_match is None or label_match(found)) else []
            more = False
        elif label_match is None and field_match is None:
            objects, _ = self.core.store.list(
                prefix, start_after=start_after, limit=limit + 1 if limit else None
            )
            more = bool(limit) and len(objects) > limit
            objects = objects[:limit] if more else objects
        else:
            objects, more = self._filtered(prefix, start_after, limit, label_match, field_match)
        metadata: dict[str, Any] = {"resourceVersion": str(revision)}
        if more and objects:
            last = objects[-1]["metadata"]
            metadata["continue"] = encode_continue(
                revision, resource_type.key(last.get("namespace"), last["name"])
            )
        return [self.core.output(resource_type, obj) for obj in objects], metadata

    def _filtered(
        self,
        prefix: str,
        start_after: str | None,
        limit: int,
        label_match: Callable[[dict[str, Any]], bool] | None,
        field_match: Callable[[dict[str, Any]], bool] | None,
    ) -> tuple[list[dict[str, Any]], bool]:
        selected: list[dict[str, Any]] = []
        for obj in self.core.store.list(prefix, start_after=start_after)[0]:
            if (label_match is None or label_match(obj)) and (field_match is None or field_match(obj)):
                if limit and len(selected) == limit:
                    return selected, True
                selected.append(obj)
        return selected, False


def _exact_name(field_selector: str | None) -> str | None:
    """The name of `metadata.name=x` when it is the whole field selector (kubectl's delete and wait)."""
    if not field_selector or "," in field_selector:
        return None
    for operator in ("==", "="):
        path, found, value = field_selector.partition(operator)
        if found and path.strip() == "metadata.name" and "!" not in path:
            return value.strip()
    return None


def _limit(text: str | None) -> int:
    """A list's `limit`, as kube-apiserver decodes it: a number, else 400 (not a 500 from int())."""
    try:
        return max(int(text or 0), 0)
    except ValueError as exc:
        raise errors.bad_request(f'invalid limit: "{text}" is not a number') from exc
