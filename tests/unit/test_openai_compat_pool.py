"""The OpenAI-compatible adapter's pooled connection (urllib3): calls to one server reuse one
keep-alive connection, a connection the server closed is replaced without a retry, one that
breaks before the answer is retried, and a redirect is an error, not followed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatmemory.adapters.openai_compat import OpenAICompatTextGenerator
from chatmemory.errors import ModelError
from tests.model_server import Reply, ScriptedServer

ANSWER = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}


class Sleeps(list):
    """An injected sleep that records instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def keep_alive_server(drop: tuple[int, ...] = ()) -> ScriptedServer:
    """A model server (keep-alive, HTTP/1.1) that answers with ANSWER, or hangs up without
    answering for each request listed in `drop` (counted from 1)."""
    server = ScriptedServer()
    server.answer = lambda received: Reply(body=ANSWER, hang_up=len(server.received) in drop)
    return server


def _ports(server: ScriptedServer) -> list[int]:
    """The client port of each request: which connection it came on."""
    return [received.client_port for received in server.received]


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


def _generator(url: str, sleeps: Sleeps) -> OpenAICompatTextGenerator:
    return OpenAICompatTextGenerator(f"{url}/v1", "llama3.2", sleep=sleeps)


def test_calls_to_one_server_reuse_one_keep_alive_connection() -> None:
    server = keep_alive_server()
    try:
        adapter = _generator(server.url, Sleeps())
        for _ in range(3):
            assert adapter.generate("q", max_new_tokens=5).text == "ok"
    finally:
        server.close()
    assert len(_ports(server)) == 3 and len(set(_ports(server))) == 1


def test_a_connection_that_breaks_before_the_answer_is_retried_on_a_new_one() -> None:
    server = keep_alive_server(drop=(1,))
    sleeps = Sleeps()
    try:
        assert _generator(server.url, sleeps).generate("q", max_new_tokens=5).text == "ok"
    finally:
        server.close()
    assert len(_ports(server)) == 2 and len(set(_ports(server))) == 2
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
