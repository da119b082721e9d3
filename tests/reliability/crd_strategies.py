"""Hypothesis strategies generated from the CRDs' `openAPIV3Schema`: valid-ish ray.io objects and their
mutations, each labelled with the kind of case it is and the field path it aims at.

A case starts from one of our examples (a valid object of its kind) and applies one mutation:

- `generated`: an optional field set to a value generated from its schema (types, enums, bounds, patterns);
- `wrong_type`: a field's value replaced by a value of another JSON type;
- `out_of_range`: a constrained field (enum, minimum, maxLength, pattern, minItems) given a value outside;
- `missing_required`: a field its parent's schema requires, removed;
- `unknown_field`: a field no schema declares, added to an object;
- `hostile_name`: metadata.name (or a group name) made of unicode, upper case, or too long;
- `hostile_metadata`: labels and annotations with such keys and values (the operator copies them to pods);
- `deep_nesting`: a value nested hundreds to thousands of levels deep (the serialized body is built by
  hand: json and orjson refuse such depths);
- `huge_value`: a string of up to 512 KiB in a free-form field (the oversized are test_oversized_objects.py's).

`Case.body()` is the JSON text sent; `Case.path` the field the mutation aims at, as the API server writes
field paths (`spec.workerGroupSpecs[0].replicas`). Pure: no I/O beyond reading the CRDs and examples.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from hypothesis import assume
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
KINDS = {
    "RayCluster": ("ray.io_rayclusters.yaml", "ray-cluster.minimal.yaml"),
    "RayJob": ("ray.io_rayjobs.yaml", "ray-job.http-mode.yaml"),
    "RayService": ("ray.io_rayservices.yaml", "ray-service.yaml"),
    "RayCronJob": ("ray.io_raycronjobs.yaml", "ray-cronjob.yaml"),
}
CASE_KINDS = (
    "generated",
    "wrong_type",
    "out_of_range",
    "missing_required",
    "unknown_field",
    "hostile_name",
    "hostile_metadata",
    "deep_nesting",
    "huge_value",
)
_DEEP = "__deep_nesting__"
Path_ = tuple[str | int, ...]


@dataclass
class Case:
    kind: str  # the resource kind
    case: str  # one of CASE_KINDS
    obj: dict[str, Any]
    path: Path_ = ()
    deep: str = ""  # the hand-built JSON text that replaces the placeholder at `path`
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def field(self) -> str:
        return field_path(self.path)

    def body(self) -> bytes:
        text = json.dumps(self.obj, ensure_ascii=False)
        if self.deep:
            text = text.replace(json.dumps(_DEEP), self.deep, 1)
        return text.encode()

    def __repr__(self) -> str:  # what Hypothesis prints for a falsifying example: short, and the aim
        return f"Case({self.kind}, {self.case}, {self.field!r}, {self.body()[:600]!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis's printer would list the fields
        printer.text(repr(self))


def field_path(path: Path_) -> str:
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


@cache
def schema(kind: str) -> dict[str, Any]:
    crd = yaml.load((REPO / "deploy" / "crds" / KINDS[kind][0]).read_text(), Loader=yaml.CSafeLoader)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    root: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return root


@cache
def _example(kind: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((REPO / "examples" / KINDS[kind][1]).read_text()) if d]
    obj: dict[str, Any] = docs[0]
    return obj


def example(kind: str) -> dict[str, Any]:
    """A fresh copy of the kind's example."""
    return copy.deepcopy(_example(kind))


def _child(node: dict[str, Any], step: str | int) -> dict[str, Any] | None:
    if isinstance(step, int):
        items = node.get("items")
        return items if isinstance(items, dict) else None
    found = (node.get("properties") or {}).get(step)
    if found is None and isinstance(node.get("additionalProperties"), dict):
        found = node["additionalProperties"]
    return found


def schema_at(root: dict[str, Any], path: Path_) -> dict[str, Any] | None:
    node: dict[str, Any] | None = root
    for step in path:
        if node is None:
            return None
        node = _child(node, step)
    return node


