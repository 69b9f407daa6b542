"""The local HTTP gateway: API Gateway proxy events in, proxy results out, JSON errors only."""

from __future__ import annotations

import errno
import http.client
import json
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local.gateway import Gateway, allowed_host_names


class Echo:
    """A handler that answers with the event it received (or fails, or is slow, when told)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.fail = False
        self.delay = 0.0

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.events.append(event)
        time.sleep(self.delay)
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


def _raw_request(gateway: Gateway, data: bytes) -> tuple[int, dict[str, Any]]:
    """Bytes as sent (http.client would fix them up), and the status and JSON body answered."""
    host, port = gateway.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        return answer.status, json.loads(answer.read() or b"null")


@pytest.mark.parametrize(
    "host",
    [
        "evil.test",
        "evil.test:8000",
        "127.0.0.1.evil.test",
        "localhost.evil.test",
        "0.0.0.0:8000",
        "user@127.0.0.1",
        "127.0.0.1:80/x",
        "",
    ],
)
def test_a_host_header_not_naming_this_machine_is_refused_before_the_handler(
    gateway: Gateway, echo: Echo, host: str
) -> None:
    # A page elsewhere that rebinds its DNS name to 127.0.0.1 sends its own name as the Host.
    for method, path in (
        ("GET", "/sessions"),
        ("DELETE", "/sessions/abc"),
        ("GET", "/"),
        ("GET", "/static/app.js"),
        ("OPTIONS", "/sessions"),
    ):
        status, headers, body = _request(gateway, method, path, headers={"Host": host})
        assert status == 403, (method, path)
        assert json.loads(body)["error"]["code"] == "forbidden_host"
        assert headers["content-type"] == "application/json"
    assert echo.events == []


def test_a_request_without_host_is_refused_on_http_1_1_only(gateway: Gateway, echo: Echo) -> None:
    status, body = _raw_request(gateway, b"GET /sessions HTTP/1.1\r\n\r\n")
    assert status == 403 and body["error"]["code"] == "forbidden_host"
    two = b"GET /sessions HTTP/1.1\r\nHost: localhost\r\nHost: evil.test\r\n\r\n"
    assert _raw_request(gateway, two)[0] == 403
    assert echo.events == []
    # HTTP/1.0 clients predate the header; no browser is one.
    assert _raw_request(gateway, b"GET /sessions HTTP/1.0\r\n\r\n")[0] == 201


def test_loopback_host_names_are_accepted_with_or_without_a_port(
    gateway: Gateway, echo: Echo
) -> None:
    port = gateway.url.rsplit(":", 1)[1]
    for host in (
        "localhost",
        f"localhost:{port}",
        "LOCALHOST",
        "127.0.0.1",
        f"127.0.0.1:{port}",
        "[::1]",
        f"[::1]:{port}",
    ):
        status, _, _ = _request(gateway, "GET", "/sessions", headers={"Host": host})
        assert status == 201, host
    assert len(echo.events) == 7


def test_the_host_the_gateway_was_started_on_is_accepted_too(echo: Echo, tmp_path: Path) -> None:
    with Gateway(echo, host="127.0.0.2", port=0, web_dir=tmp_path) as gateway:
        assert _request(gateway, "GET", "/sessions")[0] == 201  # Host: 127.0.0.2:<port>
        assert _request(gateway, "GET", "/sessions", headers={"Host": "localhost"})[0] == 201
        assert _request(gateway, "GET", "/sessions", headers={"Host": "127.0.0.3"})[0] == 403
    assert allowed_host_names("127.0.0.2") == {"localhost", "127.0.0.1", "::1", "127.0.0.2"}
    assert allowed_host_names("MyBox.local") >= {"mybox.local"}
    # On every address, a LAN address in Host may be a rebound name: loopback names only.
    assert (
        allowed_host_names("0.0.0.0")
        == allowed_host_names("::")
        == {"localhost", "127.0.0.1", "::1"}
    )


def test_a_burst_of_connections_is_queued_not_dropped(echo: Echo, tmp_path: Path) -> None:
    # Every connection is opened before the gateway accepts any: the listen backlog alone
    # decides whether the kernel completes them (http.server's default of 5 left 44 of these
    # waiting on SYN retransmits, or reset them on macOS).
    gateway = Gateway(echo, port=0, web_dir=tmp_path)
    host, port = gateway.url.removeprefix("http://").split(":")
    sockets = []
    try:
        for _ in range(50):
            sock = socket.socket()
            sock.setblocking(False)
            assert sock.connect_ex((host, int(port))) in (0, errno.EINPROGRESS)
            sockets.append(sock)
        assert len(_connected(sockets, within_seconds=5)) == 50
        assert all(s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 for s in sockets)
        echo.delay = 0.01
        gateway.start()
        for sock in sockets:
            sock.setblocking(True)
            sock.settimeout(30)
            sock.sendall(b"GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        statuses = []
        for sock in sockets:
            answer = http.client.HTTPResponse(sock)
            answer.begin()
            statuses.append(answer.status)
        assert statuses == [201] * 50
    finally:
        for sock in sockets:
            sock.close()
        gateway.stop()


def _connected(sockets: list[socket.socket], within_seconds: float) -> list[socket.socket]:
    """The sockets whose non-blocking connect completed (they turn writable) in the time."""
    deadline = time.monotonic() + within_seconds
    done: list[socket.socket] = []
    while len(done) < len(sockets) and time.monotonic() < deadline:
        waiting = [s for s in sockets if s not in done]
        done += select.select([], waiting, [], 0.1)[1]
    return done


@pytest.mark.parametrize(
    "path",
    [
        "/static/index.html%00.js",
        "/static/app.js%00",
        "/static/%0a",
        "/static/app%7f.js",
        "/static/app%C2%85.js",
        "/static/" + "a" * 300 + ".js",
        "/sessions/abc%00",
        "/sessions%00/import",
        "/sessions/abc%1b/messages",
        "/%00",
    ],
)
def test_a_path_with_control_characters_answers_404_json(
    gateway: Gateway, echo: Echo, path: str
) -> None:
    status, _, body = _request(gateway, "GET", path)
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found"
    assert echo.events == []


def test_raw_control_characters_in_the_request_line_answer_404_json(
    gateway: Gateway, echo: Echo
) -> None:
    for path in (b"/static/app\x01.js", b"/sessions/a\x00b", b"/static/a\x7fb"):
        request = b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\n\r\n"
        status, body = _raw_request(gateway, request)
        assert status == 404 and body["error"]["code"] == "not_found"
    assert echo.events == []


def test_only_the_agents_get_the_agents_group_claim(echo: Echo, tmp_path: Path) -> None:
    """Local mode emulates the Cognito group of agents (hand-off to a person): `--agents`."""
    with Gateway(echo, port=0, web_dir=tmp_path, agents=("ana", "ben")) as gateway:
        for user in ("ana", "bob", "ben"):
            _request(gateway, "GET", "/agent/sessions", headers={"X-User-Id": user})
        _request(gateway, "GET", "/agent/sessions")  # the default user
    claims = [e["requestContext"]["authorizer"]["claims"] for e in echo.events]
    assert [c.get("cognito:groups") for c in claims] == ["agents", None, "agents", None]
    assert [c["sub"] for c in claims] == ["ana", "bob", "ben", "local-user"]


def test_the_default_agent_is_the_user_named_agent(echo: Echo, tmp_path: Path) -> None:
    with Gateway(echo, port=0, web_dir=tmp_path, agent_group="support") as gateway:
        _request(gateway, "GET", "/agent/sessions", headers={"X-User-Id": "agent"})
    assert echo.events[0]["requestContext"]["authorizer"]["claims"]["cognito:groups"] == "support"


def test_local_run_takes_the_agents_and_local_mode_keeps_the_events_in_its_state_dir(
    tmp_path: Path,
) -> None:
    from local.config import local_defaults
    from local.run import parse_args

    assert parse_args([]).agents == ("agent",)
    assert parse_args(["--agents", "ana, ben"]).agents == ("ana", "ben")
    assert parse_args(["--agents", ""]).agents == ()
    assert local_defaults(state_dir=tmp_path)["EVENTS_FILE"] == str(tmp_path / "events.jsonl")


# --- what http.server lets through unless told (issue 24) ---------------------------------------


def test_an_idle_connection_is_closed_by_the_servers_own_timeout(
    echo: Echo, tmp_path: Path
) -> None:
    """Failed first: a connection that sent nothing (or half a request) was held, each one a
    thread, for as long as the client liked (500 of them for 65 s)."""
    with Gateway(echo, port=0, web_dir=tmp_path, idle_timeout=0.3) as gateway:
        host, port = gateway.url.removeprefix("http://").split(":")
        silent = socket.create_connection((host, int(port)), timeout=10)
        half = socket.create_connection((host, int(port)), timeout=10)
        half.sendall(b"GET /sessions HTTP/1.1\r\nHost: localhost\r\n")  # no end of headers
        started = time.monotonic()
        assert silent.recv(1) == b"" and half.recv(1) == b""  # closed by the server
        assert time.monotonic() - started < 5
        silent.close()
        half.close()
        # A connection kept alive between requests is closed once idle, too.
        kept = http.client.HTTPConnection(host, int(port), timeout=10)
        kept.request("GET", "/sessions")
        assert kept.getresponse().read()
        time.sleep(0.6)
        assert kept.sock is not None and kept.sock.recv(1) == b""
        kept.close()
    assert echo.events and all(e["path"] == "/sessions" for e in echo.events)


def _raw(gateway: Gateway, request: bytes) -> bytes:
    host, port = gateway.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize(
    "lengths",
    [
        b"Content-Length: 2\r\nContent-Length: 30\r\n",
        b"Content-Length: 2\r\nContent-Length: 2\r\n",
        b"Content-Length: +2\r\n",
        b"Content-Length: 0x2\r\n",
    ],
)
def test_a_request_with_two_or_a_malformed_content_length_is_refused(
    gateway: Gateway, echo: Echo, lengths: bytes
) -> None:
    """Failed first: two Content-Length headers were accepted (the first one framed the body),
    and "+2" was read as 2."""
    answer = _raw(
        gateway,
        b"POST /sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + lengths
        + b"Connection: close\r\n\r\n{}",
    )
    assert answer.startswith(b"HTTP/1.1 400 "), answer
    assert b'"code": "bad_request"' in answer and echo.events == []


@pytest.mark.parametrize(
    "path", ["//sessions", "/sessions//x", "/./sessions", "/sessions/x/..", "/%2e%2e/sessions"]
)
def test_a_path_with_empty_or_dot_segments_answers_404(
    gateway: Gateway, echo: Echo, path: str
) -> None:
    """Failed first: GET //sessions answered 200 (http.server turns a leading "//" into "/")."""
    answer = _raw(
        gateway, f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode()
    )
    assert answer.startswith(b"HTTP/1.1 404 "), answer
    assert echo.events == []
    status, _, _ = _request(gateway, "GET", "/sessions/")  # a trailing "/" is the resource
    assert status == 201


