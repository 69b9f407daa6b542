"""The long-term index (OpenSearch, through the real adapter and client with only the connection
faked) down during a chat turn and during consolidation: chat answers from short-term memory,
flagged degraded; consolidation retries, ends FAILED with the reason, and redrive fixes it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from opensearchpy.exceptions import ConnectionTimeout

from chatmemory import wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.services.background.consolidation import ConsolidationPolicy
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.conversation.sessions import create_session, end_session
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer
from tests.streams import StreamReader
from tests.unit.test_chat_api import Api, _turn_items
from tests.unit.test_opensearch_adapter import Exchange, make_index, recorded

# One try and the client's two retries, each answered 503.
SHARDS_FAILED = [recorded("all_shards_failed")] * 3


def _timeouts(count: int) -> list[ConnectionTimeout]:
    return [ConnectionTimeout("TIMEOUT", "Read timed out. (read timeout=10)", None)] * count


@pytest.fixture
def chat(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any):
    from handlers import chat_api

    exchange = Exchange()
    model = FakeGenerator()
    deps = ChatDeps(
        memory=wiring.short_term_memory(),
        generator=model,
        embedder=FakeEmbedder(),
        long_term=make_index(exchange),
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return Api(chat_api.handler, lambda_context), exchange, model


@pytest.mark.parametrize("outage", [SHARDS_FAILED, _timeouts(3)], ids=["503", "timeouts"])
@pytest.mark.parametrize("command", ["/past", "/verified"])
def test_recall_with_opensearch_down_answers_from_short_term_memory_flagged_degraded(
    chat: Any, dynamodb: Any, command: str, outage: list[Any]
) -> None:
    api, exchange, model = chat
    sid = api.new_session()
    exchange.replies.append(recorded("msearch"))  # the ordinary turn's auto-recall
    api.say(sid, "my sister lives in Porto")
    before = len(exchange.sent)
    exchange.replies.extend(outage)

    turn = api.say(sid, f"{command} where does my sister live?")

    assert turn["degraded"] is True and turn["sources"] == []
    assert turn["intent"] == command[1:] and turn["response"].startswith("reply #2")
    assert "my sister lives in Porto" in model.prompts[-1]  # the short-term window
    assert len(exchange.sent) - before == 3 and not exchange.replies
    stored = _turn_items(dynamodb, sid)[-1]
    assert stored["degraded"] == {"BOOL": True} and "pending" not in stored


def test_a_degraded_answer_completed_on_retry_is_stored_as_degraded(
    chat: Any, dynamodb: Any
) -> None:
    """Failed first: completing a pending turn did not store its `degraded` flag."""
    api, exchange, model = chat
    embedder = wiring.chat_deps().embedder
    embedder.fail = lambda texts: True  # the first try fails before the index is reached
    sid = api.new_session()
    ask = {"content": "/past what did we plan?", "client_message_id": "m-1"}

    status, _ = api.call("POST", f"/sessions/{sid}/messages", ask)
    assert status == 503
    embedder.fail = None
    exchange.replies.extend(SHARDS_FAILED)  # and the retry finds the index down
    turn = api.say(sid, **ask)

    assert turn["degraded"] is True and turn["pending"] is False
    assert api.call("GET", f"/sessions/{sid}/messages")[1]["messages"] == [turn]
    [stored] = _turn_items(dynamodb, sid)
    assert stored["degraded"] == {"BOOL": True}


def test_memory_search_with_opensearch_down_is_a_503_json_error(chat: Any) -> None:
    api, exchange, _ = chat
    exchange.replies.extend(SHARDS_FAILED)

    status, answer = api.call("GET", "/memories", query={"q": "Porto"})

    assert status == 503
    assert answer["error"]["code"] == "long_term_memory_unavailable"
    assert "search_phase_execution_exception" in answer["error"]["message"]


def test_consolidation_with_opensearch_unreachable_retries_fails_then_redrive_indexes_it(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    from handlers import consolidate
    from scripts.redrive import redrive

    memory = DynamoShortTermMemory(dynamodb, "sessions", "conversations")
    exchange = Exchange()
    deps = wiring.ConsolidationDeps(
        memory=memory,
        summarizer=FakeSummarizer(),
        embedder=FakeEmbedder(),
        index=make_index(exchange),
        policy=ConsolidationPolicy(max_attempts=2),
    )
    monkeypatch.setattr(wiring, "consolidation_deps", lambda: deps)
    stream = StreamReader(dynamodb, "sessions")
    sid = create_session(memory, "alice").session_id
    chat = ChatDeps(memory=memory, generator=FakeGenerator())
    post_message(
        chat, ChatPolicy(), Message(user_id="alice", session_id=sid, content="sourdough tips")
    )
    stream.records()
    end_session(memory, "alice", sid)
    event = stream.event()
    exchange.replies.extend(_timeouts(6))

    first = consolidate.handler(event, lambda_context)
    assert first == {
        "batchItemFailures": [{"itemIdentifier": event["Records"][0]["dynamodb"]["SequenceNumber"]}]
    }
    assert memory.get_session(sid).status == "ENDED"  # retried by the stream
    assert consolidate.handler(event, lambda_context) == {"batchItemFailures": []}  # gives up

    failed = memory.get_session(sid)
    assert failed.status == "FAILED"
    assert failed.failure_reason.startswith("LongTermMemoryUnavailable: OpenSearch unreachable")
    assert len(exchange.sent) == 6 and not exchange.replies

    exchange.replies.append(recorded("bulk_created"))
    assert redrive(deps, now=datetime.now(UTC)) == {sid: "consolidated"}
    assert memory.get_session(sid).status == "CONSOLIDATED"
    bulk = exchange.sent[-1].ndjson()
    ids = [line["index"]["_id"] for line in bulk[::2]]
    assert ids == [f"{sid}#summary", f"{sid}#opening", f"{sid}#chunk-1"]
    # Every attempt sent the same deterministic ids: a retry overwrites, never duplicates.
    assert {tuple(line["index"]["_id"] for line in s.ndjson()[::2]) for s in exchange.sent} == {
        tuple(ids)
    }
