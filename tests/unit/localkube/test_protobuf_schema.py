"""The protobuf wire schema is what scripts/protobuf_schema.py generates from k8s.io/api, for every kind
localkube serves from k8s.io/api's groups."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from localkube.server.protobuf_schema import KINDS
from localkube.server.registry import BUILTIN_TYPES

REPO = Path(__file__).resolve().parents[3]
# Served, and defined outside k8s.io/api (kube-apiserver reads CRDs in protobuf through
# k8s.io/apiextensions-apiserver's own types; client-go's dynamic and apiextensions clients send JSON).
JSON_ONLY = {("apiextensions.k8s.io/v1", "CustomResourceDefinition")}


def test_the_committed_schema_is_what_the_generator_makes() -> None:
    # The first run downloads k8s.io/api and k8s.io/apimachinery through Go's module proxy; later ones read
    # Go's module cache.
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "protobuf_schema.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_every_served_kind_of_k8s_io_api_has_its_message() -> None:
    served = {(f"{t.group}/{t.version}" if t.group else t.version, t.kind) for t in BUILTIN_TYPES}
    assert served - JSON_ONLY <= set(KINDS)
    assert not JSON_ONLY & set(KINDS)
