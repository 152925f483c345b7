"""schemathesis against the API's own OpenAPI spec, with the fake sluiced:
every response matches the spec and nothing answers 500."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from conftest import FakeSluiced, Sluiced
from hypothesis import HealthCheck, settings

from sluice.api import create_app

SOCKDIR = Path(tempfile.mkdtemp(prefix="slsch", dir="/tmp"))
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app("t", str(SOCKDIR / "t.sock")))


@pytest.fixture(scope="module", autouse=True)
def _fake_sluiced() -> Iterator[None]:
    srv = FakeSluiced(SOCKDIR / "t.sock", handler=Sluiced().handler)
    try:
        yield
    finally:
        srv.close()
        shutil.rmtree(SOCKDIR, ignore_errors=True)


@schema.parametrize()
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_api_matches_its_spec(case: Any) -> None:
    case.call_and_validate()
