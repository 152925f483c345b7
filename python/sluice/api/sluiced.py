"""The one connection to sluiced the request threads share (app.state.sluiced)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends
from starlette.requests import HTTPConnection

from ..runtime.client import Client, RpcError, SluiceError
from .errors import ApiError, http_error


def _check_params(method: str, params: dict[str, Any]) -> None:
    """Raises ApiError for what sluiced cannot read (it would answer -32700).
    A request line longer than sluiced's --control-line-kb is sluiced's to
    refuse (-32600, then it closes the connection: 413, see http_error)."""
    todo: list[tuple[str, Any]] = [(k, v) for k, v in params.items()]
    while todo:
        where, v = todo.pop()
        if isinstance(v, dict):
            todo += [(f"{where}.{k}", x) for k, x in v.items()]
            todo += [(f"{where} (a key)", k) for k in v]
        elif isinstance(v, list):
            todo += [(f"{where}.{i}", x) for i, x in enumerate(v)]
        elif isinstance(v, str):
            if "\0" in v:
                raise ApiError(422, f"{where}: contains a NUL character (\\u0000), which "
                                    f"sluiced does not take: leave it out")
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise ApiError(422, f"{where}: is not valid Unicode (a lone surrogate "
                                    f"\\u{ord(v[_surrogate(v)]):04x}): send UTF-8 "
                                    f"text") from None


def _surrogate(s: str) -> int:
    return next(i for i, c in enumerate(s) if 0xD800 <= ord(c) <= 0xDFFF)


# -- sluiced ------------------------------------------------------------------------------

class Sluiced:
    """One connection to sluiced shared by the request threads."""

    def __init__(self, node: str, socket_path: str | Path | None, timeout: float = 5.0):
        self.client = Client(node, socket_path, timeout=timeout)
        self.lock = threading.Lock()

    @property
    def socket_path(self) -> Path:
        return self.client.socket_path

    def call(self, method: str, wait: float = 0.0, fields: dict[str, str] | None = None,
             **params: Any) -> Any:
        """``wait``: seconds to wait for the answer at least (rule builds).
        ``fields``: where the request has sluiced's params that are not body
        fields (``{"key": "path.flow"}``), for its messages (_param_said)."""
        _check_params(method, params)
        with self.lock:
            try:
                with self.client.patience(wait):
                    return self.client.call(method, **params)
            except RpcError as e:
                if e.code in (-32700, -32600):
                    # sluiced could not read the request and may close the
                    # connection (a long line): the next call connects anew.
                    self.client.close()
                raise http_error(e, fields) from None
            except SluiceError as e:
                raise http_error(e) from None

    def close(self) -> None:
        with self.lock:
            self.client.close()


async def sluiced_of(conn: HTTPConnection) -> Sluiced:
    """The app's Sluiced (create_app puts it on app.state); async, so a route
    does not wait for a worker thread to get it."""
    sluiced: Sluiced = conn.app.state.sluiced
    return sluiced


# A route's connection to sluiced: ``def status(sluiced: SluicedDep)``.
SluicedDep = Annotated[Sluiced, Depends(sluiced_of)]
