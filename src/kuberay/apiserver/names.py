"""The names a v1 request gives, checked before anything is asked of Kubernetes or of a dashboard: its
namespace, the object's name, the cluster a job submission goes to and the submission's id. Each goes into
a URL (a Kubernetes path; a dashboard's host name, `<cluster>-head-svc.<namespace>.svc...`, and path), where
a value that is no such name (`..`, a NUL, `169.254.169.254#`) would name another object or another host.
Upstream leaves it to client-go, whose refusal comes back as a 500; here it is InvalidArgument (400)
naming the field and the rule, as Kubernetes words it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kuberay.apiserver import errors

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(f"^{_LABEL}$")
_DNS_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
# Ray's submission ids are its own (`raysubmit_<random>`) or the caller's: anything printable that stays one
# path segment of the dashboard's `/api/jobs/<id>`.
_SEGMENT_FORBIDDEN = re.compile(r"[/%?#\\\s\x00-\x1f\x7f]")


def _label(field: str, value: str) -> None:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise errors.invalid_input(
            f"{field}: invalid value {value[:100]!r}: a lowercase RFC 1123 label must consist of lower case "
            "alphanumeric characters or '-', start and end with one, and be at most 63 characters"
        )


def _subdomain(field: str, value: str) -> None:
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise errors.invalid_input(
            f"{field}: invalid value {value[:100]!r}: a lowercase RFC 1123 subdomain must consist of lower "
            "case alphanumeric characters, '-' or '.', start and end with an alphanumeric character, and be "
            "at most 253 characters"
        )


def _segment(field: str, value: str) -> None:
    if value in (".", "..") or len(value) > 253 or _SEGMENT_FORBIDDEN.search(value):
        raise errors.invalid_input(
            f"{field}: invalid value {value[:100]!r}: must be at most 253 printable characters, not '.' or "
            "'..', without '/', '%', '?', '#', '\\' or white space"
        )


CHECKS: Mapping[str, Callable[[str, str], None]] = {
    "namespace": _label,
    "name": _subdomain,
    "clustername": _subdomain,
    "submissionid": _segment,
}


def check(request: Mapping[str, Any]) -> None:
    """InvalidArgument for the first name of `request` (proto field names) that is not one; empty ones
    are left to the method, which says which is missing as upstream does."""
    for field, rule in CHECKS.items():
        value = request.get(field)
        if isinstance(value, str) and value:
            rule(field, value)
