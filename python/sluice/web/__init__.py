"""Web dashboard of a Sluice node (docs/api.md, "Dashboard").

``install_dashboard(app, sluiced)`` adds to the REST API's FastAPI app:

- ``GET /``: the dashboard page (``static/index.html``, with the node name and
  the package's stats schema, which heads its tables until the page has read
  the node's from ``/api/v1/stats/schema``),
- ``/static/...``: its script and style sheet.

The page is plain HTML, CSS and JavaScript with no outside resource: it
polls ``/api/v1/stats``, ``/services``, ``/nfs``, ``/chain`` (and
``/graphs`` when the API has it), computes the rates itself and follows
``/api/v1/events``. Neither route is in the OpenAPI spec.

When the API requires a token, the page and its static files are still
served without one (they are the same for everyone and hold no data of the
node); every request the page makes carries the token, which it reads once
from ``/?token=TOKEN`` (then keeps in the tab's sessionStorage and removes
from the address bar).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.staticfiles import StaticFiles

from ..core.counters import builtin_json

STATIC = Path(__file__).resolve().parent / "static"
_NODE_MARK = "{{node}}"
_SCHEMA_MARK = "{{stats_schema}}"


def _schema_script() -> str:
    """The package's stats schema as the text of a <script type="application/json">:
    "<", ">" and "&" escaped, so that nothing in a help ends the element."""
    return (json.dumps(builtin_json(), separators=(",", ":")).replace("<", "\\u003c")
            .replace(">", "\\u003e").replace("&", "\\u0026"))


_MISSING = ("the dashboard's files are not installed ({} is missing): reinstall the sluice "
            "package from a source tree (`pip install .`; pyproject.toml lists "
            "web/static/* as package data); the API under /api/v1 works without them")


def _page(node: str) -> Response:
    """The dashboard page, or a 500 that says the package lacks its files."""
    try:
        page = (STATIC / "index.html").read_text(encoding="utf-8")
    except FileNotFoundError:
        return JSONResponse({"detail": _MISSING.format(STATIC / "index.html")},
                            status_code=500)
    page = page.replace(_SCHEMA_MARK, _schema_script())
    return HTMLResponse(page.replace(_NODE_MARK, html.escape(node, quote=True)),
                        headers=_NO_CACHE)


class _Shell:
    """ASGI middleware, outermost: serves the page and its static files
    before any token check (the API behind it still checks every call)."""

    def __init__(self, app: Any, node: str):
        self.app = app
        self.node = node
        self.static = StaticFiles(directory=STATIC, check_dir=False)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
            if path == "/":
                await _page(self.node)(scope, receive, send)
                return
            if path.startswith("/static/"):
                # the path as asked, cut short: it may be megabytes long
                shown = path if len(path) <= 200 else path[:197] + "..."
                if not STATIC.is_dir():
                    await JSONResponse({"detail": f"{shown}: {_MISSING.format(STATIC)}"},
                                       status_code=404)(scope, receive, send)
                    return
                sub = dict(scope, root_path=scope.get("root_path", "") + "/static")
                try:
                    await self.static(sub, receive, send)
                except HTTPException as e:  # raised before anything was sent
                    why = e.detail
                    if e.status_code == 404:
                        have = ", ".join(sorted(f.name for f in STATIC.iterdir()
                                                if f.is_file()))
                        why = (f"no such file of the dashboard (/static/ has {have}): "
                               f"open / for the dashboard")
                    await JSONResponse({"detail": f"{shown}: {why}"},
                                       status_code=e.status_code)(scope, receive, send)
                return
        await self.app(scope, receive, send)


_NO_CACHE = {"Cache-Control": "no-cache"}


def install_dashboard(app: FastAPI, sluiced: Any) -> None:
    """Serves the dashboard of the node behind ``sluiced`` (api.Sluiced) at ``/``."""
    node = str(getattr(getattr(sluiced, "client", None), "node", "") or "sluice")

    @app.get("/", include_in_schema=False)
    def dashboard() -> Response:
        return _page(node)

    app.mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static")
    # Added last, so it runs first: the page loads before the token check
    # (when a token is set; without one it answers exactly as the routes above).
    app.add_middleware(_Shell, node=node)
