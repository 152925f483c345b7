"""The token (middleware and OpenAPI), and where the API may listen."""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse

from ..runtime.client import SluiceError

# -- auth ---------------------------------------------------------------------------------

class TokenAuth:
    """ASGI middleware: every HTTP request must carry the token."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or self._ok(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            # Refused before the handshake completes: the client sees HTTP 403.
            await send({"type": "websocket.close", "code": 1008,
                        "reason": "missing or wrong token"})
            return
        resp = JSONResponse(
            {"detail": "missing or wrong token: send 'Authorization: Bearer TOKEN' "
                       "or 'X-Sluice-Token: TOKEN'"},
            status_code=401, headers={"WWW-Authenticate": "Bearer"})
        await resp(scope, receive, send)

    def _ok(self, scope: Any) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, cred = value.partition(b" ")
                if scheme.lower() == b"bearer" and hmac.compare_digest(cred.strip(),
                                                                        self.token):
                    return True
            elif name == b"x-sluice-token" and hmac.compare_digest(value.strip(), self.token):
                return True
        if scope["type"] == "websocket":
            # Browsers cannot set headers on a websocket: ?token=TOKEN works there.
            from urllib.parse import parse_qs

            qs = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            for cred in qs.get("token", []):
                if hmac.compare_digest(cred.encode("latin-1"), self.token):
                    return True
        return False


def _document_token(app: FastAPI) -> None:
    """Declares the token in the OpenAPI spec (both headers work)."""
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version,
                                 description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"},
                "token": {"type": "apiKey", "in": "header", "name": "X-Sluice-Token"},
            }
            schema["security"] = [{"bearer": []}, {"token": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None, option: str = "--host",
               token_option: str = "--token") -> None:
    """Refuses to serve beyond loopback without a token (raises SluiceError)."""
    if not token and not is_loopback(host):
        raise SluiceError(f"{option} {host} is not a loopback address: give {token_option} "
                          f"TOKEN too (clients then send 'Authorization: Bearer TOKEN')")


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6) as (host, port); raises SluiceError."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SluiceError(f"--api {value!r}: give HOST:PORT, e.g. 127.0.0.1:8080")
    return host, int(port)
