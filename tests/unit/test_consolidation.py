"""Consolidation from the sessions stream into the long-term index (moto + embedded index)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.background.consolidation import ConsolidationPolicy
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.conversation.sessions import create_session, end_session
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer, indexed
from tests.streams import StreamReader


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch):
    memory = DynamoShortTermMemory(dynamodb, "sessions", "conversations")
    index = EmbeddedLongTermIndex()
    deps = wiring.ConsolidationDeps(
        memory=memory,
        summarizer=FakeSummarizer(),
        embedder=FakeEmbedder(),
        index=index,
        policy=ConsolidationPolicy(max_attempts=2),
    )
    monkeypatch.setattr(wiring, "consolidation_deps", lambda: deps)
    chat = ChatDeps(memory=memory, generator=FakeGenerator())
    return memory, index, deps, chat, StreamReader(dynamodb, "sessions")


def _session_with_turns(memory, chat, user: str, texts: list[str]) -> str:
    session = create_session(memory, user)
    for text in texts:
        post_message(
            chat, ChatPolicy(), Message(user_id=user, session_id=session.session_id, content=text)
        )
    return session.session_id


def _handle(event: dict[str, Any], lambda_context) -> dict[str, Any]:
    from handlers import consolidate

    return consolidate.handler(event, lambda_context)


def _keys(index: EmbeddedLongTermIndex, user: str) -> list[str]:
    rows = index._db.execute(
        "SELECT doc_key FROM docs WHERE idx = ? AND user_id = ? ORDER BY doc_key",
        (MEMORY_INDEX, user),
    ).fetchall()
    return [r[0] for r in rows]


def test_an_ended_session_is_summarized_embedded_indexed_and_marked(world, lambda_context):
    memory, index, deps, chat, stream = world
    sid = _session_with_turns(
        memory, chat, "alice", [f"my dog is called Rex {i}" for i in range(5)]
    )
    stream.records()  # creation and turns: not for consolidation
    end_session(memory, "alice", sid)
    answer = _handle(stream.event(), lambda_context)
    assert answer == {"batchItemFailures": []}
    session = memory.get_session(sid)
    assert session.status == "CONSOLIDATED" and session.consolidated_at
    assert "my dog is called Rex 0" in session.summary
    # summary, opening and sliding windows of two turns: 1-2, 2-3, 3-4, 4-5
    assert _keys(index, "alice") == [f"{sid}#chunk-{i}" for i in range(1, 5)] + [
        f"{sid}#opening",
        f"{sid}#summary",
    ]
    assert deps.embedder.calls == 1  # six documents, one batched request


def test_only_open_to_ended_changes_trigger_consolidation(world, lambda_context):
    memory, index, deps, chat, stream = world
    sid = _session_with_turns(memory, chat, "alice", ["hello"])
    _handle(stream.event(), lambda_context)  # INSERT and turn-counter MODIFYs
    assert memory.get_session(sid).status == "OPEN"
    assert indexed(index, MEMORY_INDEX) == 0 and deps.summarizer.calls == 0


def test_a_redelivered_record_overwrites_instead_of_duplicating(world, lambda_context):
    memory, index, deps, chat, stream = world
    sid = _session_with_turns(memory, chat, "alice", ["one", "two", "three", "four"])
    stream.records()
    end_session(memory, "alice", sid)
    event = stream.event()
    _handle(event, lambda_context)
    first = _keys(index, "alice")
    # Lambda may deliver the same record again; flip the status back to force real work.
    memory._db.update_item(
        TableName="sessions",
        Key={"session_id": {"S": sid}},
        UpdateExpression="SET #s = :e",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":e": {"S": "ENDED"}},
    )
    _handle(event, lambda_context)
    assert _keys(index, "alice") == first
    assert indexed(index, MEMORY_INDEX) == len(first)


def test_a_failing_record_is_reported_and_the_rest_of_the_batch_proceeds(world, lambda_context):
    memory, index, deps, chat, stream = world
    bad = _session_with_turns(memory, chat, "alice", ["poison pill"])
    good = _session_with_turns(memory, chat, "bob", ["fine message"])
    stream.records()
    end_session(memory, "alice", bad)
    end_session(memory, "bob", good)
    deps.embedder.fail = lambda texts: any("poison" in t for t in texts)
    event = stream.event()
    answer = _handle(event, lambda_context)
    bad_record = next(
        r for r in event["Records"] if r["dynamodb"]["Keys"]["session_id"]["S"] == bad
    )
    assert answer == {
        "batchItemFailures": [{"itemIdentifier": bad_record["dynamodb"]["SequenceNumber"]}]
    }
    assert memory.get_session(good).status == "CONSOLIDATED"
    assert memory.get_session(bad).status == "ENDED"
    assert memory.get_session(bad).consolidation_attempts == 1


def test_after_the_last_attempt_the_session_is_failed_and_redrive_fixes_it(world, lambda_context):
    from scripts.redrive import redrive

    memory, index, deps, chat, stream = world
    sid = _session_with_turns(memory, chat, "alice", ["poison pill"])
    stream.records()
    end_session(memory, "alice", sid)
    deps.embedder.fail = lambda texts: True
    event = stream.event()
    assert _handle(event, lambda_context)["batchItemFailures"]  # attempt 1: retried
    assert _handle(event, lambda_context) == {"batchItemFailures": []}  # attempt 2: gives up
    failed = memory.get_session(sid)
    assert failed.status == "FAILED"
    assert "fake embedder is down" in failed.failure_reason
    deps.embedder.fail = None
    report = redrive(deps, now=datetime.now(UTC))
    assert report == {sid: "consolidated"}
    assert memory.get_session(sid).status == "CONSOLIDATED"
    assert f"{sid}#summary" in _keys(index, "alice")


def test_the_redrive_function_of_a_deployed_stack_consolidates_failed_sessions(
    world, lambda_context, monkeypatch
):
    """What `aws lambda invoke --function-name <RedriveFunctionName>` runs: the operator needs
    no role in OpenSearch, the function has the stack's own."""
    from chatmemory import wiring
    from handlers import redrive

    memory, index, deps, chat, stream = world
    sid = _session_with_turns(memory, chat, "alice", ["a poison pill for the embedder"])
    stream.records()
    end_session(memory, "alice", sid)
    deps.embedder.fail = lambda texts: True
    event = stream.event()
    _handle(event, lambda_context)
    _handle(event, lambda_context)
    assert memory.get_session(sid).status == "FAILED"
    deps.embedder.fail = None
    monkeypatch.setattr(wiring, "consolidation_deps", lambda: deps)

    assert redrive.handler({}, lambda_context) == {
        "sessions": {sid: "consolidated"},
        "purges_restarted": [],
    }
    assert memory.get_session(sid).status == "CONSOLIDATED"


def test_the_ingest_function_indexes_documents_given_in_its_event(lambda_context, monkeypatch):
    from chatmemory import wiring
    from chatmemory.adapters.embedded import EmbeddedLongTermIndex
    from chatmemory.schema import PASSAGE_INDEX
    from handlers import ingest

    index = EmbeddedLongTermIndex()
    monkeypatch.setattr(wiring, "long_term_index", lambda: index)
    monkeypatch.setattr(wiring, "embedder", lambda: FakeEmbedder())
    event = {"documents": [{"doc_id": "handbook", "text": "Refunds within 14 days."}]}

    assert ingest.handler(event, lambda_context) == {"documents": 1, "passages": 1}
    assert indexed(index, PASSAGE_INDEX) == 1
