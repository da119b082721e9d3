"""The pure projection of volume contents (volumes.py) and the atomic volume directory (atomicdir.py)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from localkube.node import atomicdir
from localkube.node.podvolumes import PodVolumes
from localkube.node.volumes import File, Sources, Token, VolumeError, automounts_token, project

POD = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"b": "2", "a": 'say "hi"'}},
    "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "resources": {"limits": {"cpu": "1500m"}}}]},
}  # fmt: skip
STORE: dict[tuple[str, str], dict[str, Any]] = {
    ("configmaps", "cfg"): {"data": {"one": "1", "two": "2"}, "binaryData": {"bin": base64.b64encode(b"\0").decode()}},
    ("secrets", "sec"): {"data": {"pw": base64.b64encode(b"s3cret").decode()}},
    ("serviceaccounts", "robot"): {"metadata": {"name": "robot", "uid": "sa-uid"}},
}  # fmt: skip
issued: list[tuple[str, str, str, int, list[str]]] = []


def _issue(namespace: str, name: str, uid: str, expiration: int, audiences: list[str]) -> Token:
    issued.append((namespace, name, uid, expiration, audiences))
    return Token(f"token-{len(issued)}", 0)


SOURCES = Sources(lambda plural, ns, name: STORE.get((plural, name)), _issue, b"CA", {"cpu": "8"})


def test_a_config_map_projects_every_key_with_the_default_mode_or_only_its_items() -> None:
    everything = project({"name": "v", "configMap": {"name": "cfg"}}, POD, SOURCES)
    assert everything == {"one": File(b"1", 0o644), "two": File(b"2", 0o644), "bin": File(b"\0", 0o644)}
    items = {"name": "cfg", "defaultMode": 0o440, "items": [{"key": "two", "path": "sub/2"}, {"key": "one", "path": "x", "mode": 0o600}]}  # fmt: skip
    assert project({"name": "v", "configMap": items}, POD, SOURCES) == {
        "sub/2": File(b"2", 0o440),
        "x": File(b"1", 0o600),
    }


def test_missing_sources_fail_the_mount_unless_optional() -> None:
    with pytest.raises(VolumeError, match='configmap "nope" not found'):
        project({"name": "v", "configMap": {"name": "nope"}}, POD, SOURCES)
    assert project({"name": "v", "configMap": {"name": "nope", "optional": True}}, POD, SOURCES) == {}
    with pytest.raises(VolumeError, match="secret references non-existent secret key: other"):
        project(
            {"name": "v", "secret": {"secretName": "sec", "items": [{"key": "other", "path": "o"}]}},
            POD,
            SOURCES,
        )
    with pytest.raises(VolumeError, match="must be relative"):
        project(
            {"name": "v", "configMap": {"name": "cfg", "items": [{"key": "one", "path": "../x"}]}},
            POD,
            SOURCES,
        )


def test_downward_api_files_and_a_projected_token() -> None:
    downward = {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "cpu", "resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}},
    ]}  # fmt: skip
    assert project({"name": "v", "downwardAPI": downward}, POD, SOURCES) == {
        "labels": File(b'a="say \\"hi\\""\nb="2"', 0o644),
        "cpu": File(b"1500", 0o644),
    }
    sources = [{"serviceAccountToken": {"audience": "vault", "expirationSeconds": 60, "path": "t"}}, {"secret": {"name": "sec"}}]  # fmt: skip
    files = project({"name": "v", "projected": {"sources": sources, "defaultMode": 0o400}}, POD, SOURCES)
    assert files == {"t": File(f"token-{len(issued)}".encode(), 0o400), "pw": File(b"s3cret", 0o400)}
    assert issued[-1] == ("ns", "robot", "sa-uid", 600, ["vault"])  # at least 600 s, as the API server asks


def test_the_pod_setting_for_the_token_wins_over_its_service_accounts() -> None:
    refuses = {"automountServiceAccountToken": False}
    assert automounts_token(POD, None) and automounts_token(POD, {})
    assert not automounts_token(POD, refuses)
    assert automounts_token({"spec": {"automountServiceAccountToken": True}}, refuses)


def test_an_atomic_update_swaps_the_data_link_and_drops_what_went(tmp_path: Path) -> None:
    assert atomicdir.write(tmp_path, {"a": File(b"1", 0o644), "d/b": File(b"2", 0o600)})
    first = os.readlink(tmp_path / "..data")
    assert (tmp_path / "a").read_bytes() == b"1" and os.readlink(tmp_path / "a") == "..data/a"
    assert not atomicdir.write(tmp_path, {"a": File(b"1", 0o644), "d/b": File(b"2", 0o600)})  # unchanged
    assert atomicdir.write(tmp_path, {"a": File(b"changed", 0o644)})
    assert (tmp_path / "a").read_bytes() == b"changed"
    assert not (tmp_path / "d").exists() and not (tmp_path / first).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["..data", os.readlink(tmp_path / "..data"), "a"]
    )


def test_a_sync_writes_a_projected_volume_only_when_its_files_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = {"greeting": "hello"}
    sources = Sources(lambda plural, ns, name: {"data": dict(data)}, None, b"", {})
    volumes = PodVolumes(tmp_path, sources, api_access=False, may_mount=False)
    pod = {**POD, "spec": {"volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]}}
    volumes.setup(pod)
    writes: list[Path] = []
    write = atomicdir.write

    def counted(path: Path, files: dict[str, File]) -> bool:
        writes.append(path)
        return write(path, files)

    monkeypatch.setattr(atomicdir, "write", counted)
    volumes.sync(pod)
    assert writes == []  # nothing changed: the directory is neither written nor read back
    data["greeting"] = "hello again"
    volumes.sync(pod)
    assert writes == [tmp_path / "configmap" / "cfg"]
    assert (tmp_path / "configmap" / "cfg" / "greeting").read_bytes() == b"hello again"
