"""apimachinery's name and label checks (`k8s.io/apimachinery` v0.36), with their exact messages.

Each function returns the list of messages apimachinery returns, in its order; an empty list means valid.
Upstream formats such a list with Go's ``%v``, which `go_list` reproduces (``[first second]``). DNS label
length messages say "characters" (package `validation`) while label key/value length messages say
"bytes" (package `validate/content`, which v0.36 uses for labels).
"""

from __future__ import annotations

import re

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _LABEL_KEY + ")?"


def _regex_error(message: str, regex: str, *examples: str) -> str:
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{regex}')"


def _matches(regex: str, value: str) -> bool:
    # Go's RE2 `$` anchors at the very end; Python's fullmatch does the same (no trailing-newline slack).
    return re.fullmatch(regex, value) is not None


def go_list(messages: list[str]) -> str:
    """Go's ``%v`` of a ``[]string``."""
    return "[" + " ".join(messages) + "]"


def dns1035_label(value: str) -> list[str]:
    errors = []
    if len(value.encode()) > 63:
        errors.append("must be no more than 63 characters")
    if not _matches(_DNS1035_LABEL, value):
        errors.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character",
                _DNS1035_LABEL,
                "my-name",
                "abc-123",
            )
        )
    return errors


def dns1123_label(value: str) -> list[str]:
    errors = []
    if len(value.encode()) > 63:
        errors.append("must be no more than 63 characters")
    if not _matches(_DNS1123_LABEL, value):
        if _matches(_DNS1123_SUBDOMAIN, value):
            errors.append("must not contain dots")
        else:
            errors.append(
                _regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                    "must start and end with an alphanumeric character",
                    _DNS1123_LABEL,
                    "my-name",
                    "123-abc",
                )
            )
    return errors


def dns1123_subdomain(value: str, unit: str = "characters") -> list[str]:
    """`IsDNS1123Subdomain`, the API server's rule for most object names; label key prefixes are measured
    in "bytes" by their package."""
    errors = []
    if len(value.encode()) > 253:
        errors.append(f"must be no more than 253 {unit}")
    if not _matches(_DNS1123_SUBDOMAIN, value):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN,
                "example.com",
            )
        )
    return errors


_LABEL_KEY_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character"
)


def label_key(value: str) -> list[str]:
    """`IsQualifiedName`: an optional DNS-subdomain prefix and ``/``, then a name of at most 63 bytes."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MESSAGE, _LABEL_KEY, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + message for message in dns1123_subdomain(prefix, "bytes"))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part must be no more than 63 bytes")
    if not _matches(_LABEL_KEY, name):
        errors.append(
            "name part " + _regex_error(_LABEL_KEY_MESSAGE, _LABEL_KEY, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value(value: str) -> list[str]:
    errors = []
    if len(value.encode()) > 63:
        errors.append("must be no more than 63 bytes")
    if not _matches(_LABEL_VALUE, value):
        errors.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                _LABEL_VALUE,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errors
