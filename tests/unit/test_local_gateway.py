"""The local HTTP gateway: API Gateway proxy events in, proxy results out, JSON errors only."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local.gateway import Gateway


class Echo:
    """A handler that answers with the event it received (or fails when told)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.fail = False

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.events.append(event)
        if self.fail:
            raise RuntimeError("secret internals")
        return {
            "statusCode": 201,
            "multiValueHeaders": {"Content-Type": ["application/json"], "X-Seen": ["1", "2"]},
            "body": json.dumps({"path": event["path"]}),
            "isBase64Encoded": False,
        }


@pytest.fixture
def echo() -> Echo:
    return Echo()


@pytest.fixture
def gateway(echo: Echo, tmp_path: Path) -> Iterator[Gateway]:
    web = tmp_path / "web"
    web.mkdir()
    (web / "index.html").write_text("<!doctype html><title>chat</title>")
    (web / "app.js").write_text("console.log(1)")
    (tmp_path / "secret.txt").write_text("not served")
    with Gateway(echo, port=0, web_dir=web, max_body_bytes=1000) as running:
        yield running


def _request(
    gateway: Gateway,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    host, port = gateway.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request(method, path, body=body, headers=headers or {})
    answer = connection.getresponse()
    payload = answer.read()
    connection.close()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, payload


def test_a_request_becomes_an_api_gateway_proxy_event(gateway: Gateway, echo: Echo) -> None:
    status, headers, body = _request(
        gateway,
        "POST",
        "/sessions/abc%20d/messages?x=1&x=2&y=",
        b'{"content": "hi"}',
        {"Content-Type": "application/json"},
    )
    assert status == 201 and json.loads(body) == {"path": "/sessions/abc d/messages"}
    assert headers["content-type"] == "application/json"
    event = echo.events[0]
    assert event["httpMethod"] == "POST"
    assert event["resource"] == "/sessions/{session_id}/messages"
    assert event["pathParameters"] == {"session_id": "abc d"}
    assert event["queryStringParameters"] == {"x": "2", "y": ""}
    assert event["multiValueQueryStringParameters"] == {"x": ["1", "2"], "y": [""]}
    assert event["headers"]["Content-Type"] == "application/json"
    assert event["multiValueHeaders"]["Content-Type"] == ["application/json"]
    assert event["body"] == '{"content": "hi"}' and event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["stage"] == "local" and context["requestId"]
    assert context["identity"]["sourceIp"] == "127.0.0.1"
    assert context["authorizer"]["claims"]["sub"] == "local-user"


def test_literal_resources_win_over_path_parameters(gateway: Gateway, echo: Echo) -> None:
    _request(gateway, "POST", "/sessions/import", b"{}")
    _request(gateway, "GET", "/sessions")
    assert [e["resource"] for e in echo.events] == ["/sessions/import", "/sessions"]
    assert echo.events[1]["queryStringParameters"] is None and echo.events[1]["body"] is None


def test_the_caller_is_the_x_user_id_header_in_local_mode(gateway: Gateway, echo: Echo) -> None:
    _request(gateway, "GET", "/sessions", headers={"X-User-Id": "bob"})
    assert echo.events[0]["requestContext"]["authorizer"]["claims"]["sub"] == "bob"
    status, _, body = _request(gateway, "GET", "/sessions", headers={"X-User-Id": "a b/../c"})
    assert status == 400 and json.loads(body)["error"]["code"] == "bad_request"
    assert len(echo.events) == 1


def test_a_body_over_the_cap_is_refused_with_413_before_the_handler(
    gateway: Gateway, echo: Echo
) -> None:
    status, _, body = _request(gateway, "POST", "/sessions", b"x" * 1001)
    assert status == 413
    assert json.loads(body)["error"]["code"] == "payload_too_large"
    assert echo.events == []


def test_a_failing_handler_answers_json_without_a_stack_trace(gateway: Gateway, echo: Echo) -> None:
    echo.fail = True
    status, _, body = _request(gateway, "GET", "/sessions")
    assert status == 502
    error = json.loads(body)["error"]
    assert error["code"] == "bad_gateway" and "secret internals" not in body.decode()
    assert "Traceback" not in body.decode()


def test_malformed_requests_get_json_errors(gateway: Gateway) -> None:
    status, _, body = _request(gateway, "BREW", "/sessions")
    assert status == 501 and json.loads(body)["error"]["message"]
    status, _, body = _request(gateway, "POST", "/sessions", b"\xff\xfe", {"Content-Length": "2"})
    assert status == 400 and "UTF-8" in json.loads(body)["error"]["message"]


def test_cors_preflight_is_answered_for_local_pages_only(gateway: Gateway, echo: Echo) -> None:
    status, headers, _ = _request(
        gateway,
        "OPTIONS",
        "/sessions",
        headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"},
    )
    assert status == 204
    assert headers["access-control-allow-origin"] == "http://localhost:3000"
    assert "Authorization" in headers["access-control-allow-headers"]
    _, headers, _ = _request(gateway, "GET", "/sessions", headers={"Origin": "https://evil.test"})
    assert "access-control-allow-origin" not in headers
    assert echo.events and all(e["httpMethod"] != "OPTIONS" for e in echo.events)


def test_the_page_and_its_files_are_served_but_nothing_outside(gateway: Gateway) -> None:
    status, headers, body = _request(gateway, "GET", "/")
    assert status == 200 and body.startswith(b"<!doctype html>")
    assert headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in headers["content-security-policy"]
    status, headers, _ = _request(gateway, "GET", "/static/app.js")
    assert status == 200 and "javascript" in headers["content-type"]
    for path in ("/static/../secret.txt", "/static/%2e%2e/secret.txt", "/static/missing.js"):
        status, _, body = _request(gateway, "GET", path)
        assert status == 404 and b"not served" not in body
