"""schemathesis against the API's own OpenAPI spec, with the fake sluiced:
every response matches the spec and nothing answers 500."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from apifake import FakeSluiced, Sluiced
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import allow_header_conformance, positive_data_acceptance

from sluice.api import create_app

# Made by the fixture, not here: a run that imports this module and never
# runs its test (-x, -k) would leave the folder behind.
SOCKDIR = Path(f"/tmp/slsch{os.getpid()}")
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app("t", str(SOCKDIR / "t.sock")))
# NUL in a string is schema-valid but sluiced cannot read it: the API refuses it
# with 422 (test_api_fuzz.py), so schemathesis does not send it here.
schema.config.generation.update(allow_x00=False)
STATE = Sluiced()
# Paths that are also a value of another path's template: /graphs/compile is
# POST there, and GET, PUT, DELETE of /graphs/{name} with the name "compile"
# (a graph may be called so): its Allow header rightly lists all four.
OVERLAP = {"/api/v1/graphs/compile"}

# sluiced checks more than a JSON schema can say (a graph's cycles and
# reachability, the host bits of a prefix, LO <= HI in a port range, the
# syntax of a flow key): there a schema-valid request may get 422 with
# sluiced's reason (tests/api/test_endpoints.py checks those messages); a policy
# may get 422 with the compiler's (its fields are checked by sluice.core.policy).
SEMANTIC = {("PUT", "/api/v1/graphs/{name}"), ("POST", "/api/v1/graphs/compile"),
            ("PUT", "/api/v1/policies/{name}"), ("POST", "/api/v1/rules"),
            ("POST", "/api/v1/rule-batches"),
            ("GET", "/api/v1/flows"), ("DELETE", "/api/v1/flows"),
            ("GET", "/api/v1/flows/{flow}"), ("DELETE", "/api/v1/flows/{flow}"),
            ("POST", "/api/v1/flow-requests")}


@pytest.fixture(scope="module", autouse=True)
def _fake_sluiced() -> Iterator[None]:
    SOCKDIR.mkdir(mode=0o700, exist_ok=True)
    srv = FakeSluiced(SOCKDIR / "t.sock", handler=STATE.handler)
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
    semantic = (case.method.upper(), case.path) in SEMANTIC
    excluded = [positive_data_acceptance] if semantic else []
    if case.path in OVERLAP:
        excluded.append(allow_header_conformance)
    case.call_and_validate(excluded_checks=excluded)
    # The API sent sluiced only params of the documented types.
    assert STATE.crashes == []
