"""Request bodies as dicts: JSON (the default), YAML, or the protobuf kubectl's typed commands send.

A body that cannot be decoded, or that is not an object, is refused with 400 BadRequest.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from localkube.server import errors, protobuf

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def decode(body: bytes, content_type: str) -> dict[str, Any]:
    if content_type.startswith(PROTOBUF):
        return protobuf.decode(body)
    try:
        decoded = (
            yaml.load(body, Loader=yaml.CSafeLoader)
            if "yaml" in content_type
            else orjson.loads(body or b"{}")
        )
    except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"the request body could not be decoded: {exc}") from exc
    if not isinstance(decoded, dict):
        raise errors.bad_request("the request body must be an object")
    return decoded
