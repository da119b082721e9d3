"""The storage backends against their real stores: a directory, and S3Proxy (a real S3-compatible server)
through boto3. Both keep the same contract."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kuberay.history.backends import from_env
from kuberay.history.storage import LocalDirectory, NoSuchKey, Storage, StorageError
from support.history_processes import S3Proxy


@pytest.fixture(params=["local", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    if request.param == "local":
        yield from_env({"STORAGE_BACKEND": "local", "STORAGE_LOCAL_DIR": str(tmp_path / "store")})
    else:
        s3: S3Proxy = request.getfixturevalue("s3")
        store = from_env(s3.env())
        yield store
        for key in store.keys(""):
            store._client.delete_object(Bucket=s3.bucket, Key=key)  # type: ignore[attr-defined]


def test_the_backend_contract(storage: Storage) -> None:
    assert storage.keys("a") == [] and storage.size("a/b") is None
    with pytest.raises(NoSuchKey):
        storage.get("a/b")
    storage.put("a/b/c.log", b"0123456789")
    storage.put("a/b/c.log", b"abcdefghij")  # a put replaces
    storage.put("a/d", b"")
    storage.put("z/e", b"x")
    assert storage.get("a/b/c.log") == b"abcdefghij" and storage.size("a/b/c.log") == 10
    assert storage.read_range("a/b/c.log", 3, 4) == b"defg"
    assert storage.read_range("a/b/c.log", 8, 100) == b"ij"
    assert storage.read_range("a/b/c.log", 10, 5) == b""
    assert storage.keys("a") == ["a/b/c.log", "a/d"]
    assert storage.keys("") == ["a/b/c.log", "a/d", "z/e"]
    assert storage.list_dirs("a") == ["b"] and storage.list_dirs("") == ["a", "z"]
    with pytest.raises(StorageError, match="invalid storage key '../x'"):
        storage.put("../x", b"")


def test_misconfiguration_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="STORAGE_BACKEND must be local or s3, not 'gcs'"):
        from_env({"STORAGE_BACKEND": "gcs"})
    with pytest.raises(StorageError, match="STORAGE_LOCAL_DIR must be set when STORAGE_BACKEND is local"):
        from_env({"STORAGE_BACKEND": "local"})
    with pytest.raises(StorageError, match="S3_BUCKET must be set when STORAGE_BACKEND is s3"):
        from_env({"STORAGE_BACKEND": "s3"})
    assert isinstance(
        from_env({"STORAGE_BACKEND": "LOCAL", "STORAGE_LOCAL_DIR": str(tmp_path)}), LocalDirectory
    )


def test_s3_errors_name_the_object_and_never_a_credential(s3: S3Proxy) -> None:
    wrong = from_env({**s3.env(), "AWS_SECRET_ACCESS_KEY": "not-the-secret-123"})
    with pytest.raises(StorageError) as failure:
        wrong.put("k", b"v")
    assert f"s3://{s3.bucket}/k" in str(failure.value)
    assert "not-the-secret-123" not in str(failure.value) and s3.IDENTITY not in str(failure.value)


def test_a_key_no_object_can_have_is_absent(storage: Storage) -> None:
    # Keys the server makes of a request's path or query (hostile input): past S3's 1024 bytes or a file
    # name's 255, or with a NUL. No put stored them, so reads find nothing, as reads of any absent key.
    for key in ("a/" + "x" * 2000, "a/" + "x" * 300, "a/x\x00y", "a/" + "\u00e9" * 600):
        with pytest.raises(NoSuchKey):
            storage.get(key)
        with pytest.raises(NoSuchKey):
            storage.read_range(key, 0, 10)
        assert storage.size(key) is None
        assert storage.keys(key) == [] and storage.list_dirs(key) == []
