"""Authentication: the admin's bearer token, ServiceAccount tokens, and the admin kubeconfig.

- The admin token is random, made on first start and kept in `DIR/admin-token` (mode 0600, as every
  secret in the data directory: see privatefiles.py); it authenticates as
  `localkube-admin` in `system:masters` (allowed everything, as on a real cluster).
- Users are `rbac.UserInfo`, which RBAC decides on.
- ServiceAccount tokens are HS256 JSON Web Tokens signed with a key kept in `DIR/pki/sa.key`, carrying
  the claims a real cluster's tokens carry (`sub` = `system:serviceaccount:<ns>:<name>`). A token is
  accepted while unexpired and while its ServiceAccount exists with the uid it names, so deleting the
  ServiceAccount revokes its tokens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml

from localkube.server.privatefiles import FILE_MODE, private_directory, write_private
from localkube.server.rbac import AUTHENTICATED, MASTERS, UserInfo, service_account_user

ADMIN_USER = "localkube-admin"
ISSUER = "https://kubernetes.default.svc.cluster.local"


def _read_or_make(path: Path, make: Callable[[], str]) -> str:
    if path.exists():
        # Narrowed as well: a file written by an older version may be readable by others.
        path.chmod(FILE_MODE)
        return path.read_text().strip()
    private_directory(path.parent)
    value = make()
    write_private(path, (value + "\n").encode())
    return value


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Authenticator:
    """Maps a request's bearer token to a user; issues ServiceAccount tokens.

    `find_service_account(namespace, name)` returns the live ServiceAccount or None."""

    def __init__(
        self, data_dir: Path, find_service_account: Callable[[str, str], dict[str, Any] | None]
    ) -> None:
        self.admin_token = _read_or_make(data_dir / "admin-token", lambda: secrets.token_urlsafe(32))
        self._signing_key = _read_or_make(data_dir / "pki" / "sa.key", lambda: secrets.token_hex(32)).encode()
        self._find_service_account = find_service_account

    def authenticate(self, authorization: str | None) -> UserInfo | None:
        scheme, _, token = (authorization or "").partition(" ")
        # The scheme is case-insensitive (the in-cluster client sends "bearer").
        if scheme.lower() != "bearer":
            return None
        token = token.strip()
        if hmac.compare_digest(token, self.admin_token):
            return UserInfo(ADMIN_USER, (MASTERS, AUTHENTICATED))
        return self._service_account_user(token)

    def issue_service_account_token(
        self, namespace: str, name: str, uid: str, expiration_seconds: int, audiences: list[str]
    ) -> tuple[str, int]:
        """A signed token for a ServiceAccount and its expiry (Unix seconds)."""
        now = int(time.time())
        expiry = now + expiration_seconds
        claims = {
            "iss": ISSUER,
            "aud": audiences or [ISSUER],
            "sub": f"system:serviceaccount:{namespace}:{name}",
            "iat": now,
            "nbf": now,
            "exp": expiry,
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        }
        header = _b64(orjson.dumps({"alg": "HS256", "typ": "JWT"}))
        payload = _b64(orjson.dumps(claims))
        signature = hmac.new(self._signing_key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(signature)}", expiry

    def _service_account_user(self, token: str) -> UserInfo | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        expected = hmac.new(self._signing_key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(_unb64(parts[2]), expected):
                return None
            claims = orjson.loads(_unb64(parts[1]))
            account = claims["kubernetes.io"]
            namespace, name, uid = (
                account["namespace"],
                account["serviceaccount"]["name"],
                account["serviceaccount"]["uid"],
            )
        except (ValueError, KeyError, TypeError):
            return None
        if claims.get("exp", 0) < time.time():
            return None
        live = self._find_service_account(namespace, name)
        if live is None or live.get("metadata", {}).get("uid") != uid:
            return None
        return service_account_user(namespace, name)


def write_kubeconfig(path: Path, server_url: str, ca_cert: Path, token: str) -> None:
    """An admin kubeconfig for `server_url`, trusting the CA, with the admin bearer token."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "localkube",
                "cluster": {
                    "server": server_url,
                    "certificate-authority-data": base64.b64encode(ca_cert.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": "localkube-admin", "user": {"token": token}}],
        "contexts": [
            {
                "name": "localkube",
                "context": {"cluster": "localkube", "user": "localkube-admin", "namespace": "default"},
            }
        ],
        "current-context": "localkube",
        "preferences": {},
    }
    write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
