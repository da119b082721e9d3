"""S3-compatible object storage through boto3, AWS's own SDK: the best kept S3 client for Python, which
speaks to any S3-compatible server (path-style addressing, a custom endpoint), and takes credentials from
the standard chain (environment, shared files, a pod's web identity) so none has to pass through our code.

Settings are upstream's variables: `S3_BUCKET`, `S3_ENDPOINT` (host[:port] or URL), `S3_REGION`,
`S3FORCE_PATH_STYLE`, `S3DISABLE_SSL`, and the standard `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_SESSION_TOKEN` (from a Secret through `valueFrom`). Errors name the bucket and key, never a credential.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import boto3
import botocore.config
import botocore.exceptions

from kuberay.history.storage import NoSuchKey, Storage, StorageError, check_key

_NOT_FOUND = ("404", "NoSuchKey", "NotFound")
MAX_KEY_BYTES = 1024  # S3's bound on a key, UTF-8


def _storable(key: str) -> bool:
    """Whether any object can have `key`: one past S3's bound or with a NUL (S3 answers 400 Bad Request,
    not 404) was never stored, so a read of it finds nothing without asking."""
    return len(key.encode()) <= MAX_KEY_BYTES and "\x00" not in key


class S3Storage(Storage):
    """One bucket. The client is thread-safe, so the collector's and server's threads share it."""

    def __init__(self, bucket: str, client: Any) -> None:
        self.bucket = bucket
        self._client = client

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> S3Storage:
        bucket = env.get("S3_BUCKET", "")
        if not bucket:
            raise StorageError("S3_BUCKET must be set when STORAGE_BACKEND is s3")
        insecure = env.get("S3DISABLE_SSL", "").lower() == "true"
        endpoint = env.get("S3_ENDPOINT", "")
        if endpoint and "://" not in endpoint:
            endpoint = ("http://" if insecure else "https://") + endpoint
        path_style = env.get("S3FORCE_PATH_STYLE", "").lower() == "true"
        config = botocore.config.Config(
            s3={"addressing_style": "path" if path_style else "auto"},
            retries={"max_attempts": 3, "mode": "standard"},
            # Checksums only where S3 requires them: several S3-compatible servers refuse the newer
            # flexible-checksum headers boto3 sends by default.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            connect_timeout=5,
            read_timeout=30,
        )
        session = boto3.session.Session(
            aws_access_key_id=env.get("AWS_ACCESS_KEY_ID") or None,
            aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
            aws_session_token=env.get("AWS_SESSION_TOKEN") or None,
            region_name=env.get("S3_REGION") or None,
        )
        client = session.client("s3", endpoint_url=endpoint or None, use_ssl=not insecure, config=config)
        return cls(bucket, client)

    def _fail(self, key: str, error: Exception) -> StorageError:
        if isinstance(error, botocore.exceptions.ClientError):
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in _NOT_FOUND:
                return NoSuchKey(key)
            return StorageError(f"s3://{self.bucket}/{key}: {code or 'error'}")
        return StorageError(f"s3://{self.bucket}/{key}: {type(error).__name__}")

    def put(self, key: str, data: bytes) -> None:
        try:
            self._client.put_object(Bucket=self.bucket, Key=check_key(key), Body=data)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise self._fail(key, e) from e

    def _get(self, key: str, **extra: str) -> bytes:
        if not _storable(check_key(key)):
            raise NoSuchKey(key)
        try:
            reply = self._client.get_object(Bucket=self.bucket, Key=check_key(key), **extra)
            body: bytes = reply["Body"].read()
            return body
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise self._fail(key, e) from e

    def get(self, key: str) -> bytes:
        return self._get(key)

    def read_range(self, key: str, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        try:
            return self._get(key, Range=f"bytes={start}-{start + length - 1}")
        except StorageError as e:
            if "InvalidRange" in str(e):  # past the end: as a file read there, nothing
                return b""
            raise

    def size(self, key: str) -> int | None:
        if not _storable(check_key(key)):
            return None
        try:
            reply = self._client.head_object(Bucket=self.bucket, Key=check_key(key))
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            error = self._fail(key, e)
            if isinstance(error, NoSuchKey):
                return None
            raise error from e
        return int(reply["ContentLength"])

    def keys(self, prefix: str) -> list[str]:
        base = prefix.strip("/") + "/" if prefix.strip("/") else ""
        if not _storable(base):
            return []
        keys: list[str] = []
        try:
            for page in self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=base
            ):
                # Keys ending in / are directory markers (some tools and servers make them), not objects.
                keys.extend(item["Key"] for item in page.get("Contents", ()) if not item["Key"].endswith("/"))
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise self._fail(base, e) from e
        return sorted(keys)

    def sweep(self, prefix: str) -> None:
        """Nothing: S3 stores an object whole or not at all, so a killed put leaves nothing."""

    def list_dirs(self, prefix: str) -> list[str]:
        base = prefix.strip("/") + "/" if prefix.strip("/") else ""
        if not _storable(base):
            return []
        names: list[str] = []
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=base, Delimiter="/"
            )
            for page in pages:
                names.extend(p["Prefix"][len(base) :].rstrip("/") for p in page.get("CommonPrefixes", ()))
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            raise self._fail(base, e) from e
        return sorted(names)
