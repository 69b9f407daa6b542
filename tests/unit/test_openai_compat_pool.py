"""The OpenAI-compatible adapter's pooled connection (urllib3): calls to one server reuse one
keep-alive connection, a connection the server closed is replaced without a retry, one that
breaks before the answer is retried, and a redirect is an error, not followed."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chatmemory.adapters.openai_compat import OpenAICompatTextGenerator
from chatmemory.errors import ModelError
from tests.model_server import Reply, ScriptedServer

ANSWER = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}


class Sleeps(list):
    """An injected sleep that records instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class KeepAliveServer:
    """An HTTP/1.1 server on 127.0.0.1 that records the client port of each request and answers
    with ANSWER, or hangs up without answering for each request listed in `drop`."""

    def __init__(self, drop: tuple[int, ...] = ()) -> None:
        self.ports: list[int] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.ports.append(self.client_address[1])
                if len(server.ports) in drop:
                    self.close_connection = True  # the connection breaks before the answer
                    return
                raw = json.dumps(ANSWER).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        host, port = self._http.server_address[:2]
        self.url = f"http://{host}:{port}"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


def _generator(url: str, sleeps: Sleeps) -> OpenAICompatTextGenerator:
    return OpenAICompatTextGenerator(f"{url}/v1", "llama3.2", sleep=sleeps)


def test_calls_to_one_server_reuse_one_keep_alive_connection() -> None:
    server = KeepAliveServer()
    try:
        adapter = _generator(server.url, Sleeps())
        for _ in range(3):
            assert adapter.generate("q", max_new_tokens=5).text == "ok"
    finally:
        server.close()
    assert len(server.ports) == 3 and len(set(server.ports)) == 1


def test_a_connection_that_breaks_before_the_answer_is_retried_on_a_new_one() -> None:
    server = KeepAliveServer(drop=(1,))
    sleeps = Sleeps()
    try:
        assert _generator(server.url, sleeps).generate("q", max_new_tokens=5).text == "ok"
    finally:
        server.close()
    assert len(server.ports) == 2 and len(set(server.ports)) == 2
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 0.25


def test_a_connection_the_server_closed_after_answering_is_replaced_without_a_retry(
    model_server: ScriptedServer,
) -> None:
    model_server.script(Reply(200, ANSWER, {"Connection": "close"}), Reply(200, ANSWER))
    sleeps = Sleeps()
    adapter = _generator(model_server.url, sleeps)
    assert [adapter.generate("q", max_new_tokens=5).text for _ in range(2)] == ["ok", "ok"]
    assert len(model_server.received) == 2 and sleeps == []


def test_a_redirect_is_a_model_error_and_is_not_followed(model_server: ScriptedServer) -> None:
    model_server.script(Reply(308, {"error": "moved"}, {"Location": "/elsewhere"}))
    with pytest.raises(ModelError, match="moved"):
        _generator(model_server.url, Sleeps()).generate("q", max_new_tokens=5)
    assert [r.path for r in model_server.received] == ["/v1/chat/completions"]
