"""Schemathesis fuzzing of local mode's HTTP API from the published openapi.json: a bounded,
derandomized run against the gateway (port 0) on DynamoDB Local with the real handler. No answer
may be a 5xx other than 502/503, every 4xx/5xx is the documented JSON error envelope, and every
answer conforms to the document (status, content type, schema)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import Case, CheckContext, Response
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from local.dynamodb_local import DynamoDBLocal
from tests.integration.helpers import World, local_world

pytestmark = pytest.mark.integration

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.json"
USER = {"X-User-Id": "fuzzer"}
# The module-scoped gateway outlives each test's fake credentials (tests/conftest.py aws_env).
FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


# One item per operation; the lazy `schemathesis.pytest.from_fixture` cannot run on pytest 9.
schema = schemathesis.openapi.from_path(OPENAPI)


@pytest.fixture(scope="module")
def gateway(
    dynamodb_local: DynamoDBLocal, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    """One local mode (fresh tables, the gateway on a free port) for every operation."""
    with pytest.MonkeyPatch.context() as env:
        for key, value in FAKE_AWS.items():
            env.setenv(key, value)
        yield from local_world(dynamodb_local, tmp_path_factory.mktemp("fuzz"), env)


# Methods an HTTP server knows; any other gets 501 Not Implemented, as RFC 9110 says it should.
KNOWN_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}


def only_gateway_errors(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """No 5xx but 502/503 (a model or store unavailable), and every error is the envelope."""
    allowed = {502, 503} | ({501} if case.method.upper() not in KNOWN_METHODS else set())
    assert response.status_code < 500 or response.status_code in allowed, response.text
    if response.status_code >= 400:
        assert response.headers["content-type"][0].startswith("application/json")
        body = json.loads(response.text)
        # The OpenAI-compatible routes answer OpenAI's error (handlers/routes/openai.py); what
        # the gateway refuses before them (a method, a body, a path) has the gateway's own.
        shapes = [{"code", "message"}]
        if case.path.startswith("/v1/"):
            shapes.append({"code", "message", "type", "param"})
        assert set(body) == {"error"} and set(body["error"]) in shapes, body
        assert "Traceback" not in response.text
    return None


CHECKS = [
    only_gateway_errors,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def fuzz(case: Case, gateway: World) -> None:
    """The generated request, then (for a session's route) the same on a real session."""
    # The client waits longer than the slowest documented request: an import of the largest
    # size allowed gives up after ImportLimits.max_seconds (20 s) and answers 413.
    wait = {"timeout": 40}
    case.call_and_validate(base_url=gateway.url, headers=USER, checks=CHECKS, **wait)
    if "session_id" in (case.path_parameters or {}):
        # The same request on a real session of the caller, so bodies reach the handlers.
        session_id = gateway.api.new_session("fuzzed", user="fuzzer")
        case.path_parameters = {**case.path_parameters, "session_id": session_id}
        case.call_and_validate(base_url=gateway.url, headers=USER, checks=CHECKS, **wait)


def fuzz_test(operation: schemathesis.schemas.APIOperation) -> object:
    """A test of one operation. One test function per operation, not one `schema.parametrize()`
    for all: on pytest 9 its items share one node id, and pytest-xdist, which tells items apart
    by node id, ran one operation of the 33 (tests/conftest.py now refuses ids that repeat)."""

    @schema.include(method=operation.method.upper(), path=operation.path).parametrize()
    @settings(
        max_examples=12,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def test(case: Case, gateway: World) -> None:
        fuzz(case, gateway)

    return test


# test_fuzz_post_sessions_session_id_messages and the like, one per operation in openapi.json.
for _result in schema.get_all_operations():
    _operation = _result.ok()
    globals()["test_fuzz_" + re.sub(r"\W+", "_", _operation.label).strip("_").lower()] = fuzz_test(
        _operation
    )