def paths(value: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every field path in `value`, parents before children."""
    found: list[Path_] = []
    if isinstance(value, dict):
        for key, child in value.items():
            found.append((*prefix, key))
            found.extend(paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.append((*prefix, index))
            found.extend(paths(child, (*prefix, index)))
    return found


def get(obj: Any, path: Path_) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def put(obj: Any, path: Path_, value: Any) -> None:
    get(obj, path[:-1])[path[-1]] = value


# -- values from a schema ---------------------------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def _regex(pattern: str) -> st.SearchStrategy[str]:
    try:
        re.compile(pattern)
    except re.error:
        return _TEXT
    return st.from_regex(pattern, fullmatch=True).filter(lambda s: len(s) < 64)


_VALUES: dict[tuple[int, int], st.SearchStrategy[Any]] = {}


def values(node: dict[str, Any], budget: int = 2) -> st.SearchStrategy[Any]:
    """Values the schema node accepts (mostly: formats and CEL rules are not modelled); `budget` bounds
    the depth and how many optional fields an object gets. Built once per schema node (the schemas are
    cached, so their ids are stable)."""
    key = (id(node), budget)
    if key not in _VALUES:
        _VALUES[key] = _values(node, budget)
    return _VALUES[key]


def _values(node: dict[str, Any], budget: int) -> st.SearchStrategy[Any]:
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if node.get("x-kubernetes-int-or-string"):
        return st.integers(0, 100) | st.from_regex(r"[0-9]{1,2}%", fullmatch=True)
    kind = node.get("type")
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        low = node.get("minimum", -(2**31) if node.get("format") == "int32" else -(2**53))
        high = node.get("maximum", 2**31 - 1 if node.get("format") == "int32" else 2**53)
        return st.integers(low, high)
    if kind == "number":
        return st.floats(node.get("minimum"), node.get("maximum"), allow_nan=False, allow_infinity=False)
    if kind == "string":
        if "pattern" in node:
            return _regex(node["pattern"])
        if node.get("format") == "date-time":
            return st.just("2026-12-01T00:00:00Z")
        return st.text(
            st.characters(codec="utf-8", exclude_categories=("Cs",)),
            min_size=node.get("minLength", 0),
            max_size=min(node.get("maxLength", 24), 24),
        )
    if kind == "array":
        item = node.get("items") or {}
        if budget <= 0:
            return st.just([])
        return st.lists(values(item, budget - 1), min_size=node.get("minItems", 0), max_size=2)
    if kind == "object" or "properties" in node:
        properties: dict[str, Any] = node.get("properties") or {}
        if not properties:
            extra = node.get("additionalProperties")
            if isinstance(extra, dict) and budget > 0:
                return st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True),
                                       values(extra, budget - 1), max_size=2)  # fmt: skip
            return st.just({})
        required = [name for name in node.get("required", []) if name in properties]
        optional = sorted(set(properties) - set(required))
        chosen = st.just([]) if budget <= 0 or not optional else st.lists(
            st.sampled_from(optional), max_size=min(3, len(optional)), unique=True
        )  # fmt: skip
        return chosen.flatmap(
            lambda names: st.fixed_dictionaries(
                {name: values(properties[name], budget - 1) for name in [*required, *names]}
            )
        )
    return st.none() | st.integers() | _TEXT


_OTHER_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "string": st.integers() | st.booleans() | st.just([]) | st.just({"a": 1}),
    "integer": st.just("12") | st.booleans() | st.just(1.5) | st.just([1]),
    "number": st.just("1.5") | st.booleans() | st.just({}),
    "boolean": st.just("true") | st.integers(0, 1) | st.just([]),
    "array": st.just("a") | st.integers() | st.just({"a": 1}),
    "object": st.just("a") | st.integers() | st.just([{}]) | st.booleans(),
}


def wrong_type(node: dict[str, Any]) -> st.SearchStrategy[Any] | None:
    if node.get("x-kubernetes-int-or-string"):
        return st.booleans() | st.just([]) | st.just({})
    kind = node.get("type") or ("object" if "properties" in node else None)
    return _OTHER_TYPE.get(kind) if kind else None


def out_of_range(node: dict[str, Any]) -> st.SearchStrategy[Any] | None:
    options: list[st.SearchStrategy[Any]] = []
    if "enum" in node:
        options.append(_TEXT.filter(lambda s: s not in node["enum"]))
    if "minimum" in node:
        options.append(st.integers(-(2**40), node["minimum"] - 1))
    if "maximum" in node:
        options.append(st.integers(node["maximum"] + 1, 2**62))
    if "maxLength" in node:
        # A short random text repeated past the limit: Hypothesis cannot draw texts of some schemas' limits.
        limit = node["maxLength"]
        over = st.text(st.sampled_from("ab-é"), min_size=1, max_size=8).map(
            lambda part: part * (limit // len(part) + 1)
        )
        options.append(st.tuples(over, st.text("ab-é", max_size=40)).map("".join))
    if "minLength" in node and node["minLength"] > 0:
        options.append(st.just(""))
    if "pattern" in node:
        pattern = re.compile(node["pattern"])
        options.append(_TEXT.filter(lambda s: not pattern.search(s)))
    if node.get("format") == "int32":
        options.append(st.integers(2**31, 2**62) | st.integers(-(2**62), -(2**31) - 1))
    if node.get("minItems"):
        options.append(st.just([]))
    return st.one_of(options) if options else None


@cache
def _constrained(kind: str) -> list[Path_]:
    """Paths (list items as index 0) to every constrained field of the kind's spec, depth-first."""
    found: list[Path_] = []

    def walk(node: dict[str, Any], path: Path_) -> None:
        if len(path) > 14:
            return
        if out_of_range(node) is not None:
            found.append(path)
        for name, child in (node.get("properties") or {}).items():
            walk(child, (*path, name))
        if isinstance(node.get("items"), dict):
            walk(node["items"], (*path, 0))

    walk(schema(kind)["properties"]["spec"], ("spec",))
    return found


def _materialize(obj: dict[str, Any], path: Path_) -> None:
    """Creates the parents of `path` that `obj` lacks ({} for a name step, [{}] for an index step)."""
    node: Any = obj
    for step, following in zip(path[:-1], path[1:], strict=True):
        blank: Any = [] if isinstance(following, int) else {}
        if isinstance(step, int):
            while len(node) <= step:
                node.append(blank)
        elif not isinstance(node.get(step), type(blank)):
            node[step] = blank
        node = node[step]
    if isinstance(path[-1], int):
        while len(node) <= path[-1]:
            node.append({})


_UNKNOWN = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1, max_size=15)
_OBJECT_NAME = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=6, max_size=6)

