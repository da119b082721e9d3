#!/usr/bin/env python3
"""Generates src/localkube/server/protobuf_schema.py, the wire schema localkube decodes protobuf bodies with.

    .venv/bin/python scripts/protobuf_schema.py           # rewrites the module
    .venv/bin/python scripts/protobuf_schema.py --check   # exits 1 (saying so) if the module is not what it makes
    .venv/bin/python scripts/protobuf_schema.py --print   # writes the module to stdout

It gets k8s.io/api and k8s.io/apimachinery through the Go module proxy (`go mod download`, into Go's own
module cache: a second run reads them from there without the network), at the release the real control
plane is built at (`kubernetes_version` in scripts/tools/gobuild.sh), and reads:
- their `generated.proto` files: every message's fields with their numbers, labels and types;
- their Go types (`types.go` and the package's other hand-written files): each field's JSON name and
  `omitempty`, whether it is a pointer, and whether Go embeds it inline, which the .proto does not say.
The kinds covered are every built-in kind localkube serves (`localkube.server.registry.BUILTIN_TYPES`)
whose group k8s.io/api defines, plus the bodies of the subresources and options it accepts (`_EXTRA_KINDS`);
the messages written are those their fields reach. Only field numbers, names and types are written out, no
text of the sources.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "src/localkube/server/protobuf_schema.py"
GOBUILD = ROOT / "scripts/tools/gobuild.sh"
MODULES = ("k8s.io/api", "k8s.io/apimachinery")

# Bodies that are no served kind's objects: subresources' (pods/binding, <workload>/scale,
# serviceaccounts/token) and DeleteOptions, which client-go sends as `v1` or `meta.k8s.io/v1` (or under
# the resource's own group version, which the codec reads by kind alone).
_EXTRA_KINDS = (
    ("", "v1", "Binding"),
    ("autoscaling", "v1", "Scale"),
    ("authentication.k8s.io", "v1", "TokenRequest"),
    ("", "v1", "DeleteOptions"),
    ("meta.k8s.io", "v1", "DeleteOptions"),
)

# apimachinery's messages whose JSON is not their message's shape, by the codec's name for their form.
_WIRE_FORMS = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstr",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "microtime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "raw",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "raw",
}
_SCALARS = {
    "string": "string",
    "bytes": "bytes",
    "bool": "bool",
    **dict.fromkeys(("int32", "int64", "uint32", "uint64", "sint32", "sint64"), "int"),
}


class SchemaError(Exception):
    """The sources hold something this generator does not know how to write (a new wire form, a field
    without its Go counterpart): failing beats writing a schema that decodes it wrongly."""


# --- The sources ---------------------------------------------------------------------------------------------
def kubernetes_version() -> str:
    match = re.search(r"^kubernetes_version=(v1\.\d+\.\d+)$", GOBUILD.read_text(), re.M)
    if match is None:
        raise SchemaError(f"no kubernetes_version in {GOBUILD}")
    return match.group(1)


def module_version() -> str:
    """k8s.io/api's release of the Kubernetes release (v1.X.Y is v0.X.Y)."""
    return "v0." + kubernetes_version().removeprefix("v1.")


