"""Decoding protobuf request bodies (`application/vnd.kubernetes.protobuf`) into the JSON form of the object.

client-go sends protobuf for built-in kinds unless told otherwise: kubectl's typed commands (`auth can-i`,
`create token`, `create namespace|configmap|secret|role|deployment|...`) and every controller built on
client-go or controller-runtime (upstream KubeRay's creates of Pods, Services, Events, Jobs, RBAC ...), and
neither falls back to JSON. A body is the `k8s\\x00` magic, then a `runtime.Unknown` envelope naming the
kind and holding the object's bytes, decoded here with the wire schema of `protobuf_schema`. Kinds not
listed there are refused with 415, malformed bodies with 400. Replies are always JSON, which client-go
accepts whenever it also lists JSON (it sends `Accept: application/vnd.kubernetes.protobuf,application/json`).

Go writes a struct's non-pointer fields even when zero; the JSON form leaves out what a Kubernetes API
server's JSON would: zero values of `omitzero` fields (see `protobuf_schema`), empty strings and zero times.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from kubesemantics import times
from localkube.server import errors
from localkube.server.protobuf_schema import KINDS, MESSAGES, Field

MAGIC = b"k8s\x00"

_ENVELOPE: dict[str, dict[int, Field]] = {
    "Unknown": {1: ("typeMeta", "TypeMeta", ""), 2: ("raw", "bytes", ""), 3: ("contentEncoding", "string", ""), 4: ("contentType", "string", "")},
    "TypeMeta": {1: ("apiVersion", "string", ""), 2: ("kind", "string", "")},
}  # fmt: skip
_SCHEMA = {**MESSAGES, **_ENVELOPE}
# A body whose apiVersion is not listed (DeleteOptions comes as `v1` or `meta.k8s.io/v1`) is read by its
# kind alone when the kind names one message.
_BY_KIND = {
    kind: message
    for (_, kind), message in KINDS.items()
    if len({m for (_, k), m in KINDS.items() if k == kind}) == 1
}


class _Malformed(errors.ServingError, ValueError):
    pass


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise _Malformed("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited and fixed fields."""
    out: list[tuple[int, int | bytes]] = []
    position = 0
    while position < len(data):
        tag, position = _varint(data, position)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            value, position = _varint(data, position)
            out.append((number, value))
        elif wire_type in (1, 2, 5):
            if wire_type == 2:
                width, position = _varint(data, position)
            else:
                width = 8 if wire_type == 1 else 4
            if position + width > len(data):
                raise _Malformed(f"field {number} wants {width} bytes, {len(data) - position} remain")
            out.append((number, data[position : position + width]))
            position += width
        else:
            raise _Malformed(f"unsupported wire type {wire_type}")
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _time(data: bytes, micro: bool) -> str | None:
    """metav1.Time (seconds) or MicroTime as RFC 3339; None for the zero time, which Go's JSON omits."""
    fields = dict(_fields(data))
    seconds, nanos = fields.get(1, 0), fields.get(2, 0)
    assert isinstance(seconds, int) and isinstance(nanos, int)
    if not seconds and not nanos:
        return None
    moment = datetime.fromtimestamp(_signed(seconds), UTC)
    if micro:
        return times.format_micro_time(moment + timedelta(microseconds=nanos // 1000))
    return times.format_time(moment)


def _wire_form(kind: str, data: bytes) -> Any:
    """apimachinery's types whose JSON is not their message's shape."""
    fields = _fields(data)
    first = dict(fields)
    if kind == "quantity":
        return _scalar("string", first.get(1, b""))
    if kind == "intorstr":  # type 0: intVal (2); type 1: strVal (3)
        return _scalar("string", first.get(3, b"")) if first.get(1, 0) == 1 else _signed(int(first.get(2, 0)))
    if kind == "strings":
        return [_scalar("string", value) for number, value in fields if number == 1]
    if kind == "raw":  # RawExtension / FieldsV1: the JSON document itself
        raw = first.get(1, b"")
        assert isinstance(raw, bytes)
        return orjson.loads(raw) if raw else None
    return _time(data, micro=kind == "microtime")


_WIRE_FORMS = frozenset({"quantity", "intorstr", "strings", "raw", "time", "microtime"})


def _scalar(kind: str, value: int | bytes) -> Any:
    if kind == "string":
        assert isinstance(value, bytes)
        return value.decode()
    if kind == "bytes":
        assert isinstance(value, bytes)
        return base64.b64encode(value).decode()
    if kind == "int":
        assert isinstance(value, int)
        return _signed(value)
    if kind == "bool":
        return bool(value)
    raise _Malformed(f"unknown scalar type {kind}")


def _value(kind: str, value: int | bytes) -> Any:
    if kind in _SCHEMA:
        assert isinstance(value, bytes)
        return _message(kind, value)
    if kind in _WIRE_FORMS:
        assert isinstance(value, bytes)
        return _wire_form(kind, value)
    return _scalar(kind, value)


def _message(name: str, data: bytes) -> dict[str, Any]:
    schema = _SCHEMA[name]
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        field, kind, flag = schema[number]
        if kind.startswith("map<"):
            assert isinstance(value, bytes)
            entry = dict(_fields(value))
            key = entry.get(1, b"")
            assert isinstance(key, bytes)
            element = kind[4:-1]
            # An absent value is the element's zero value.
            raw = entry.get(2, 0 if element in ("int", "bool") else b"")
            out.setdefault(field, {})[key.decode()] = _value(element, raw)
            continue
        if flag == "repeated" and kind == "int" and isinstance(value, bytes):  # a packed repeated integer
            out.setdefault(field, []).extend(_signed(v) for v in _packed(value))
            continue
        decoded = _value(kind, value)
        if not field:  # embedded inline in Go: its fields are the enclosing object's
            out.update(decoded)
        elif flag == "repeated":
            out.setdefault(field, []).append(decoded)
        elif decoded not in ("", None) and not (flag == "omitzero" and decoded in (0, False)):
            out[field] = decoded
    return out


def _packed(data: bytes) -> list[int]:
    values, position = [], 0
    while position < len(data):
        value, position = _varint(data, position)
        values.append(value)
    return values


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded Kubernetes object; 415 for kinds this server cannot read."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("the protobuf body does not start with the Kubernetes magic number")
    try:
        envelope = _message("Unknown", body[len(MAGIC) :])
        type_meta = envelope.get("typeMeta") or {}
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        message = KINDS.get((api_version, kind)) or _BY_KIND.get(kind)
        if message is None:
            raise errors.unsupported_media_type(["application/json", "application/yaml"])
        obj = _message(message, base64.b64decode(envelope.get("raw", "")))
    except (
        ValueError,
        AssertionError,
    ) as exc:  # _Malformed, UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise errors.bad_request(f"the protobuf body could not be decoded: {exc}") from exc
    return {"apiVersion": api_version, "kind": kind, **obj}
