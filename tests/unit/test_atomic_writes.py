"""Paths that write more than one item, or replace what was there: all or nothing.

Found while looking for the same class of bug as the failed import (issue 10): creating a
session with end_previous ended the open sessions one by one before the new one was written,
and re-ingesting a document that became shorter left its old last passages searchable."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.domain import Session, SessionCreation, UserState
from chatmemory.errors import Conflict
from chatmemory.schema import PASSAGE_INDEX, SessionStatus
from chatmemory.services.background.forget import forget_user
from chatmemory.services.background.ingest import SourceDocument, ingest_documents
from chatmemory.services.conversation import sessions
from tests.fakes import FakeEmbedder
from tests.unit.test_opensearch_adapter import Exchange, make_index

T = "2026-11-23T10:00:00.000Z"


def _status(memory: Any, session_id: str) -> str | None:
    found = memory.get_session(session_id)
    return found.status if found else None


def test_a_new_session_and_the_ends_of_the_previous_ones_are_one_transaction(
    dynamodb: Any,
) -> None:
    memory = wiring.short_term_memory()
    first = sessions.create_session(memory, "alice").session_id
    second = sessions.create_session(memory, "alice").session_id
    stale = memory.get_user("alice")
    forget_user(memory, "alice")  # between reading the caller and writing: the create fails
    new = Session("new-1", stale.owner, "n", SessionStatus.OPEN, T, T)

    with pytest.raises(Conflict):
        memory.create_session(new, SessionCreation(stale, end=[first, second], ended_at=T))

    assert memory.get_session("new-1") is None
    assert (_status(memory, first), _status(memory, second)) == ("OPEN", "OPEN")


def test_a_session_cannot_be_born_under_a_forgotten_owner_key(dynamodb: Any) -> None:
    memory = wiring.short_term_memory()
    forget_user(memory, "alice")
    created = sessions.create_session(memory, "alice")
    assert created.user_id == "alice#1"
    stale = UserState("alice", generation=0)
    with pytest.raises(Conflict):
        memory.create_session(Session("s", "alice", "n", "OPEN", T, T), SessionCreation(stale))


def test_reingesting_a_shorter_document_removes_its_old_passages() -> None:
    index = EmbeddedLongTermIndex()
    long = SourceDocument("handbook", "\n\n".join(f"Rule {i}. " + "word " * 100 for i in range(3)))
    short = SourceDocument("handbook", "Rule 0. Refunds within 14 days.")
    other = SourceDocument("faq", "Shipping takes two days.")
    assert ingest_documents([long, other], embedder=FakeEmbedder(), index=index) == 4
    assert ingest_documents([short], embedder=FakeEmbedder(), index=index) == 1
    keys = {
        r[0] for r in index._db.execute("SELECT doc_key FROM docs WHERE idx = ?", (PASSAGE_INDEX,))
    }
    assert keys == {"handbook#p1", "faq#p1"}


def test_the_opensearch_adapter_deletes_a_documents_other_passages_by_query() -> None:
    exchange = Exchange()
    index = make_index(exchange, "delete_by_query")
    index.delete_document("handbook", keep=["handbook#p1"])
    [sent] = exchange.sent
    assert (sent.url, sent.params) == (
        "/verified-passages/_delete_by_query",
        {"conflicts": "proceed", "refresh": "true"},
    )
    assert sent.json() == {
        "query": {
            "bool": {
                "filter": [{"term": {"doc_id": "handbook"}}],
                "must_not": [{"terms": {"doc_key": ["handbook#p1"]}}],
            }
        }
    }


def test_on_serverless_a_delete_by_query_asks_for_no_refresh() -> None:
    exchange = Exchange()
    index = make_index(exchange, "delete_by_query", serverless=True)
    index.delete_session("user-a", "sess-1")
    assert exchange.sent[0].params == {"conflicts": "proceed"}
