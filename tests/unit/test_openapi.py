"""The published OpenAPI document is valid, complete and generated from the running code."""

from __future__ import annotations

import json
from pathlib import Path

from openapi_spec_validator import validate

from handlers.chat_routes import openapi_document

ROOT = Path(__file__).resolve().parents[2]


def test_openapi_document_is_valid_and_lists_every_route() -> None:
    document = json.loads(openapi_document())
    validate(document)
    routes = {(path, method) for path, ops in document["paths"].items() for method in ops}
    assert routes == {
        ("/sessions", "get"),
        ("/sessions", "post"),
        ("/sessions/import", "post"),
        ("/sessions/{session_id}", "get"),
        ("/sessions/{session_id}", "delete"),
        ("/sessions/{session_id}", "put"),
        ("/sessions/{session_id}/end", "post"),
        ("/sessions/{session_id}/messages", "get"),
        ("/sessions/{session_id}/messages", "post"),
        ("/sessions/{session_id}/messages/stream", "post"),
        ("/sessions/{session_id}/export", "get"),
        ("/sessions/{session_id}/turns", "post"),
        ("/sessions/{session_id}/turns/{turn}", "get"),
        ("/sessions/{session_id}/turns/{turn}", "patch"),
        ("/sessions/{session_id}/turns/{turn}/feedback", "put"),
        ("/sessions/{session_id}/checkpoints", "get"),
        ("/sessions/{session_id}/checkpoints/{checkpoint_id}", "get"),
        ("/sessions/{session_id}/checkpoints/{checkpoint_id}", "put"),
        ("/sessions/{session_id}/checkpoints/{checkpoint_id}/writes", "put"),
        ("/memories", "get"),
        ("/memories", "delete"),
        ("/memories/records", "get"),
        ("/memories/records", "post"),
        ("/memories/records/search", "post"),
        ("/memories/namespaces", "post"),
        ("/memories/records/{record_id}", "get"),
        ("/memories/records/{record_id}", "patch"),
        ("/memories/records/{record_id}", "delete"),
        ("/deletions", "get"),
        ("/sessions/{session_id}/handoff", "post"),
        ("/agent/sessions", "get"),
        ("/agent/sessions/{session_id}", "get"),
        ("/agent/sessions/{session_id}/messages", "post"),
        ("/agent/sessions/{session_id}/handback", "post"),
        ("/v1/chat/completions", "post"),
        ("/v1/models", "get"),
        ("/v1/models/{model}", "get"),
    }
    post = document["paths"]["/sessions/{session_id}/messages"]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.endswith("/PostMessageRequest")
    assert {"400", "404", "409", "413", "503"} <= set(post["responses"])
    assert "422" not in post["responses"]
    # Only the agents' routes answer 403 (a caller who is not an agent), and the OpenAI chat
    # route (its `user` from a caller who may not name end users).
    forbidden = {
        path
        for path, ops in document["paths"].items()
        if any("403" in op["responses"] for op in ops.values())
    }
    agents = {p for p in document["paths"] if p.startswith("/agent/")}
    assert forbidden == agents | {"/v1/chat/completions"}


def test_every_operation_has_its_own_summary_and_a_description() -> None:
    document = json.loads(openapi_document())
    operations = {
        f"{method.upper()} {path}": operation
        for path, ops in document["paths"].items()
        for method, operation in ops.items()
    }
    for name, operation in operations.items():
        assert operation.get("summary"), f"{name} has no summary"
        assert operation["summary"] != name, f"{name}: the summary only repeats the route"
        assert len(operation.get("description") or "") >= 40, f"{name} has no description"
    summaries = [operation["summary"] for operation in operations.values()]
    assert len(set(summaries)) == len(summaries), "two operations share a summary"


def test_committed_openapi_json_matches_the_code() -> None:
    committed = json.loads((ROOT / "openapi.json").read_text())
    assert committed == json.loads(openapi_document()), "run `make openapi` and commit it"


def test_the_pages_schema_is_generated_from_the_runtimes() -> None:
    """The page's statuses and intents are chatmemory.schema's (`make openapi` writes them)."""
    from pathlib import Path

    from scripts.page_schema import document

    committed = Path(__file__).resolve().parents[2] / "local" / "web" / "schema.js"
    assert committed.read_text(encoding="utf-8") == document(), "run `make openapi`"


def test_every_route_declares_the_identity_api_gateway_requires() -> None:
    # Every route needs a Cognito ID token (or, with auth=iam, a SigV4 signature) in the
    # Authorization header; a generated client or a tester that reads the document must know.
    # Failed before: no security scheme at all.
    document = json.loads(openapi_document())
    schemes = document["components"]["securitySchemes"]
    assert {s["name"] for s in schemes.values()} == {"Authorization"}
    assert document["security"] == [{"CognitoIdToken": []}, {"SigV4": []}]
    for operations in document["paths"].values():
        for operation in operations.values():
            assert operation.get("security", document["security"]) == document["security"]


def test_the_streamed_route_says_its_answer_is_server_sent_events_and_names_them() -> None:
    operation = json.loads(openapi_document())["paths"]["/sessions/{session_id}/messages/stream"]
    post = operation["post"]
    assert list(post["responses"]["200"]["content"]) == ["text/event-stream"]
    for event in ("`memory`", "`delta`", "`turn`", "`error`", "`: ping`"):
        assert event in post["description"]
    body = post["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/PostMessageRequest"}
