"""Model endpoints that time out, throttle or fail during a chat turn, through the real SageMaker
and OpenAI-compatible adapters against a scripted HTTP model server (tests/model_server.py), and
the chat Lambda on moto: a clear 502/503 JSON error, the user's message kept as a pending turn,
and a retry with the same client_message_id that calls the model once and stores one turn."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from chatmemory import wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.adapters.openai_compat import OpenAICompatEmbedder, OpenAICompatTextGenerator
from chatmemory.adapters.retry import model_client_config
from chatmemory.adapters.sagemaker import SageMakerTextGenerator
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.conversation.chat import ChatDeps
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer
from tests.model_server import Reply, ScriptedServer
from tests.unit.test_chat_api import Api, _turn_items

ENDPOINT = "chat-endpoint"
QUESTION = {"content": "my cat is called Tom", "client_message_id": "m-1"}


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


def _sagemaker(server: ScriptedServer, *, timeout: float = 2.0) -> SageMakerTextGenerator:
    """The SageMaker adapter on a real runtime client with the deployed config (2 attempts)."""
    client = boto3.client(
        "sagemaker-runtime",
        region_name="us-east-1",
        endpoint_url=server.url,
        config=model_client_config(timeout, 2),
    )
    return SageMakerTextGenerator(client, ENDPOINT)


def _openai(server: ScriptedServer, *, timeout: float = 2.0) -> OpenAICompatTextGenerator:
    return OpenAICompatTextGenerator(
        f"{server.url}/v1", "llama3.2", timeout=timeout, attempts=3, sleep=lambda _: None
    )


def _sagemaker_ok(text: str) -> Reply:
    return Reply(200, {"generated_texts": [text]})


def _openai_ok(text: str) -> Reply:
    return Reply(
        200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
    )


SM_BUSY = Reply(503, {"message": "busy"}, {"x-amzn-ErrorType": "ServiceUnavailable"})
SM_THROTTLED = Reply(400, {"message": "Rate exceeded"}, {"x-amzn-ErrorType": "ThrottlingException"})
SM_CONTAINER_500 = Reply(
    424,
    {
        "message": 'Received server error (500) from primary with message "boom"',
        "OriginalStatusCode": 500,
        "OriginalMessage": "CUDA error: an illegal memory access was encountered",
    },
    {"x-amzn-ErrorType": "ModelError"},
)
OAI_429 = Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
OAI_500 = Reply(500, {"error": {"message": "internal"}})

Case = tuple[Callable[..., Any], dict[str, Any], list[Reply], Callable[[str], Reply], int, str, str]

CASES: dict[str, Case] = {
    # adapter, its options, the failing answers, a good answer, status, code, what the error says
    "sagemaker-timeout": (
        _sagemaker,
        {"timeout": 0.3},
        [Reply(200, {"generated_texts": ["late"]}, delay=1.0)],
        _sagemaker_ok,
        503,
        "model_unavailable",
        "did not answer in time",
    ),
    "sagemaker-throttled": (
        _sagemaker,
        {},
        [SM_THROTTLED, SM_THROTTLED],
        _sagemaker_ok,
        503,
        "model_unavailable",
        "throttling",
    ),
    "sagemaker-503": (
        _sagemaker,
        {},
        [SM_BUSY, SM_BUSY],
        _sagemaker_ok,
        503,
        "model_unavailable",
        "unavailable",
    ),
    "sagemaker-container-500": (
        _sagemaker,
        {},
        [SM_CONTAINER_500],
        _sagemaker_ok,
        502,
        "model_error",
        "CUDA error",
    ),
    "openai-timeout": (
        _openai,
        {"timeout": 0.3},
        [Reply(200, {}, delay=1.0)],
        _openai_ok,
        503,
        "model_unavailable",
        "did not answer within",
    ),
    "openai-429": (
        _openai,
        {},
        [OAI_429] * 3,
        _openai_ok,
        503,
        "model_unavailable",
        "throttling",
    ),
    "openai-500": (
        _openai,
        {},
        [OAI_500] * 3,
        _openai_ok,
        503,
        "model_unavailable",
        "unavailable",
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_failing_model_answers_a_json_error_keeps_the_message_and_one_retry_completes_it(
    dynamodb: Any,
    model_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    lambda_context: Any,
    no_backoff: list[float],
    case: Case,
) -> None:
    from handlers import chat_api

    adapter, options, failures, good, status, code, says = case
    deps = ChatDeps(memory=wiring.short_term_memory(), generator=adapter(model_server, **options))
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    api = Api(chat_api.handler, lambda_context)
    sid = api.new_session()
    model_server.script(*failures)

    got, answer = api.call("POST", f"/sessions/{sid}/messages", QUESTION)

    assert (got, answer["error"]["code"]) == (status, code)
    assert set(answer) == {"error"} and set(answer["error"]) == {"code", "message"}
    assert says in answer["error"]["message"]
    assert len(model_server.received) == len(failures)  # retried as configured, no more
    [kept] = _turn_items(dynamodb, sid)
    assert kept["input"]["S"] == QUESTION["content"] and kept["pending"] == {"BOOL": True}
    assert "response" not in kept

    model_server.script(good("Tom is a fine name for a cat."))
    turn = api.say(sid, **QUESTION)

    assert turn["turn"] == 1 and turn["pending"] is False
    assert turn["response"] == "Tom is a fine name for a cat."
    assert len(model_server.received) == len(failures) + 1  # one model call on the retry
    assert api.say(sid, **QUESTION) == turn  # and none after that
    assert len(model_server.received) == len(failures) + 1
    [stored] = _turn_items(dynamodb, sid)
    assert stored["response"]["S"] == turn["response"] and "pending" not in stored
    assert api.call("GET", f"/sessions/{sid}")[1]["session"]["num_turns"] == 1


def test_past_with_a_failing_embedder_answers_503_keeps_it_and_the_retry_recalls_once(
    dynamodb: Any,
    model_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    lambda_context: Any,
) -> None:
    from handlers import chat_api

    fake = FakeEmbedder()
    model = FakeGenerator(reply=lambda prompt: "You planted tomatoes.")
    deps = ChatDeps(
        memory=wiring.short_term_memory(),
        generator=model,
        embedder=fake,
        long_term=EmbeddedLongTermIndex(),
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    api = Api(chat_api.handler, lambda_context)
    garden = api.new_session()
    api.say(garden, "I planted tomatoes and basil in my garden")
    api.call("POST", f"/sessions/{garden}/end")
    consolidated = consolidate_session(
        garden,
        memory=deps.memory,
        summarizer=FakeSummarizer(),
        embedder=fake,
        index=deps.long_term,
        policy=ConsolidationPolicy(),
        now=datetime.now(UTC),
    )
    assert consolidated.outcome == "consolidated"
    # From here on the query is embedded by an OpenAI-compatible server that is overloaded.
    deps.embedder = OpenAICompatEmbedder(
        model_server.url, "nomic-embed-text", dimension=fake.dimension, sleep=lambda _: None
    )
    model_server.script(*[Reply(503, {"error": {"message": "loading model"}})] * 3)
    sid = api.new_session()
    ask = {"content": "/past what did I plant in the garden?", "client_message_id": "p-1"}
    calls = model.calls

    status, answer = api.call("POST", f"/sessions/{sid}/messages", ask)

    assert status == 503 and answer["error"]["code"] == "model_unavailable"
    assert "loading model" in answer["error"]["message"]
    [kept] = _turn_items(dynamodb, sid)
    assert kept["intent"]["S"] == "past" and kept["pending"] == {"BOOL": True}
    assert model.calls == calls  # no answer was generated without the recall

    vector = fake.embed(["what did I plant in the garden?"])[0]
    model_server.script(Reply(200, {"data": [{"index": 0, "embedding": vector}]}))
    turn = api.say(sid, **ask)

    assert turn["response"] == "You planted tomatoes." and turn["intent"] == "past"
    assert [s["id"] for s in turn["sources"]] == [garden]
    assert len(model_server.received) == 4 and model.calls == calls + 1
    assert model_server.received[-1].json()["input"] == ["what did I plant in the garden?"]
    # Failed first: completing the pending turn stored its answer but not its sources.
    assert api.call("GET", f"/sessions/{sid}/messages")[1]["messages"] == [turn]
    [stored] = _turn_items(dynamodb, sid)
    assert "pending" not in stored and stored["sources"]["L"][0]["M"]["id"]["S"] == garden
