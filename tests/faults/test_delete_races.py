"""Deletes racing writes on DynamoDB Local, made deterministic: the delete happens at a chosen
point inside the other request (the model call of a chat turn, the writes of an import).

Failed first: with real threads, 20 of 20 rounds of delete_session racing post_message left
orphan turns (the delete removed the turns, then the session; the turn's transaction only
checked num_turns). A failed import left its first turns under no session item."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chatmemory.api_models import ImportDocument
from chatmemory.domain import ImportedSession
from chatmemory.errors import ModelUnavailable, SessionNotFound, ShortTermMemoryUnavailable
from chatmemory.services.background.forget import Purging, forget_user, purge_session, purge_user
from chatmemory.services.background.maintenance import sweep_stale_work
from chatmemory.services.conversation import sessions
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.conversation.stacking import StackPolicy
from tests.fakes import FakeGenerator
from tests.faults.conftest import Store

pytestmark = pytest.mark.integration


def _purge_all(store: Store, *session_ids: str) -> None:
    for sid in session_ids:
        purge_session(sid, Purging(store.memory, None), time_left=lambda: 60)


def _nothing_left(store: Store, session_id: str) -> None:
    assert store.turns(session_id) == []
    found = store.client.get_item(
        TableName=store.sessions_table,
        Key={"session_id": {"S": session_id}},
        ConsistentRead=True,
    )
    assert "Item" not in found


@pytest.mark.parametrize("how", ["the session", "everything"])
def test_a_delete_during_the_model_call_leaves_no_turn_behind(store: Store, how: str) -> None:
    memory = store.memory
    sid = sessions.create_session(memory, "alice").session_id
    deps = ChatDeps(memory=memory, generator=FakeGenerator())
    post_message(deps, ChatPolicy(), Message(user_id="alice", session_id=sid, content="first"))
    # The message is written on a thread beside the model's call (stacked.py): the model's
    # call waits for that write, so the delete always comes after it (it raced before: under
    # load the delete could land first, and the write was refused).
    written = threading.Event()
    write = memory.append_turn

    def append_then_signal(*args: Any, **kwargs: Any) -> Any:
        try:
            return write(*args, **kwargs)
        finally:
            written.set()

    memory.append_turn = append_then_signal  # type: ignore[method-assign]

    def delete_then_answer(prompt: str) -> str:
        # The turn has read the session and its window, and written the message; now the
        # user deletes.
        assert written.wait(30)
        if how == "the session":
            sessions.delete_session(memory, "alice", sid)
        else:
            forget_user(memory, "alice")
        return "an answer nobody will see"

    deps.generator = FakeGenerator(reply=delete_then_answer)
    if how == "the session":
        # The tombstone is written before the answer: its transaction fails, the caller gets
        # 404. The message itself was written before the model call (stacked messages), in a
        # session nobody can read any more, and the purge deletes it with the rest.
        with pytest.raises(SessionNotFound):
            post_message(
                deps, ChatPolicy(), Message(user_id="alice", session_id=sid, content="second")
            )
        stored = store.turns(sid)
        assert [t["input"] for t in stored] == ["first", "second"]
        assert stored[1].get("pending") and not stored[1].get("response")
    else:
        # The turn lands under the forgotten owner key, which nobody can reach any more; the
        # purge marks the session (after settle_seconds, longer than any API request lasts),
        # so the turn is deleted with it.
        post_message(deps, ChatPolicy(), Message(user_id="alice", session_id=sid, content="second"))
        with pytest.raises(SessionNotFound):
            sessions.get_session(memory, "alice", sid)
        purge_user("alice", Purging(memory, None), time_left=lambda: 60, sleep=lambda s: None)
    _purge_all(store, sid)
    _nothing_left(store, sid)


def _deleted_during_a_failed_model_call(store: Store) -> tuple[str, ChatDeps]:
    """A session of alice's, and chat deps whose model call deletes it and then fails."""
    sid = sessions.create_session(store.memory, "alice").session_id

    def delete_then_fail(prompt: str) -> str:
        sessions.delete_session(store.memory, "alice", sid)
        raise ModelUnavailable("the model went down")

    return sid, ChatDeps(memory=store.memory, generator=FakeGenerator(reply=delete_then_fail))


def test_a_message_kept_after_a_model_failure_is_not_written_into_a_deleted_session(
    store: Store,
) -> None:
    sid, deps = _deleted_during_a_failed_model_call(store)
    with pytest.raises(SessionNotFound):
        post_message(
            deps,
            ChatPolicy(stack=StackPolicy(enabled=False)),
            Message(user_id="alice", session_id=sid, content="hi", client_message_id="m"),
        )
    assert store.turns(sid) == []
    _purge_all(store, sid)
    _nothing_left(store, sid)


