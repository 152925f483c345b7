"""Routes declared once, at import, and added to each app by create_app.

``Routes.get(path, **kw)`` records what ``app.get(path, **kw)`` would add;
``install(app)`` adds them with ``app.add_api_route``, so each app gets
routes of its own, flat in ``app.routes`` (FastAPI's ``include_router``
would nest an APIRouter there, and code that walks ``app.routes`` for paths
and methods, as the 405 handler does, would no longer see them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI

F = TypeVar("F", bound=Callable[..., Any])


class Routes:
    def __init__(self) -> None:
        # (path, methods or None for a websocket, endpoint, app.get's keywords)
        self.routes: list[tuple[str, list[str] | None, Callable[..., Any], dict[str, Any]]] = []

    def _add(self, path: str, methods: list[str] | None, kw: dict[str, Any]) -> Callable[[F], F]:
        def add(fn: F) -> F:
            self.routes.append((path, methods, fn, kw))
            return fn

        return add

    def get(self, path: str, **kw: Any) -> Callable[[F], F]:
        return self._add(path, ["GET"], kw)

    def put(self, path: str, **kw: Any) -> Callable[[F], F]:
        return self._add(path, ["PUT"], kw)

    def post(self, path: str, **kw: Any) -> Callable[[F], F]:
        return self._add(path, ["POST"], kw)

    def delete(self, path: str, **kw: Any) -> Callable[[F], F]:
        return self._add(path, ["DELETE"], kw)

    def websocket(self, path: str) -> Callable[[F], F]:
        return self._add(path, None, {})

    def install(self, app: FastAPI) -> None:
        """Adds the routes to ``app``, in the order they were declared."""
        for path, methods, fn, kw in self.routes:
            if methods is None:
                app.add_api_websocket_route(path, fn)
            else:
                app.add_api_route(path, fn, methods=methods, **kw)
