"""The session services on the in-memory fake (tests/memory_fake.py, held to the DynamoDB
adapter's contract by tests/contract): fast, no moto, no DynamoDB."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chatmemory.api_models import ImportDocument
from chatmemory.errors import SessionNotFound
from chatmemory.services import sessions
from chatmemory.services.forget import forget_user
from tests.memory_fake import InMemoryShortTermMemory

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def test_an_imported_session_keeps_the_time_of_its_last_message() -> None:
    """Failed first on DynamoDB (found by the contract tests): finishing an import left
    last_active_at at the import's start, so the session looked active at the wrong time."""
    memory = InMemoryShortTermMemory()
    document = ImportDocument.model_validate(
        {"messages": [{"input": "hi", "created_at": "2026-01-02T03:04:05Z"}]}
    )
    created = sessions.import_session(memory, "alice", document, clock=lambda: NOW)
    stored = sessions.get_session(memory, "alice", created.session_id)
    assert stored.status == "OPEN" and stored.last_active_at == "2026-01-02T03:04:05.000Z"


def test_sessions_after_a_forget_live_under_the_new_owner_key() -> None:
    memory = InMemoryShortTermMemory()
    before = sessions.create_session(memory, "alice", clock=lambda: NOW)
    forget_user(memory, "alice", clock=lambda: NOW)
    after = sessions.create_session(memory, "alice", clock=lambda: NOW)
    assert (before.user_id, after.user_id) == ("alice", "alice#1")
    with pytest.raises(SessionNotFound):
        sessions.get_session(memory, "alice", before.session_id)
    listed = sessions.list_sessions(memory, "alice", limit=10, next_token=None).items
    assert [s.session_id for s in listed] == [after.session_id]


def test_end_previous_ends_the_callers_open_sessions_in_the_same_write() -> None:
    memory = InMemoryShortTermMemory()
    first = sessions.create_session(memory, "alice", clock=lambda: NOW)
    bobs = sessions.create_session(memory, "bob", clock=lambda: NOW)
    sessions.create_session(memory, "alice", end_previous=True, clock=lambda: NOW)
    assert sessions.get_session(memory, "alice", first.session_id).status == "ENDED"
    assert sessions.get_session(memory, "bob", bobs.session_id).status == "OPEN"