def test_local_run_stops_on_sigterm_arriving_while_its_main_thread_waits(tmp_path: Path) -> None:
    """Failed first: `make run` hung on SIGTERM (1 stop in 6): the handler called Event.set()
    while the main thread, inside Event.wait, held that event's lock. Deterministic here: the
    signal is raised at the worst moment, while the main thread holds the lock of whatever it
    waits on (Event.wait then, time.sleep now), in a child process running local.run.main with
    a stack that starts nothing."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import signal, sys, threading, time
        import local.stack

        class Started:
            def __init__(self, options, echo):
                pass
            def start(self):
                return self
            def stop(self):
                print("stack stopped", flush=True)

        local.stack.LocalStack = Started
        raised = []

        def raise_once():
            if not raised:
                raised.append(True)
                signal.raise_signal(signal.SIGTERM)

        real_wait, real_sleep = threading.Event.wait, time.sleep

        def wait(self, timeout=None):
            with self._cond:  # where Event.wait holds its lock
                raise_once()
            return real_wait(self, timeout)

        def sleep(seconds):
            raise_once()
            real_sleep(seconds)

        threading.Event.wait, time.sleep = wait, sleep
        from local import run
        sys.exit(run.main(sys.argv[1:]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "--state-dir", str(tmp_path), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "stack stopped" in done.stdout and "stopped" in done.stdout.splitlines()[-1]


class _Clock:
    """The gateway's clock for deadlines, moved by the test (reads still wait for real)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _closed_by_server(connection: socket.socket, within_seconds: float = 5.0) -> bytes | None:
    """What the server sent before it closed the connection; None if it kept it open."""
    connection.settimeout(within_seconds)
    answer = b""
    try:
        while chunk := connection.recv(65536):
            answer += chunk
    except TimeoutError:
        return None
    return answer


