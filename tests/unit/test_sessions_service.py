"""The session services on the in-memory fake (tests/memory_fake.py, held to the DynamoDB
adapter's contract by tests/contract): fast, no moto, no DynamoDB."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chatmemory.api_models import ImportDocument
from chatmemory.domain import Session
from chatmemory.errors import SessionNotFound
from chatmemory.services.background.forget import forget_user
from chatmemory.services.conversation import sessions
from tests.memory_fake import InMemoryShortTermMemory

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def test_an_imported_session_keeps_the_time_of_its_last_message() -> None:
    """Failed first on DynamoDB (found by the contract tests): finishing an import left
    last_active_at at the import's start, so the session looked active at the wrong time."""
    memory = InMemoryShortTermMemory()
    document = ImportDocument.model_validate(
        {"messages": [{"input": "hi", "created_at": "2026-01-02T03:04:05Z"}]}
    )
    created = sessions.import_session(memory, "alice", document.imported(), clock=lambda: NOW)
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


def _imported(memory: InMemoryShortTermMemory, turns: int, text: str) -> str:
    document = ImportDocument.model_validate(
        {"messages": [{"input": f"{n}: {text}", "response": "ok"} for n in range(1, turns + 1)]}
    )
    return sessions.import_session(memory, "alice", document.imported()).session_id


def test_a_long_session_is_exported_in_pages_that_each_fit_a_lambda_answer() -> None:
    # A Lambda answer is at most 6 MB: a session's export is cut into pages of at most
    # page_bytes (4 MB in the API) by the size each message takes as sent. Failed before: one
    # answer of the whole session (7.9 MB for 500 long messages in Cyrillic, which JSON
    # escapes in 6 bytes a character), which Lambda refuses to return.
    memory = InMemoryShortTermMemory()
    session_id = _imported(memory, 25, "Привет " * 30)
    size = len(f"1: {'Привет ' * 30}") * 6 + 100

    pages, token = [], None
    while True:
        _, turns, token = sessions.export_session(
            memory,
            "alice",
            session_id,
            next_token=token,
            size_of=lambda t: size,
            page_bytes=size * 10,
        )
        pages.append([t.turn for t in turns])
        if token is None:
            break
    assert pages == [list(range(1, 11)), list(range(11, 21)), list(range(21, 26))]


def test_an_export_token_of_another_session_or_a_forged_one_is_refused() -> None:
    from chatmemory.errors import BadRequest

    memory = InMemoryShortTermMemory()
    first, second = _imported(memory, 3, "a"), _imported(memory, 3, "b")
    _, _, token = sessions.export_session(
        memory, "alice", first, size_of=lambda t: 10, page_bytes=10
    )
    assert token is not None
    for bad in (token, "bm90LWpzb24", "eyJzIjoxLCJhZnRlciI6LTF9"):
        with pytest.raises(BadRequest):
            sessions.export_session(memory, "alice", second, next_token=bad, size_of=len)
    # A short session is one page, with no token.
    _, turns, token = sessions.export_session(memory, "alice", second, size_of=lambda t: 10)
    assert [t.turn for t in turns] == [1, 2, 3] and token is None


def test_two_puts_of_a_new_client_id_racing_make_one_session() -> None:
    """The second PUT read no alias, then lost the alias's conditional write to the first: it
    answers the first one's session (200), and no second session exists."""
    memory = InMemoryShortTermMemory()
    read = memory.get_alias
    raced: list[Session] = []

    def racing_read(caller: str, client_id: str) -> str | None:
        found = read(caller, client_id)
        if memory.get_alias is racing_read:  # another request creates it right after this read
            memory.get_alias = read  # type: ignore[method-assign]
            raced.append(sessions.ensure_session(memory, caller, client_id, clock=lambda: NOW)[0])
        return found

    memory.get_alias = racing_read  # type: ignore[method-assign]
    session, created = sessions.ensure_session(memory, "alice", "conv", clock=lambda: NOW)
    assert (session.session_id, created) == (raced[0].session_id, False)
    listed = sessions.list_sessions(memory, "alice", limit=10, next_token=None).items
    assert [s.session_id for s in listed] == [raced[0].session_id]


def test_two_messages_racing_to_continue_an_ended_client_id_make_one_continuation() -> None:
    memory = InMemoryShortTermMemory()
    first, _ = sessions.ensure_session(memory, "alice", "conv", clock=lambda: NOW)
    sessions.end_session(memory, "alice", first.session_id, clock=lambda: NOW)
    other = sessions.continue_client_session(
        memory, "alice", "conv", ended=first.session_id, clock=lambda: NOW
    )
    late = sessions.continue_client_session(
        memory, "alice", "conv", ended=first.session_id, clock=lambda: NOW
    )
    assert other is not None and late is None  # the second read the alias before it moved
    assert memory.get_alias("alice", "conv") == other.session_id
    listed = sessions.list_sessions(memory, "alice", limit=10, next_token=None).items
    assert sorted(s.session_id for s in listed) == sorted([first.session_id, other.session_id])