# -- cases --------------------------------------------------------------------------------------------------

_HOSTILE_NAMES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40),
    st.text("abc-Ω文😀", min_size=1, max_size=20),
    st.text("abcdefghij", min_size=64, max_size=300),
    st.just("UPPER"),
    st.just("-dash"),
    st.just("a" * 300),
)


@st.composite
def cases(draw: st.DrawFn, kind: str, case: str, namespace: str) -> Case:
    root = schema(kind)
    obj = example(kind)
    obj["metadata"] = {"name": "h" + draw(_OBJECT_NAME), "namespace": namespace}
    spec_paths = [p for p in paths(obj["spec"], ("spec",)) if schema_at(root, p) is not None]
    result = Case(kind, case, obj)
    if case == "generated":
        parents = [p for p in [("spec",), *spec_paths] if (schema_at(root, p) or {}).get("properties")]
        parent = draw(st.sampled_from(parents))
        node = schema_at(root, parent) or {}
        name = draw(st.sampled_from(sorted(node["properties"])))
        result.path = (*parent, name)
        put(obj, result.path, draw(values(node["properties"][name])))
    elif case == "wrong_type":
        typed = [p for p in spec_paths if wrong_type(schema_at(root, p) or {}) is not None]
        result.path = draw(st.sampled_from(typed))
        put(obj, result.path, draw(wrong_type(schema_at(root, result.path) or {})))  # type: ignore[arg-type]
    elif case == "out_of_range":
        result.path = draw(st.sampled_from(_constrained(kind)))
        _materialize(obj, result.path)
        result.notes["materialized"] = True
        put(obj, result.path, draw(out_of_range(schema_at(root, result.path) or {})))  # type: ignore[arg-type]
    elif case == "missing_required":
        required = [
            p for p in spec_paths
            if isinstance(p[-1], str) and p[-1] in (schema_at(root, p[:-1]) or {}).get("required", [])
        ]  # fmt: skip
        if not required:  # the example has no required field below spec: spec itself then
            required = [("spec",)] if "spec" in root.get("required", []) else [("metadata", "name")]
        result.path = draw(st.sampled_from(required))
        del get(obj, result.path[:-1])[result.path[-1]]
    elif case == "unknown_field":
        objects = [
            p for p in [("spec",), *spec_paths]
            if isinstance(get(obj, p), dict) and (schema_at(root, p) or {}).get("properties")
        ]  # fmt: skip
        parent = draw(st.sampled_from(objects))
        known = (schema_at(root, parent) or {}).get("properties") or {}
        name = "x" + draw(_UNKNOWN)
        assume(name not in known)
        result.path = (*parent, name)
        put(obj, result.path, draw(st.integers() | _TEXT | st.just({"nested": [1, 2]})))
    elif case == "hostile_name":
        where: list[Path_] = [("metadata", "name")]
        where += [p for p in spec_paths if p[-1] == "groupName"]
        result.path = draw(st.sampled_from(where))
        put(obj, result.path, draw(_HOSTILE_NAMES))
    elif case == "hostile_metadata":
        where_ = draw(st.sampled_from(["labels", "annotations"]))
        key = draw(
            st.sampled_from(["app", "example.com/team", "ray.io/overwrite-container-cmd"]) | _HOSTILE_NAMES
        )
        value = draw(_HOSTILE_NAMES | st.just("") | st.text("xé", min_size=60, max_size=70))
        result.path = ("metadata", where_)
        obj["metadata"][where_] = {key: value}
    elif case == "deep_nesting":
        result.path = draw(st.sampled_from([p for p in spec_paths if isinstance(p[-1], str)]))
        depth = draw(st.sampled_from([64, 500, 2000, 20000]))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        put(obj, result.path, _DEEP)
        result.deep = opener * depth + "1" + closer * depth
        result.notes["depth"] = depth
    elif case == "huge_value":
        free = [p for p in spec_paths if (schema_at(root, p) or {}).get("type") == "string" and "enum" not in (schema_at(root, p) or {})]  # fmt: skip
        result.path = draw(st.sampled_from(free or [("spec", "rayVersion")]))
        size = draw(
            st.sampled_from([4096, 65536, 131072])
        )  # even in 4-byte characters, twice (managedFields keys repeat list-map keys), under etcd's 1.5 MiB
        put(obj, result.path, draw(st.sampled_from("xé😀")) * size)
    else:
        raise ValueError(case)
    return result


def all_kinds(case: str, namespace: str) -> st.SearchStrategy[Case]:
    """Cases of one kind of case, for any of the four resource kinds."""
    return st.sampled_from(sorted(KINDS)).flatmap(lambda kind: cases(kind, case, namespace))
