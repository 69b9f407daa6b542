"""The chat API's edge through the Lambda handler: JSON bodies only (415 otherwise, before any
body is parsed), a JSON media type in any letter case, and CORS headers (Powertools'
CORSConfig from CORS_ALLOW_ORIGINS) on every answer for allowed origins, errors included."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.services.conversation.chat import ChatDeps
from local.gateway import load_routes, proxy_event
from tests.fakes import FakeGenerator

ORIGIN = "https://chat.example.com"


@pytest.fixture
def call(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any):
    """Calls the chat handler with one request as alice; answers (status, headers, body)."""
    from handlers import chat_api

    monkeypatch.setenv("CORS_ALLOW_ORIGINS", ORIGIN)
    model = FakeGenerator()
    deps = ChatDeps(memory=wiring.short_term_memory(), generator=model)
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    routes = load_routes()

    def send(
        method: str, path: str, body: str | None, headers: dict[str, str]
    ) -> tuple[int, dict[str, list[str]], Any]:
        event = proxy_event(
            method=method,
            target=path,
            headers=list(headers.items()),
            body=body,
            user_id="alice",
            routes=routes,
        )
        answer = chat_api.handler(event, lambda_context)
        text = answer.get("body")
        headers = answer.get("multiValueHeaders") or {}
        return answer["statusCode"], headers, json.loads(text) if text else None

    send.model = model  # type: ignore[attr-defined]
    return send


def _session(call: Any) -> str:
    status, _, body = call("POST", "/sessions", "{}", {"Content-Type": "application/json"})
    assert status == 201, body
    return body["session"]["session_id"]


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/x-www-form-urlencoded", "content=hello"),
        ("multipart/form-data", "--x\r\n\r\nhello\r\n--x--"),  # Powertools alone: a 500
        (
            "multipart/form-data; boundary=x",
            '--x\r\nContent-Disposition: form-data; name="content"',
        ),
        ("text/plain", "hello"),
    ],
    ids=["form", "multipart-without-boundary", "multipart", "text"],
)
def test_a_message_body_not_sent_as_json_is_refused_with_415_and_nothing_is_stored(
    call: Any, content_type: str, body: str
) -> None:
    """Powertools parses form and multipart bodies itself: a form `content=hello` would have
    been posted as a message. The check runs before its validation."""
    sid = _session(call)
    status, headers, answer = call(
        "POST", f"/sessions/{sid}/messages", body, {"Content-Type": content_type, "Origin": ORIGIN}
    )
    assert status == 415
    assert answer["error"]["code"] == "unsupported_media_type"
    assert headers["Access-Control-Allow-Origin"] == [ORIGIN]
    _, _, page = call("GET", f"/sessions/{sid}/messages", None, {})
    assert page["messages"] == [] and call.model.calls == 0


def test_a_body_not_sent_as_json_is_refused_on_a_route_that_reads_none(call: Any) -> None:
    sid = _session(call)
    status, _, answer = call(
        "POST", f"/sessions/{sid}/end", "please", {"Content-Type": "text/plain"}
    )
    assert status == 415 and answer["error"]["code"] == "unsupported_media_type"
    _, _, found = call("GET", f"/sessions/{sid}", None, {})
    assert found["session"]["status"] == "OPEN"


def test_a_route_that_reads_a_body_refuses_a_non_json_type_even_without_one(call: Any) -> None:
    """Failed first: Powertools' own 415 for this case reached the catch-all handler, a 500."""
    status, _, answer = call("POST", "/sessions", None, {"Content-Type": "text/plain"})
    assert status == 415 and answer["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize(
    "content_type", ["Application/Json", "APPLICATION/JSON; charset=UTF-8", "application/json"]
)
def test_a_json_media_type_in_any_letter_case_is_json(call: Any, content_type: str) -> None:
    status, _, answer = call(
        "POST", "/sessions", '{"name": "Case"}', {"Content-Type": content_type}
    )
    assert status == 201 and answer["session"]["name"] == "Case"
    sid = answer["session"]["session_id"]
    status, _, answer = call(
        "POST", f"/sessions/{sid}/messages", '{"content": "hi"}', {"Content-Type": content_type}
    )
    assert status == 200 and answer["turn"]["input"] == "hi"


def test_errors_carry_cors_headers_that_vary_by_origin(call: Any) -> None:
    for method, path, expected in [
        ("GET", "/sessions/does-not-exist", 404),  # a service error
        ("GET", "/sessions?limit=0", 400),  # a validation error
        ("GET", "/nowhere", 404),  # no route
    ]:
        status, headers, _ = call(method, path, None, {"Origin": ORIGIN})
        assert status == expected, path
        assert headers["Access-Control-Allow-Origin"] == [ORIGIN], path
        assert headers["Vary"] == ["Origin"], path


def test_a_page_of_an_allowed_origin_may_send_and_read_the_session_header(call: Any) -> None:
    """The OpenAI-compatible route names its session in X-Session-Id, both ways: a page of
    another origin needs it allowed (sent) and exposed (read)."""
    _, headers, _ = call("GET", "/sessions", None, {"Origin": ORIGIN})
    assert "X-Session-Id" in headers["Access-Control-Allow-Headers"][0].split(",")
    assert headers["Access-Control-Expose-Headers"] == ["X-Session-Id"]


def test_no_cors_headers_for_another_origin(call: Any) -> None:
    status, headers, _ = call("GET", "/sessions", None, {"Origin": "https://evil.example"})
    assert status == 200
    assert "Access-Control-Allow-Origin" not in headers and "Vary" not in headers


def test_a_configuration_error_is_answered_as_one_without_cors_headers(
    call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed first: reading CORS_ALLOW_ORIGINS after the answer raised the configuration error
    again, out of the handler (API Gateway then answers a bare 502)."""
    monkeypatch.setenv("IDLE_MINUTES", "soon")
    wiring.clear_caches()
    headers = {"Content-Type": "application/json", "Origin": ORIGIN}
    status, headers, answer = call("POST", "/sessions/import", '{"messages": []}', headers)
    assert status == 500 and answer["error"]["code"] == "configuration_error"
    assert "Access-Control-Allow-Origin" not in headers
