"""Injected API faults, for tests only: a share of resource requests refused as an overloaded or failing
API server would refuse them.

Off unless `localkube serve --inject-faults FRACTION` is given. Each resource request (not health,
version, discovery or OpenAPI, and never the pod proxy) is refused with probability FRACTION, before it
is executed, so a refused write has not happened and a client may simply retry it. The refusal is, at
random: 429 TooManyRequests (the API server's max-in-flight limit, with `retryAfterSeconds` 1), 500
InternalError, or, for an update or patch, 409 Conflict on a stale resourceVersion. Counts of what was
injected are kept for the log line printed at shutdown.
"""

from __future__ import annotations

import random
from collections import Counter

from localkube.server import errors
from localkube.server.errors import ApiError
from localkube.server.routing import Target


class Faults:
    """Decides, per request, whether to refuse it and how."""

    def __init__(self, fraction: float, rng: random.Random | None = None) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"the share of requests to fail must be between 0 and 1, not {fraction}")
        self.fraction = fraction
        self._random = rng or random.Random()
        self.injected: Counter[int] = Counter()

    def check(self, target: Target, verb: str) -> None:
        """Raises the injected ApiError for this request, or returns to let it through."""
        if self.fraction <= 0.0 or self._random.random() >= self.fraction:
            return
        kinds = [429, 500, 409] if verb in ("update", "patch") else [429, 500]
        code = self._random.choice(kinds)
        self.injected[code] += 1
        raise _refusal(code, target)


def _refusal(code: int, target: Target) -> ApiError:
    if code == 429:
        return ApiError(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
            {"retryAfterSeconds": 1},
        )
    if code == 500:
        cause = "injected fault (localkube --inject-faults)"
        return ApiError(
            500, "InternalError", f"Internal error occurred: {cause}", {"causes": [{"message": cause}]}
        )
    resource = target.resource_type
    return errors.conflict(resource.plural, resource.group, target.name or "", errors.STALE_OBJECT)
