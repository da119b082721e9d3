"""The server's token, as Ray's dashboard takes one, so that Ray's own frontend can log in to it: a request
carries `Authorization: Bearer <token>`, `X-Ray-Authorization: Bearer <token>` (what KubeRay's proxies
send), or the `ray-authentication-token` cookie that `POST /api/authenticate` sets. Health checks, the
authentication routes and the frontend's static files are open. Tokens are compared in constant time and
never logged."""

from __future__ import annotations

import hmac

from starlette.requests import Request

COOKIE = "ray-authentication-token"
OPEN_PATHS = ("/livez", "/readz", "/api/authentication_mode", "/api/authenticate", "/", "/favicon.ico")
OPEN_PREFIXES = ("/static/",)


def bearer(value: str) -> str:
    return value[7:].strip() if value[:7].lower() == "bearer " else value.strip()


class Token:
    def __init__(self, token: str) -> None:
        self.token = token

    @property
    def enabled(self) -> bool:
        return bool(self.token)

    def valid(self, presented: str) -> bool:
        return bool(presented) and hmac.compare_digest(presented.encode(), self.token.encode())

    def allows(self, request: Request) -> bool:
        if not self.enabled or request.url.path in OPEN_PATHS or request.url.path.startswith(OPEN_PREFIXES):
            return True
        for header in ("authorization", "x-ray-authorization"):
            if self.valid(bearer(request.headers.get(header, ""))):
                return True
        return self.valid(request.cookies.get(COOKIE, ""))