def test_a_stacked_message_whose_model_failed_after_a_delete_is_purged(store: Store) -> None:
    """Stacked messages are written before the model call: the message is in the session when
    it is deleted, is never answered, and goes with the purge."""
    sid, deps = _deleted_during_a_failed_model_call(store)
    with pytest.raises(ModelUnavailable):
        post_message(
            deps,
            ChatPolicy(),
            Message(user_id="alice", session_id=sid, content="hi", client_message_id="m"),
        )
    with pytest.raises(SessionNotFound):  # the retry
        post_message(
            deps,
            ChatPolicy(),
            Message(user_id="alice", session_id=sid, content="hi", client_message_id="m"),
        )
    _purge_all(store, sid)
    _nothing_left(store, sid)


def test_a_turn_written_just_before_the_delete_is_purged_with_the_session(store: Store) -> None:
    memory = store.memory
    sid = sessions.create_session(memory, "alice").session_id
    deps = ChatDeps(memory=memory, generator=FakeGenerator())
    for i in range(60):
        post_message(deps, ChatPolicy(), Message(user_id="alice", session_id=sid, content=f"m{i}"))
    sessions.delete_session(memory, "alice", sid)
    _purge_all(store, sid)
    _nothing_left(store, sid)


def _document(count: int) -> ImportedSession:
    return ImportDocument.model_validate(
        {"messages": [{"input": f"message {i}", "response": f"answer {i}"} for i in range(count)]}
    ).imported()


class FailingWrites:
    """Lets `allowed` batch writes through, then fails every next one as DynamoDB would."""

    def __init__(self, store: Store, allowed: int) -> None:
        self.allowed = allowed
        real = store.memory.put_turns

        def put_turns(turns: Any) -> None:
            if self.allowed <= 0:
                raise ShortTermMemoryUnavailable("DynamoDB kept items unprocessed")
            self.allowed -= 1
            real(turns)

        store.memory.put_turns = put_turns  # type: ignore[method-assign]


# What these tests break is a write, not the clock: the import's 20 s (API Gateway's 29 s less a
# margin) is more than DynamoDB Local on two busy cores may take for a few hundred turns.
_UNHURRIED = sessions.ImportLimits(max_seconds=600)


def test_an_import_that_fails_half_way_is_unreachable_and_purged(store: Store) -> None:
    FailingWrites(store, allowed=1)
    created: list[str] = []

    def make_id() -> str:
        created.append("imported-1")
        return "imported-1"

    with pytest.raises(ShortTermMemoryUnavailable):
        sessions.import_session(
            store.memory, "alice", _document(1200), make_id=make_id, limits=_UNHURRIED
        )
    assert len(store.turns("imported-1")) == 500  # the first batch was written...
    with pytest.raises(SessionNotFound):  # ...and nobody can reach it
        sessions.get_session(store.memory, "alice", "imported-1")
    assert sessions.list_sessions(store.memory, "alice", limit=10, next_token=None).items == []
    assert store.session("imported-1")["status"] == "DELETING"
    _purge_all(store, "imported-1")
    _nothing_left(store, "imported-1")


def test_an_import_whose_process_died_is_collected_by_the_sweeper(store: Store) -> None:
    FailingWrites(store, allowed=1)
    store.memory.mark_deleting = lambda *a, **k: (_ for _ in ()).throw(  # type: ignore[method-assign]
        ShortTermMemoryUnavailable("and the clean-up write failed too")
    )
    with pytest.raises(ShortTermMemoryUnavailable):
        sessions.import_session(
            store.memory, "alice", _document(800), make_id=lambda: "imp-2", limits=_UNHURRIED
        )
    del store.memory.mark_deleting  # the next process is healthy
    assert store.session("imp-2")["status"] == "IMPORTING"
    with pytest.raises(SessionNotFound):
        sessions.get_session(store.memory, "alice", "imp-2")

    now = datetime.now(UTC)
    assert sweep_stale_work(store.memory, now=now).abandoned_imports == []  # not stale yet
    later = sweep_stale_work(store.memory, now=now + timedelta(minutes=30))
    assert later.abandoned_imports == ["imp-2"]
    _purge_all(store, "imp-2")
    _nothing_left(store, "imp-2")


def test_a_stalled_purge_is_handed_to_a_new_invocation_by_the_sweeper(store: Store) -> None:
    memory = store.memory
    sid = sessions.create_session(memory, "alice").session_id
    sessions.delete_session(memory, "alice", sid)  # and its purge never ran (retries ran out)
    before = store.session(sid).get("purge_round", 0)
    found = sweep_stale_work(memory, now=datetime.now(UTC) + timedelta(minutes=30))
    assert found.stalled_purges == [sid]
    assert store.session(sid)["purge_round"] == before + 1  # the stream hands it over