def download(version: str) -> dict[str, Path]:
    """Each module's directory in Go's module cache, downloaded through the proxy if not there yet."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not os.access(go, os.X_OK):
        raise SchemaError("generating the protobuf schema needs Go; none found on PATH")
    with tempfile.TemporaryDirectory() as outside_any_module:
        done = subprocess.run(
            [go, "mod", "download", "-json", *(f"{module}@{version}" for module in MODULES)],
            cwd=outside_any_module,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"},
        )
    dirs: dict[str, Path] = {}
    decoder, text, position = json.JSONDecoder(), done.stdout, 0
    while text[position:].strip():  # one JSON object per module, one after the other
        position += len(text[position:]) - len(text[position:].lstrip())
        info, position = decoder.raw_decode(text, position)
        if "Error" in info:
            raise SchemaError(f"go mod download {info['Path']}@{version}: {info['Error']}")
        dirs[info["Path"]] = Path(info["Dir"])
    if done.returncode != 0 or set(dirs) != set(MODULES):
        raise SchemaError(f"go mod download failed ({done.returncode}): {done.stderr.strip()}")
    return dirs


@dataclass(frozen=True)
class ProtoField:
    label: str  # optional, repeated, map
    type: str  # the value's type, fully qualified when a message
    name: str
    number: int


@dataclass(frozen=True)
class Message:
    package: str  # k8s.io.api.core.v1
    go_dir: Path
    name: str
    fields: tuple[ProtoField, ...]

    @property
    def full_name(self) -> str:
        return f"{self.package}.{self.name}"


_PROTO_FIELD = re.compile(
    r"^\s*(?:(optional|repeated|required) ([\w.]+)|map<(\w+), ([\w.]+)>) (\w+) = (\d+);$"
)


def read_protos(dirs: dict[str, Path]) -> dict[str, Message]:
    """Every message of the modules' generated.proto files, by fully qualified name."""
    messages: dict[str, Message] = {}
    for module, root in dirs.items():
        for proto in sorted(root.rglob("generated.proto")):
            relative = proto.parent.relative_to(root)
            if "testapigroup" in relative.parts:
                continue
            for message in _parse_proto(proto.read_text(), module, root / relative):
                messages[message.full_name] = message
    return messages


def _parse_proto(text: str, module: str, go_dir: Path) -> Iterator[Message]:
    package = ""
    current: str | None = None
    fields: list[ProtoField] = []
    for line in re.sub(r"/\*.*?\*/", "", text, flags=re.S).splitlines():
        stripped = line.split("//", 1)[0].strip()
        if not stripped:
            continue
        if stripped.startswith("package "):
            package = stripped.removeprefix("package ").rstrip(";")
        elif stripped.startswith("message ") and stripped.endswith("{"):
            if current is not None:
                raise SchemaError(f"{go_dir}: nested message in {current}")
            current, fields = stripped.split()[1], []
        elif stripped == "}" and current is not None:
            yield Message(package, go_dir, current, tuple(fields))
            current = None
        elif current is not None:
            match = _PROTO_FIELD.match(stripped)
            if match is None:
                raise SchemaError(f"{go_dir}/generated.proto: {current}: cannot read {stripped!r}")
            label, value_type, key_type, map_value, name, number = match.groups()
            if key_type is not None:
                if key_type != "string":
                    raise SchemaError(f"{current}.{name}: map keys of type {key_type}")
                label, value_type = "map", map_value
            fields.append(ProtoField(label, _qualify(value_type, package), name, int(number)))
        elif not stripped.startswith(("syntax", "import", "option")):
            raise SchemaError(f"{go_dir}/generated.proto: cannot read {stripped!r}")


def _qualify(type_name: str, package: str) -> str:
    if type_name in _SCALARS:
        return type_name
    if type_name.startswith("."):
        return type_name[1:]
    return f"{package}.{type_name}"


@dataclass(frozen=True)
class GoField:
    go_type: str  # as written: *int32, []Container, metav1.ObjectMeta
    json_name: str  # "" for a struct embedded inline
    omit_empty: bool
    number: int


_GO_TYPE = re.compile(r"^type (\w+) (struct \{|\S.*)$")
_GO_FIELD = re.compile(r"^\t(?:(\w+)\s+)?(\S+)\s+`([^`]*)`")
_TAG = re.compile(r'(\w+):"([^"]*)"')
_GENERATED = re.compile(r"(^generated\..*|^zz_generated.*|_generated\.go$|_test\.go$)")


def read_go_types(go_dir: Path) -> tuple[dict[str, dict[int, GoField]], dict[str, str]]:
    """A package's structs (their protobuf-tagged fields, by field number) and its other named types (the
    type each stands for), from its hand-written Go files (gofmt'd: one field a line)."""
    structs: dict[str, dict[int, GoField]] = {}
    named: dict[str, str] = {}
    for source in sorted(go_dir.glob("*.go")):
        if _GENERATED.search(source.name):
            continue
        current: str | None = None
        depth = 0
        for line in source.read_text().splitlines():
            if current is None:
                match = _GO_TYPE.match(line)
                if match is None:
                    continue
                if match.group(2) == "struct {":
                    current, depth = match.group(1), 1
                    structs[current] = {}
                else:
                    named[match.group(1)] = match.group(2).split("//")[0].strip()
                continue
            if line.lstrip().startswith("//"):
                continue
            code = re.sub(r"`[^`]*`", "", line).split("//", 1)[0]
            if depth == 1 and (field := _GO_FIELD.match(line)):
                _, go_type, tags = field.groups()
                tag = dict(_TAG.findall(tags))
                if "protobuf" in tag and tag["protobuf"] != "-":
                    number = int(tag["protobuf"].split(",")[1])
                    json_options = tag.get("json", "").split(",")
                    structs[current][number] = GoField(
                        go_type=go_type,
                        json_name=json_options[0],
                        omit_empty=bool({"omitempty", "omitzero"} & set(json_options[1:])),
                        number=number,
                    )
            depth += code.count("{") - code.count("}")
            if depth == 0:
                current = None
    return structs, named


