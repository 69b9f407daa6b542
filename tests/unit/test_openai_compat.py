"""The OpenAI-compatible adapters against a real HTTP server on 127.0.0.1: request bodies and
headers, answer parsing, retries with backoff (sleep injected), and clear errors."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from chatmemory.adapters.openai_compat import OpenAICompatEmbedder, OpenAICompatTextGenerator
from chatmemory.adapters.retry import parse_retry_after
from chatmemory.errors import ModelError, ModelUnavailable
from tests.model_server import Received, Reply, ScriptedServer, closed_port_url

STOPS = ["User:", "Assistant:"]


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


class Sleeps(list):
    """An injected sleep that records instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def chat_answer(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "llama3.2:3b",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
        **extra,
    }


def generator(server: ScriptedServer, sleeps: Sleeps | None = None, **kwargs: Any):
    return OpenAICompatTextGenerator(
        f"{server.url}/v1/", "llama3.2", sleep=sleeps if sleeps is not None else Sleeps(), **kwargs
    )


def test_chat_completion_request_and_answer(model_server: ScriptedServer) -> None:
    model_server.script(Reply(200, chat_answer("Hi Tom!\nUser: and then")))
    out = generator(model_server).generate("User: hi\nAssistant:", max_new_tokens=50, stop=STOPS)
    assert (out.text, out.model, out.input_tokens, out.output_tokens) == (
        "Hi Tom!",
        "llama3.2:3b",
        9,
        4,
    )
    (sent,) = model_server.received
    assert sent.path == "/v1/chat/completions"
    assert sent.json() == {
        "model": "llama3.2",
        "messages": [{"role": "user", "content": "User: hi\nAssistant:"}],
        "max_tokens": 50,
        "stop": STOPS,
    }
    assert "Authorization" not in sent.headers


def test_an_api_key_is_sent_as_a_bearer_token(model_server: ScriptedServer) -> None:
    model_server.script(Reply(200, chat_answer("ok")))
    generator(model_server, api_key="sk-test").generate("q", max_new_tokens=5)
    assert model_server.received[0].headers["Authorization"] == "Bearer sk-test"
    assert "stop" not in model_server.received[0].json()


def test_embeddings_are_batched_reordered_by_index_and_unit_length(
    model_server: ScriptedServer,
) -> None:
    texts = [f"t{i}" for i in range(70)]
    for batch in (texts[:64], texts[64:]):
        data = [{"index": i, "embedding": [float(len(t)), 1.0]} for i, t in enumerate(batch)]
        model_server.script(Reply(200, {"object": "list", "data": list(reversed(data))}))
    embedder = OpenAICompatEmbedder(model_server.url, "nomic-embed-text", dimension=2)
    vectors = embedder.embed(texts)
    assert [r.json() for r in model_server.received] == [
        {"model": "nomic-embed-text", "input": texts[:64]},
        {"model": "nomic-embed-text", "input": texts[64:]},
    ]
    assert vectors[0] == pytest.approx([2 / math.sqrt(5), 1 / math.sqrt(5)])  # "t0"
    assert vectors[10] == pytest.approx([3 / math.sqrt(10), 1 / math.sqrt(10)])  # "t10"


def _one_vector_per_input(request: Received) -> Reply:
    inputs = request.json()["input"]
    return Reply(200, {"data": [{"index": i, "embedding": [1.0, 0.0]} for i in range(len(inputs))]})


