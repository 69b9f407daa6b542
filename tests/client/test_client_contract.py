"""The client against the server's published contract (openapi.json, generated from the
handlers): every request it sends is an operation there, with parameters and body fields the
operation declares, and every operation of the API has a client call."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from tests.client import recording

OPENAPI = json.loads((Path(__file__).resolve().parents[2] / "openapi.json").read_text())
SENT = [exchange for exchanges in recording.load().values() for exchange in exchanges]


def operation_of(method: str, path: str) -> tuple[str, dict[str, Any]]:
    """The template and operation of openapi.json that a sent path and method match."""
    for template, operations in OPENAPI["paths"].items():
        pattern = "^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path) and method.lower() in operations:
            return template, operations[method.lower()]
    raise AssertionError(f"{method} {path} is no operation of openapi.json")


def schema(reference: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = reference
    while "$ref" in found:
        found = OPENAPI["components"]["schemas"][found["$ref"].rsplit("/", 1)[1]]
    if "anyOf" in found:  # an optional body: the object or null
        found = schema(next(s for s in found["anyOf"] if s.get("type") != "null"))
    return found


def test_every_request_the_client_sends_is_an_operation_of_the_api() -> None:
    for exchange in SENT:
        operation_of(exchange["method"], exchange["path"])


def test_the_client_calls_every_operation_of_the_api() -> None:
    called = {(e["method"].lower(), operation_of(e["method"], e["path"])[0]) for e in SENT}
    published = {
        (method, template)
        for template, operations in OPENAPI["paths"].items()
        for method in operations
        # The OpenAI-compatible routes are the OpenAI clients' (tests/integration/
        # test_openai_local_mode.py drives them with the openai SDK and ChatOpenAI).
        if method in {"get", "post", "put", "patch", "delete"} and not template.startswith("/v1/")
    }
    assert published - called == set()


def test_query_parameters_and_body_fields_are_the_operations_own() -> None:
    for exchange in SENT:
        template, operation = operation_of(exchange["method"], exchange["path"])
        declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        sent = {name for name, _ in parse_qsl(exchange["query"])}
        assert sent <= declared, (template, sent - declared)
        if exchange["request"] is not None:
            body = schema(operation["requestBody"]["content"]["application/json"]["schema"])
            fields = set(exchange["request"]) - set(body["properties"])
            assert fields == set(), (template, fields)