# --- The schema -------------------------------------------------------------------------------------------
def short_name(full_name: str) -> str:
    """A message's name in the table: its API group's package and version, then its name
    (`core.v1.Pod`, `meta.v1.ObjectMeta`)."""
    for prefix in ("k8s.io.api.", "k8s.io.apimachinery.pkg.apis.", "k8s.io.apimachinery.pkg."):
        if full_name.startswith(prefix):
            return full_name.removeprefix(prefix)
    raise SchemaError(f"a message outside k8s.io/api and k8s.io/apimachinery: {full_name}")


def group_packages(dirs: dict[str, Path], messages: dict[str, Message]) -> dict[tuple[str, str], str]:
    """(API group, version) -> proto package, from each package's GroupName."""
    packages: dict[tuple[str, str], str] = {}
    for message in messages.values():
        register = message.go_dir / "register.go"
        if not message.package.startswith("k8s.io.api.") or not register.exists():
            continue
        match = re.search(r'^const GroupName = "([^"]*)"', register.read_text(), re.M)
        if match is None:
            raise SchemaError(f"no GroupName in {register}")
        packages[(match.group(1), message.package.rsplit(".", 1)[1])] = message.package
    packages[("meta.k8s.io", "v1")] = "k8s.io.apimachinery.pkg.apis.meta.v1"
    return packages


def served_kinds() -> list[tuple[str, str, str]]:
    sys.path.insert(0, str(ROOT / "src"))
    from localkube.server.registry import BUILTIN_TYPES

    return [(t.group, t.version, t.kind) for t in BUILTIN_TYPES]


Field = tuple[str, str, str]


class Generator:
    def __init__(self, messages: dict[str, Message]) -> None:
        self._messages = messages
        self._go: dict[Path, tuple[dict[str, dict[int, GoField]], dict[str, str]]] = {}
        self.table: dict[str, dict[int, Field]] = {}

    def _go_types(self, message: Message) -> tuple[dict[str, dict[int, GoField]], dict[str, str]]:
        if message.go_dir not in self._go:
            self._go[message.go_dir] = read_go_types(message.go_dir)
        return self._go[message.go_dir]

    def add(self, full_name: str) -> str:
        """Writes a message (and every message its fields reach) into the table; returns its name there,
        or the wire form it is read as."""
        if full_name in _WIRE_FORMS:
            return _WIRE_FORMS[full_name]
        message = self._messages.get(full_name)
        if message is None:
            raise SchemaError(f"no message {full_name}")
        structs, named = self._go_types(message)
        if message.name not in structs:
            # A named slice (authentication's ExtraValue: `[]string`): JSON writes it as the list.
            if named.get(message.name) == "[]string" and [f.name for f in message.fields] == ["items"]:
                return "strings"
            raise SchemaError(f"{full_name}: no Go struct of that name, and no wire form known for it")
        name = short_name(full_name)
        if name in self.table:
            return name
        self.table[name] = {}  # reserved first: a message may reach itself
        go_fields = structs[message.name]
        fields: dict[int, Field] = {}
        for proto in message.fields:
            go = go_fields.get(proto.number)
            if go is None:
                raise SchemaError(f"{full_name}.{proto.name} = {proto.number}: no Go field has that number")
            value = _SCALARS.get(proto.type) or self.add(proto.type)
            if proto.label == "map":
                fields[proto.number] = (go.json_name, f"map<{value}>", "")
                continue
            scalar = proto.type in _SCALARS
            if proto.label == "repeated":
                flag = "repeated"
            elif scalar and go.omit_empty and not go.go_type.startswith("*"):
                # Go writes a non-pointer's zero value to protobuf; its JSON leaves it out.
                flag = "omitzero"
            else:
                flag = ""
            fields[proto.number] = (go.json_name, value, flag)
        self.table[name] = fields
        return name