@pytest.mark.parametrize("unit", ["word ", "你好", "\U0001f600"], ids=["english", "cjk", "emoji"])
def test_an_embedding_input_is_clipped_to_what_openais_models_accept_in_any_script(
    model_server: ScriptedServer, unit: str
) -> None:
    # Two 32,000-character messages in one consolidation window.
    text = unit * (64_000 // len(unit))
    model_server.answer = _one_vector_per_input
    OpenAICompatEmbedder(model_server.url, "text-embedding-3-small", dimension=2).embed([text])
    (sent,) = model_server.received[0].json()["input"]
    # A subword token covers at least one UTF-8 byte, so this is at most 8,191 tokens.
    assert len(sent.encode()) <= 8191 and text.startswith(sent) and len(sent) > 1000 // len(unit)


def test_an_embedding_request_stays_within_300000_tokens_in_all(
    model_server: ScriptedServer,
) -> None:
    texts = [f"{i} " + "漢字" * 4000 for i in range(64)]
    model_server.answer = _one_vector_per_input
    vectors = OpenAICompatEmbedder(model_server.url, "m", dimension=2).embed(texts)
    sent = [r.json()["input"] for r in model_server.received]
    assert all(sum(len(t.encode()) for t in inputs) <= 300_000 for inputs in sent)
    assert [t.split()[0] for inputs in sent for t in inputs] == [str(i) for i in range(64)]
    assert len(vectors) == 64


def test_embeddings_of_another_dimension_are_a_model_error(model_server: ScriptedServer) -> None:
    model_server.script(Reply(200, {"data": [{"index": 0, "embedding": [0.1] * 768}]}))
    embedder = OpenAICompatEmbedder(model_server.url, "nomic-embed-text", dimension=384)
    with pytest.raises(ModelError, match="768-dimensional"):
        embedder.embed(["x"])


@pytest.mark.parametrize(
    ("first", "waited"),
    [
        (Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "2"}), [2.0]),
        (Reply(503, {"error": {"message": "loading model"}}), None),
    ],
    ids=["429-retry-after", "503-backoff"],
)
def test_throttling_and_server_errors_are_retried_then_answered(
    model_server: ScriptedServer, first: Reply, waited: list[float] | None
) -> None:
    model_server.script(first, Reply(200, chat_answer("done")))
    sleeps = Sleeps()
    assert generator(model_server, sleeps).generate("q", max_new_tokens=5).text == "done"
    assert len(model_server.received) == 2
    if waited is not None:
        assert sleeps == waited  # the server's Retry-After is honoured
    else:
        assert len(sleeps) == 1 and 0 <= sleeps[0] <= 0.25  # full jitter under the first ceiling


def test_server_errors_past_the_attempts_are_model_unavailable(
    model_server: ScriptedServer,
) -> None:
    busy = Reply(503, {"error": {"message": "overloaded"}})
    model_server.script(busy, busy, busy)
    sleeps = Sleeps()
    with pytest.raises(ModelUnavailable, match="overloaded") as caught:
        generator(model_server, sleeps, attempts=3).generate("q", max_new_tokens=5)
    assert caught.value.status == 503
    assert len(model_server.received) == 3 and len(sleeps) == 2
    assert sleeps[1] <= 0.5  # the ceiling doubles per attempt


def test_a_retry_after_longer_than_we_may_wait_fails_at_once(model_server: ScriptedServer) -> None:
    model_server.script(Reply(429, {"error": {"message": "quota"}}, {"Retry-After": "60"}))
    sleeps = Sleeps()
    with pytest.raises(ModelUnavailable, match="throttling.*quota"):
        generator(model_server, sleeps).generate("q", max_new_tokens=5)
    assert len(model_server.received) == 1 and sleeps == []


def test_a_bad_request_is_a_model_error_with_the_servers_message(
    model_server: ScriptedServer,
) -> None:
    model_server.script(Reply(400, {"error": {"message": "max_tokens must be positive"}}))
    sleeps = Sleeps()
    with pytest.raises(ModelError, match="max_tokens must be positive") as caught:
        generator(model_server, sleeps).generate("q", max_new_tokens=5)
    assert caught.value.status == 502
    assert len(model_server.received) == 1 and sleeps == []


def test_a_model_the_server_does_not_have_is_model_unavailable(
    model_server: ScriptedServer,
) -> None:
    body = {"error": {"message": 'model "llama3.2" not found, try pulling it first'}}
    model_server.script(Reply(404, body))
    with pytest.raises(ModelUnavailable, match="not found.*ollama pull"):
        generator(model_server).generate("q", max_new_tokens=5)


def test_no_server_at_the_base_url_says_so_after_retrying() -> None:
    base = closed_port_url()
    sleeps = Sleeps()
    adapter = OpenAICompatTextGenerator(f"{base}/v1", "llama3.2", attempts=3, sleep=sleeps)
    with pytest.raises(ModelUnavailable, match=f"no model server answers at {base}/v1.*Ollama"):
        adapter.generate("q", max_new_tokens=5)
    assert len(sleeps) == 2


def test_a_slow_server_times_out_without_retrying(model_server: ScriptedServer) -> None:
    model_server.script(Reply(200, chat_answer("late"), delay=1.0))
    sleeps = Sleeps()
    with pytest.raises(ModelUnavailable, match="did not answer within 0.3 s"):
        generator(model_server, sleeps, timeout=0.3).generate("q", max_new_tokens=5)
    assert len(model_server.received) == 1 and sleeps == []


@pytest.mark.parametrize(
    "answer", [b"<html>gateway</html>", {"choices": []}], ids=["not-json", "no-choices"]
)
def test_an_answer_that_cannot_be_read_is_a_model_error(
    model_server: ScriptedServer, answer: Any
) -> None:
    model_server.script(Reply(200, answer))
    with pytest.raises(ModelError, match="llama3.2"):
        generator(model_server).generate("q", max_new_tokens=5)


def test_retry_after_is_read_as_seconds_or_an_http_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