@pytest.mark.parametrize("part", ["headers", "body"])
def test_a_slow_client_is_cut_off_at_the_total_deadline_whatever_its_pace(
    echo: Echo, tmp_path: Path, part: str
) -> None:
    """Failed before (issue 46): the idle timeout applied per read, so a client sending a
    byte every few seconds held its thread for as long as it liked. Each byte here arrives
    well within the idle timeout; once the gateway's clock passes the header (or body)
    deadline, the next read ends the request: no handler call, the connection closed (a body
    gets 408 first)."""
    clock = _Clock()
    with Gateway(
        echo, port=0, web_dir=tmp_path, idle_timeout=30, header_timeout=10, body_timeout=30,
        clock=clock,
    ) as gateway:  # fmt: skip
        host, port = gateway.url.removeprefix("http://").split(":")
        slow = socket.create_connection((host, int(port)), timeout=10)
        head = b"POST /sessions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\n"
        if part == "headers":
            request, limit = head, 10
        else:
            slow.sendall(head)
            time.sleep(0.05)  # the headers are read on their own
            request, limit = b'{"a": 1}  ', 30
        for i, byte in enumerate(request[:3]):
            slow.sendall(bytes([byte]))
            time.sleep(0.05)  # the gateway reads it, and waits for the next
            clock.now += limit / 2 - 0.1 if i < 2 else limit  # past the deadline after three
        slow.sendall(request[3:4])  # read, and the read after it is past the deadline
        answer = _closed_by_server(slow)
        slow.close()
    assert answer is not None, "the slow client's connection was still held"
    if part == "body":
        assert answer.startswith(b"HTTP/1.1 408 ") and b"request_timeout" in answer
    else:
        assert answer == b""
    assert echo.events == []


