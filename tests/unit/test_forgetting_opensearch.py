"""The delete-during-consolidation race against the OpenSearch adapter, on its recorded request
and response bodies: what is sent, in which order, and that an index still answering with a
deleted session's documents (a refresh interval, Serverless's lag) gets nothing recalled."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chatmemory import wiring
from chatmemory.adapters.opensearch import OpenSearchLongTermIndex
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.background.forget import Purging, purge_session
from chatmemory.services.conversation import sessions
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.longterm import recall
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer
from tests.unit.test_opensearch_adapter import Exchange, make_index

SESSION_FILTER = {
    "query": {
        "bool": {"filter": [{"term": {"user_id": "user-a"}}, {"term": {"session_id": "sess-1"}}]}
    }
}


def test_a_session_deleted_and_purged_before_consolidation_writes_is_deleted_again(
    dynamodb: Any,
) -> None:
    exchange = Exchange()
    index = make_index(
        exchange,
        "delete_by_query",  # the purge, while consolidation summarizes
        "bulk_created",  # consolidation's write, after the purge
        "delete_by_query",  # consolidation's compensating delete
        "msearch",  # a later /memories: the index still answers with sess-1...
    )
    assert isinstance(index, OpenSearchLongTermIndex)
    memory = wiring.short_term_memory()
    session = sessions.create_session(memory, "user-a", make_id=lambda: "sess-1")
    deps = ChatDeps(memory=memory, generator=FakeGenerator(), embedder=FakeEmbedder())
    post_message(
        deps, ChatPolicy(), Message(user_id="user-a", session_id="sess-1", content="trip to Lisbon")
    )
    sessions.end_session(memory, "user-a", session.session_id)

    class DeletingSummarizer(FakeSummarizer):
        def summarize(self, text: str) -> str:
            # The user deletes the session while the model summarizes it; the purge runs.
            sessions.delete_session(memory, "user-a", "sess-1")
            purge = purge_session("sess-1", Purging(memory, index), time_left=lambda: 60)
            assert purge.outcome == "purged"
            return super().summarize(text)

    result = consolidate_session(
        "sess-1",
        memory=memory,
        summarizer=DeletingSummarizer(),
        embedder=deps.embedder,
        index=index,
        policy=ConsolidationPolicy(),
        now=datetime.now(UTC),
    )
    assert result.outcome == "deleted"

    found = recall.search_memories(
        memory,
        deps.embedder,
        index,
        user_id="user-a",
        query="Lisbon",
        k=5,
        weights=ChatPolicy().recall_weights,
        now=datetime.now(UTC),
    )
    assert found == []  # sess-1 is gone from DynamoDB, so the index's answer is not trusted

    purge, bulk, compensation, search = exchange.sent
    for delete in (purge, compensation):
        assert (delete.url, delete.params) == (
            "/conversation-memories/_delete_by_query",
            {"conflicts": "proceed", "refresh": "true", "routing": "user-a"},
        )
        assert delete.json() == SESSION_FILTER
    assert bulk.url == "/conversation-memories/_bulk"
    # The purge took the turns too, so only the summary (computed before) was left to write.
    assert {line["doc_key"] for line in bulk.ndjson() if "doc_key" in line} == {"sess-1#summary"}
    # Both searches of /memories in one request, each to the user's session documents.
    assert search.url == "/conversation-memories/_msearch"
    _, knn, _, match = search.ndjson()
    only_sessions = [{"term": {"user_id": "user-a"}}, {"exists": {"field": "session_id"}}]
    assert knn["query"]["knn"]["embedding"]["filter"] == {"bool": {"filter": only_sessions}}
    assert match["query"]["bool"]["filter"] == only_sessions
