"""Go's text encodings, reproduced byte for byte where upstream's output is part of the contract
(`strconv.Quote` is `kubesemantics.goparse.quote`).

- `json` is `encoding/json.Marshal` of the equivalent generic value: compact, object keys sorted, `<`, `>`, `&`,
  U+2028 and U+2029 escaped, floats in Go's shortest form (`1`, `0.5`, `1e-7`, `1e+21`).
- `yaml_to_json` is `sigs.k8s.io/yaml.YAMLToJSON`: YAML 1.1 scalars (`yes` is true), keys turned into strings,
  timestamps left as strings (Go decodes them into an `interface{}` as text).
"""

from __future__ import annotations

import json as _stdlib_json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import yaml

from kuberay.builders.errors import BuildError

_JSON_HTML_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


class GoEncodingError(BuildError):
    """The value has no Go encoding (NaN, infinity, or a type JSON cannot carry)."""


def json_float(value: float) -> str:
    """A float64 as `encoding/json` writes it."""
    if math.isnan(value) or math.isinf(value):
        raise GoEncodingError(f"json: unsupported value: {value}")
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        # Python's repr has Go's shortest digits and two-digit exponent; encoding/json then trims a
        # negative exponent's leading zero (1e-07 -> 1e-7).
        text = repr(value)
        return text[:-2] + text[-1] if text[-4:-1] == "e-0" else text
    return format(Decimal(repr(value)).normalize(), "f")


def json_string(text: str) -> str:
    """A string as `encoding/json` writes it."""
    return _stdlib_json.dumps(text, ensure_ascii=False).translate(_JSON_HTML_ESCAPES)


def json(value: Any) -> str:
    """`json.Marshal(value)` for generic values (None, bool, int, float, str, mappings, sequences)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, Mapping):
        items = sorted((_map_key(key), item) for key, item in value.items())
        return "{" + ",".join(f"{json_string(key)}:{json(item)}" for key, item in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(json(item) for item in value) + "]"
    raise GoEncodingError(f"json: unsupported type: {type(value).__name__}")


def _map_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json(key)
    raise GoEncodingError(f"json: unsupported map key type: {type(key).__name__}")


class _YAMLLoader(yaml.SafeLoader):
    """YAML 1.1 as Go's yaml decodes it into `interface{}`: timestamps stay strings."""


_YAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def yaml_to_json(text: str) -> str:
    """`sigs.k8s.io/yaml.YAMLToJSON(text)`; a YAML syntax error raises `GoEncodingError`."""
    try:
        value = yaml.load(text, Loader=_YAMLLoader)
    except yaml.YAMLError as error:
        raise GoEncodingError(f"error converting YAML to JSON: {error}") from error
    return json(value)