def test_a_client_in_time_is_answered_whatever_the_deadlines(echo: Echo, tmp_path: Path) -> None:
    clock = _Clock()
    with Gateway(echo, port=0, web_dir=tmp_path, clock=clock) as gateway:
        host, port = gateway.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as client:
            client.sendall(b"POST /sessions HTTP/1.1\r\nHost: localhost\r\n")
            time.sleep(0.05)
            clock.now += 9  # within the header deadline
            client.sendall(b"Content-Length: 2\r\n\r\n")
            time.sleep(0.05)
            clock.now += 29  # within the body deadline
            client.sendall(b"{}")
            assert client.recv(65536).startswith(b"HTTP/1.1 201 ")
    assert [e["path"] for e in echo.events] == ["/sessions"]


def test_a_client_gone_before_its_answer_is_one_line_not_a_stack_trace(
    echo: Echo, tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Failed before (issue 46): writing the answer to a client that had closed its connection
    raised BrokenPipeError (or ConnectionResetError), and socketserver printed its stack trace
    on the console."""
    import logging
    import struct
    import threading

    gone = threading.Event()
    answered = threading.Event()

    def slow_answer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        assert gone.wait(10)
        return {"statusCode": 200, "body": "x" * 100_000, "isBase64Encoded": False}

    caplog.set_level(logging.INFO, logger="local.gateway")
    with Gateway(slow_answer, port=0, web_dir=tmp_path) as gateway:
        host, port = gateway.url.removeprefix("http://").split(":")
        client = socket.create_connection((host, int(port)), timeout=10)
        client.sendall(b"GET /sessions HTTP/1.1\r\nHost: localhost\r\n\r\n")
        time.sleep(0.1)  # the handler is called
        # Closed with a reset (no lingering): the server's write fails at once.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        gone.set()
        for _ in range(100):
            if any("closed the connection" in r.getMessage() for r in caplog.records):
                answered.set()
                break
            time.sleep(0.05)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipe" not in err and "ConnectionReset" not in err
    assert answered.is_set(), [r.getMessage() for r in caplog.records]


def test_each_answered_request_calls_the_after_request_hook(echo: Echo, tmp_path: Path) -> None:
    """Local mode wakes the stream poller there (local/stack.py): what the request wrote is read
    at once, whatever the poller's idle backoff. A failing handler counts too."""
    calls: list[int] = []
    with Gateway(echo, port=0, web_dir=tmp_path, after_request=lambda: calls.append(1)) as gateway:
        assert _request(gateway, "GET", "/sessions")[0] == 201
        echo.fail = True
        assert _request(gateway, "POST", "/sessions", b"{}")[0] == 502
    assert calls == [1, 1]