def generate() -> str:
    version = module_version()
    dirs = download(version)
    messages = read_protos(dirs)
    packages = group_packages(dirs, messages)
    generator = Generator(messages)
    kinds: dict[tuple[str, str], str] = {}
    for group, api_version, kind in [*served_kinds(), *_EXTRA_KINDS]:
        # DeleteOptions is apimachinery's, whatever group version a client names it under.
        package = packages.get(("meta.k8s.io", "v1") if kind == "DeleteOptions" else (group, api_version))
        if package is None:
            continue  # a group k8s.io/api does not define (apiextensions.k8s.io): JSON only
        full_version = f"{group}/{api_version}" if group else api_version
        kinds[(full_version, kind)] = generator.add(f"{package}.{kind}")
    return render(version, generator.table, kinds)


_HEADER = '''\
"""The protobuf wire schema of the Kubernetes kinds localkube reads from protobuf request bodies.

Generated by scripts/protobuf_schema.py from the generated.proto files and Go types of k8s.io/api and
k8s.io/apimachinery {version}: do not edit; run the script again.

Clients built on client-go send protobuf for built-in kinds: kubectl's typed commands, and every
controller on client-go or controller-runtime. `MESSAGES` maps a message to its fields: field number ->
(JSON name, type, flag). A type is a scalar (`string`, `bytes`, `int`, `bool`), one of apimachinery's wire
forms (`quantity`, `intorstr`, `time`, `microtime`, `raw`, and `strings`: a named list of
strings such as the user-info `ExtraValue`, a message of one repeated string that JSON shows as the list),
another message's name, or `map<...>` of one of these. An empty JSON name marks a struct Go embeds inline
(`Probe`'s handler, `Volume`'s source): its fields belong to the enclosing object. Messages are named by
their API group's package and version (`core.v1.Pod`, `meta.v1.ObjectMeta`). The flag is `repeated`, or
`omitzero` for a Go field that is not a pointer and is `omitempty` in JSON: Go writes its zero value
(0, false, "") to protobuf, and a Kubernetes API server's JSON leaves it out. `KINDS` maps (apiVersion,
kind) to the message a body of that kind holds: every built-in kind localkube serves from k8s.io/api's
groups, and the bodies of its subresources and options.
"""

from __future__ import annotations

Field = tuple[str, str, str]

'''


def render(version: str, table: dict[str, dict[int, Field]], kinds: dict[tuple[str, str], str]) -> str:
    lines = [_HEADER.format(version=version), "MESSAGES: dict[str, dict[int, Field]] = {"]
    for name in sorted(table):
        fields = ", ".join(
            f"{number}: {field!r}".replace("'", '"') for number, field in sorted(table[name].items())
        )
        lines.append(f'    "{name}": {{{fields}}},')
    lines += ["}  # fmt: skip", "", "KINDS: dict[tuple[str, str], str] = {"]
    for (api_version, kind), message in sorted(kinds.items()):
        lines.append(f'    ("{api_version}", "{kind}"): "{message}",')
    lines += ["}  # fmt: skip", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail if the committed module differs")
    mode.add_argument("--print", action="store_true", help="write the module to stdout")
    args = parser.parse_args()
    try:
        text = generate()
    except SchemaError as exc:
        print(f"protobuf_schema: {exc}", file=sys.stderr)
        return 2
    if args.print:
        sys.stdout.write(text)
    elif args.check:
        committed = OUTPUT.read_text()
        if committed != text:
            diff = difflib.unified_diff(
                committed.splitlines(), text.splitlines(), str(OUTPUT), "generated", lineterm="", n=0
            )
            print("\n".join(list(diff)[:40]), file=sys.stderr)
            print(
                f"{OUTPUT.relative_to(ROOT)} is not what scripts/protobuf_schema.py generates: run it",
                file=sys.stderr,
            )
            return 1
    else:
        OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
