"""Who may call the APIServer (beyond upstream, which has no authentication of its own).

- No flag: everyone, as upstream.
- `-auth-token-file FILE`: the `Authorization` header (gRPC: `authorization` metadata) must carry one of
  the file's tokens (one a line), as `Bearer <token>` or bare, as upstream's security proxy took it.
- `-auth-token-review`: the caller's bearer token is checked with a Kubernetes TokenReview, and the
  caller's calls to Kubernetes are made with that token, so the cluster's RBAC decides what each user may
  do (a refusal comes back as PermissionDenied, 403).

A refused caller gets Unauthenticated (HTTP 401) before anything is read or written.
"""

from __future__ import annotations

import hmac
from collections import OrderedDict
from pathlib import Path

import grpc
from lightkube.config.kubeconfig import SingleConfig
from lightkube.config.models import User

from kuberay.apiserver import errors
from kuberay.apiserver.backend import Backend
from kuberay.runtime import errors as kube_errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import Resource

TOKEN_REVIEW = Resource("authentication.k8s.io/v1", "TokenReview", "tokenreviews", namespaced=False)
_CACHED_CLIENTS = 64


def bearer(authorization: str | None) -> str:
    """The token of an `Authorization` header, `Bearer <token>` or bare; Unauthenticated without one."""
    value = (authorization or "").strip()
    if value[:7].lower() == "bearer ":
        value = value[7:].strip()
    if not value:
        raise errors.unauthenticated("Unauthorized: no token in the Authorization header")
    return value


class Auth:
    """Everyone is let in, with the server's own Kubernetes credentials."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def backend_for(self, authorization: str | None) -> Backend:
        return self.backend

    async def close(self) -> None:
        return None


class TokenFileAuth(Auth):
    def __init__(self, backend: Backend, path: Path) -> None:
        super().__init__(backend)
        self._tokens = [line.strip() for line in path.read_text().splitlines() if line.strip()]
        if not self._tokens:
            raise ValueError(f"{path}: no token in the file")

    async def backend_for(self, authorization: str | None) -> Backend:
        token = bearer(authorization)
        if not any(hmac.compare_digest(token.encode(), known.encode()) for known in self._tokens):
            raise errors.unauthenticated("Unauthorized: the token is not valid")
        return self.backend


class TokenReviewAuth(Auth):
    def __init__(self, backend: Backend, config: SingleConfig) -> None:
        super().__init__(backend)
        self._config = config
        self._clients: OrderedDict[str, Client] = OrderedDict()

    async def backend_for(self, authorization: str | None) -> Backend:
        token = bearer(authorization)
        review = {"apiVersion": TOKEN_REVIEW.api_version, "kind": "TokenReview", "spec": {"token": token}}
        try:
            answer = await self.backend.kube.create(TOKEN_REVIEW, review)
        except kube_errors.KubeError as e:
            raise errors.UserError(grpc.StatusCode.UNAVAILABLE, "TokenReview failed", [str(e)]) from e
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            reason = status.get("error") or "the token is not valid"
            raise errors.unauthenticated(f"Unauthorized: {reason}")
        return Backend(self._client(token), self.backend.dashboards)

    def _client(self, token: str) -> Client:
        client = self._clients.pop(token, None)
        if client is None:
            client = Client.from_config(
                self._config._replace(user=User(token=token)), user_agent="kuberay-apiserver"
            )
        self._clients[token] = client
        while len(self._clients) > _CACHED_CLIENTS:
            # An evicted client is not closed: a request may still be using it; its connections time out.
            self._clients.popitem(last=False)
        return client

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
