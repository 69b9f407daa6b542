"""One contract for every ShortTermMemory: the DynamoDB adapter (on moto and on DynamoDB Local)
and the in-memory fake that service tests use must keep the same promises, or a service test
proves nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.domain import (
    ClientAlias,
    CoveredTurns,
    Handoff,
    MemoryRecord,
    Provenance,
    PurgeEntry,
    RecordFilter,
    Session,
    SessionCreation,
    Turn,
    TurnWrite,
    UserState,
)
from chatmemory.errors import BadRequest, Conflict, SessionNotFound, TurnNotFound
from chatmemory.ports import ShortTermMemory
from chatmemory.schema import (
    PurgeState,
    RecordOrigin,
    RecordStatus,
    RecordType,
    SessionStatus,
    TurnOrigin,
)
from tests.contract.conftest import BACKENDS, dynamodb_local_tables
from tests.memory_fake import InMemoryShortTermMemory

T0 = "2026-11-23T10:00:00.000Z"
T1 = "2026-11-23T10:01:00.000Z"
LATER = "2026-11-23T12:00:00.000Z"


@pytest.fixture(params=BACKENDS)
def memory(request: pytest.FixtureRequest) -> Iterator[ShortTermMemory]:
    if request.param == "in-memory":
        yield InMemoryShortTermMemory()
        return
    if request.param == "dynamodb-local":
        client, names = dynamodb_local_tables(
            request, schema.SESSIONS, schema.CONVERSATIONS, schema.USERS, schema.RECORDS
        )
        yield DynamoShortTermMemory(
            client,
            names[schema.SESSIONS.logical_name],
            names[schema.CONVERSATIONS.logical_name],
            names[schema.USERS.logical_name],
            names[schema.RECORDS.logical_name],
        )
        return
    request.getfixturevalue("dynamodb")  # moto tables from schema.py
    yield wiring.short_term_memory()


def _session(
    sid: str, owner: str = "alice", status: str = SessionStatus.OPEN, **kw: Any
) -> Session:
    return Session(sid, owner, sid, SessionStatus(status), kw.pop("started", T0), T0, **kw)


def _create(memory: ShortTermMemory, sid: str, owner: str = "alice", **kw: Any) -> Session:
    session = _session(sid, owner, **kw)
    memory.create_session(session, SessionCreation(UserState(owner.split("#")[0])))
    return session


def _turn(sid: str, text: str, *, pending: bool = False, cmid: str | None = None) -> Turn:
    return Turn(sid, 0, "alice", text, None if pending else f"re: {text}", created_at=T1,
                client_message_id=cmid, pending=pending)  # fmt: skip


# --- sessions ---------------------------------------------------------------------------------


def test_a_created_session_reads_back_with_its_callers_state(memory: ShortTermMemory) -> None:
    _create(memory, "s1")
    session, user = memory.get_owned("s1", "alice")
    assert session is not None and (session.session_id, session.status) == ("s1", "OPEN")
    assert (user.user_id, user.generation, user.owner) == ("alice", 0, "alice")
    assert memory.get_session("missing") is None


def test_creating_under_a_forgotten_generation_writes_nothing(memory: ShortTermMemory) -> None:
    _create(memory, "old")
    stale = memory.get_user("alice")
    memory.forget_user(stale, T1)
    with pytest.raises(Conflict):
        memory.create_session(_session("new"), SessionCreation(stale, end=["old"], ended_at=T1))
    assert memory.get_session("new") is None
    assert memory.get_session("old").status == "OPEN"  # type: ignore[union-attr]


# --- client ids (PUT /sessions/{id}): an alias per caller and id -------------------------------


def test_a_client_id_names_the_session_written_with_it(memory: ShortTermMemory) -> None:
    session = _session("s1", client_id="user42-conv")
    memory.create_session(
        session, SessionCreation(UserState("alice"), alias=ClientAlias("alice", "user42-conv"))
    )
    assert memory.get_alias("alice", "user42-conv") == "s1"
    assert memory.get_session("s1").client_id == "user42-conv"  # type: ignore[union-attr]
    # The id is the caller's alone; no session is named by an alias's key.
    assert memory.get_alias("bob", "user42-conv") is None
    assert memory.get_alias("alice", "s1") is None


def test_an_id_is_read_as_a_client_id_a_server_id_and_with_the_callers_state_at_once(
    memory: ShortTermMemory,
) -> None:
    memory.forget_user(memory.get_user("alice"), T1)  # a caller with a generation
    memory.create_session(
        _session("s1", client_id="conv"),
        SessionCreation(memory.get_user("alice"), alias=ClientAlias("alice", "conv")),
    )
    alias, session, user = memory.get_named("conv", "alice")
    assert (alias, session, user.generation) == ("s1", None, 1)
    alias, session, user = memory.get_named("s1", "alice")
    assert alias is None and session is not None and session.session_id == "s1"
    assert (user.user_id, user.generation) == ("alice", 1)
    # Another caller's client id names nothing of theirs; the session item is read as any.
    alias, session, user = memory.get_named("conv", "bob")
    assert (alias, session, user.generation) == (None, None, 0)
    assert memory.get_named("missing", "alice")[:2] == (None, None)


def test_a_second_create_with_the_same_new_client_id_writes_nothing(
    memory: ShortTermMemory,
) -> None:
    memory.create_session(
        _session("s1"), SessionCreation(UserState("alice"), alias=ClientAlias("alice", "conv"))
    )
    with pytest.raises(Conflict):
        memory.create_session(
            _session("s2"), SessionCreation(UserState("alice"), alias=ClientAlias("alice", "conv"))
        )
    assert memory.get_session("s2") is None
    assert memory.get_alias("alice", "conv") == "s1"


def test_an_alias_moves_only_from_the_session_it_still_names(memory: ShortTermMemory) -> None:
    memory.create_session(
        _session("s1"), SessionCreation(UserState("alice"), alias=ClientAlias("alice", "conv"))
    )
    memory.create_session(
        _session("s2"),
        SessionCreation(UserState("alice"), alias=ClientAlias("alice", "conv", "s1")),
    )
    assert memory.get_alias("alice", "conv") == "s2"
    with pytest.raises(Conflict):  # a request that read s1 lost the race
        memory.create_session(
            _session("s3"),
            SessionCreation(UserState("alice"), alias=ClientAlias("alice", "conv", "s1")),
        )
    assert memory.get_session("s3") is None
    assert memory.get_alias("alice", "conv") == "s2"


def test_a_session_being_deleted_is_never_continued(memory: ShortTermMemory) -> None:
    """A continuation's transaction checks the session it continues: a delete whose tombstone
    came after the continuation read it makes it write nothing (issue 46)."""
    memory.create_session(
        _session("s1"), SessionCreation(UserState("alice"), alias=ClientAlias("alice", "conv"))
    )
    memory.end_session("s1", T1)
    assert memory.mark_deleting("s1", T1) is True
    with pytest.raises(Conflict):
        memory.create_session(
            _session("s2", continued_from="s1", client_id="conv"),
            SessionCreation(UserState("alice"), alias=ClientAlias("alice", "conv", "s1")),
        )
    assert memory.get_session("s2") is None
    assert memory.get_alias("alice", "conv") == "s1"
    _create(memory, "s3")
    memory.end_session("s3", T1)
    _create(memory, "s4", continued_from="s3")  # one that is not being deleted: continued
    assert memory.get_session("s4").continued_from == "s3"  # type: ignore[union-attr]


def test_an_alias_is_dropped_only_while_it_names_the_purged_session(
    memory: ShortTermMemory,
) -> None:
    memory.create_session(
        _session("s1"), SessionCreation(UserState("alice"), alias=ClientAlias("alice", "conv"))
    )
    memory.create_session(
        _session("s2"),
        SessionCreation(UserState("alice"), alias=ClientAlias("alice", "conv", "s1")),
    )
    memory.drop_alias("alice", "conv", "s1")
    assert memory.get_alias("alice", "conv") == "s2"
    memory.drop_alias("alice", "conv", "s2")
    assert memory.get_alias("alice", "conv") is None
    memory.drop_alias("alice", "conv", "s2")  # already gone: nothing


def test_ending_the_previous_sessions_is_part_of_the_create(memory: ShortTermMemory) -> None:
    _create(memory, "a")
    _create(memory, "b")
    memory.end_session("b", T1)
    with pytest.raises(Conflict):  # "b" is no longer open: nothing happens
        memory.create_session(
            _session("c"), SessionCreation(UserState("alice"), end=["a", "b"], ended_at=T1)
        )
    assert memory.get_session("c") is None and memory.get_session("a").status == "OPEN"  # type: ignore[union-attr]
    memory.create_session(
        _session("c"), SessionCreation(UserState("alice"), end=["a"], ended_at=T1)
    )
    ended = memory.get_session("a")
    assert ended is not None and (ended.status, ended.ended_at) == ("ENDED", T1)


def test_listing_is_newest_first_paged_per_owner_and_shows_only_visible_sessions(
    memory: ShortTermMemory,
) -> None:
    for i in range(5):
        _create(memory, f"s{i}", started=f"2026-11-2{i}T10:00:00.000Z")
    _create(memory, "bobs", "bob")
    memory.mark_deleting("s3", T1)
    _create(memory, "importing", status=SessionStatus.IMPORTING, started="2026-11-29T10:00:00.000Z")
    seen: list[str] = []
    token = None
    while True:
        page = memory.list_sessions("alice", 2, token)
        seen += [s.session_id for s in page.items]
        token = page.next_token
        if not token:
            break
    assert seen == ["s4", "s2", "s1", "s0"]
    everything = memory.sessions_of_owner("alice", 10, None).items
    assert {s.session_id for s in everything} == {"s0", "s1", "s2", "s3", "s4", "importing"}
    first = memory.list_sessions("bob", 1, None)
    assert [s.session_id for s in first.items] == ["bobs"]


def test_a_page_token_of_another_owner_is_refused(memory: ShortTermMemory) -> None:
    for i in range(3):
        _create(memory, f"s{i}", started=f"2026-11-2{i}T10:00:00.000Z")
    token = memory.list_sessions("alice", 1, None).next_token
    assert token
    with pytest.raises(BadRequest):
        memory.list_sessions("bob", 1, token)


def test_live_sessions_are_the_owners_visible_ones(memory: ShortTermMemory) -> None:
    _create(memory, "mine")
    _create(memory, "gone")
    _create(memory, "bobs", "bob")
    memory.mark_deleting("gone", T1)
    assert memory.live_sessions("alice", ["mine", "gone", "bobs", "never"]) == {"mine"}


def test_ending_is_conditional(memory: ShortTermMemory) -> None:
    _create(memory, "s1")
    with pytest.raises(Conflict):  # active since the idle limit
        memory.end_session("s1", LATER, idle_before="2026-11-23T09:00:00.000Z")
    assert memory.end_session("s1", LATER).status == "ENDED"
    with pytest.raises(Conflict):
        memory.end_session("s1", LATER)
    with pytest.raises(SessionNotFound):
        memory.end_session("missing", LATER)
    memory.mark_deleting("s1", LATER)
    with pytest.raises(SessionNotFound):
        memory.end_session("s1", LATER)


def test_the_sweepers_index_finds_idle_open_abandoned_and_deleting_sessions(
    memory: ShortTermMemory,
) -> None:
    _create(memory, "idle")
    _create(memory, "importing", status=SessionStatus.IMPORTING)
    _create(memory, "ended")
    memory.end_session("ended", T1)
    _create(memory, "deleting")
    memory.mark_deleting("deleting", T1)

    def stale(state: str, before: str) -> set[str]:
        return {
            sid for shard in range(16) for sid in memory.stale_sessions(state, shard, before, 100)
        }

    assert stale("OPEN", LATER) == {"idle"}
    assert stale("OPEN", T0) == set()  # same bucket: not idle yet
    assert stale("IMPORTING", LATER) == {"importing"}
    assert stale("DELETING", LATER) == {"deleting"}
    memory.continue_purge("deleting", LATER)
    assert stale("DELETING", LATER) == set()  # touched: fresh again


def test_an_ended_session_stays_in_the_sweepers_index_until_consolidated_or_failed(
    memory: ShortTermMemory,
) -> None:
    """A consolidation whose stream record is lost (expired, dead-lettered, its run crashed)
    must be found again: an ENDED session is in the ENDED shards, sorted by when it ended."""
    for sid in ("done", "failed", "lost"):
        _create(memory, sid)
        memory.end_session(sid, T1)

    def stale(before: str) -> set[str]:
        return {
            sid for shard in range(16) for sid in memory.stale_sessions("ENDED", shard, before, 100)
        }

    assert stale(T0) == set()  # ended in a later bucket
    assert stale(LATER) == {"done", "failed", "lost"}
    assert {memory.oldest_stale("ENDED", shard) for shard in range(16)} - {None} == {
        schema.idle_bucket(T1)
    }
    assert memory.mark_consolidated("done", "summary", LATER)
    memory.mark_failed("failed", "model down")  # FAILED: the redrive's
    assert stale(LATER) == {"lost"}


def test_the_sweepers_index_is_read_page_by_page(memory: ShortTermMemory) -> None:
    sids = [f"s{n:02d}" for n in range(40)]
    for sid in sids:
        _create(memory, sid)
    found: list[str] = []
    for shard in range(16):
        token = None
        while True:
            page = memory.stale_page("OPEN", shard, LATER, 2, token)
            assert len(page.items) <= 2
            found += page.items
            token = page.next_token
            if token is None:
                break
    assert sorted(found) == sids  # each once, every shard to its end


def test_a_lost_consolidation_is_started_again_once_per_period(memory: ShortTermMemory) -> None:
    for sid in ("a", "b", "c"):
        _create(memory, sid)
        memory.end_session(sid, T1)
    memory.mark_consolidated("c", "summary", T1)

    assert memory.retry_consolidation(["a", "b", "c"], at=LATER, before=LATER, limit=1) == ["a"]
    # a was started again at LATER: not due again before a later `before`.
    again = memory.retry_consolidation(["a", "b", "c"], at=LATER, before=LATER, limit=5)
    assert again == ["b"]
    later = "2026-11-23T18:00:00.000Z"
    assert memory.retry_consolidation(["a", "b", "c"], at=later, before=later, limit=5) == [
        "a",
        "b",
    ]
    session = memory.get_session("a")
    assert session is not None and session.status == SessionStatus.ENDED


# --- turns ------------------------------------------------------------------------------------


def test_turns_are_numbered_and_written_with_their_session(memory: ShortTermMemory) -> None:
    session = _create(memory, "s1")
    for text in ("one", "two", "three"):
        memory.append_turn(session, _turn("s1", text), TurnWrite(50))
    stored = memory.get_session("s1")
    assert stored is not None and stored.num_turns == 3 and stored.last_active_at == T1
    assert [t.input for t in memory.all_turns("s1")] == ["one", "two", "three"]
    assert [t.turn for t in memory.recent_turns("s1", 2)] == [2, 3]
    assert [t.turn for t in memory.turns_between("s1", 1, 2)] == [2]
    assert memory.get_turn("s1", 2).input == "two"  # type: ignore[union-attr]
    # An empty range is no turns (a session without a turn asks for turns 1..0).
    assert memory.turns_between("s1", 3, 3) == memory.turns_between("s1", 1, 0) == []


def test_one_retry_at_a_time_claims_a_waiting_turn(memory: ShortTermMemory) -> None:
    def at(seconds: int) -> str:
        return f"2026-11-23T10:0{1 + seconds // 60}:{seconds % 60:02d}.000Z"  # T1 + seconds

    session = _create(memory, "s1")
    memory.append_turn(session, _turn("s1", "where is it?", pending=True), TurnWrite(50))
    assert memory.claim_answer("s1", 1, until=at(20), now=T1)
    # Held: another claim fails until it runs out; a release by someone else's claim is no-op.
    assert not memory.claim_answer("s1", 1, until=at(21), now=at(1))
    memory.release_answer("s1", 1, until=at(21))
    assert not memory.claim_answer("s1", 1, until=at(22), now=at(2))
    assert memory.claim_answer("s1", 1, until=at(50), now=at(30))  # ran out: taken over
    memory.release_answer("s1", 1, until=at(50))  # given up: the next claims at once
    assert memory.claim_answer("s1", 1, until=at(55), now=at(31))
    stored = memory.get_turn("s1", 1)
    assert stored is not None and stored.answering_until == at(55)
    # Answered, or never there: nothing to claim, nothing written.
    memory.complete_turn(replace(stored, response="here"))
    assert not memory.claim_answer("s1", 1, until=at(99), now=at(98))
    assert not memory.claim_answer("s1", 9, until=at(99), now=at(98))
    memory.release_answer("s1", 9, until=at(99))
    assert memory.get_turn("s1", 9) is None


def test_a_turn_can_name_its_session_in_the_same_write(memory: ShortTermMemory) -> None:
    session = _create(memory, "s1", auto_named=True)
    renamed = memory.append_turn(
        session, _turn("s1", "we adopt a greyhound"), TurnWrite(50, rename="Adopting a dog")
    )
    stored = memory.get_session("s1")
    assert stored is not None and stored.num_turns == 1
    assert (stored.name, stored.auto_named, stored.titled) == ("Adopting a dog", False, True)
    assert (renamed.name, renamed.auto_named, renamed.titled) == ("Adopting a dog", False, True)
    memory.append_turn(renamed, _turn("s1", "more"), TurnWrite(50))
    assert memory.get_session("s1").name == "Adopting a dog"  # type: ignore[union-attr]


def test_a_forgotten_summary_is_marked_on_its_session_for_good(memory: ShortTermMemory) -> None:
    _create(memory, "s1")
    assert memory.get_session("s1").summary_forgotten is False  # type: ignore[union-attr]
    memory.forget_summary("s1")
    assert memory.get_session("s1").summary_forgotten is True  # type: ignore[union-attr]
    memory.forget_summary("missing")  # a session gone meanwhile: nothing to mark, no error
    assert memory.get_session("missing") is None


def test_forgotten_facts_are_added_to_their_session_for_good(memory: ShortTermMemory) -> None:
    _create(memory, "s1")
    assert memory.get_session("s1").forgotten_facts == frozenset()  # type: ignore[union-attr]
    memory.forget_facts("s1", ["aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    memory.forget_facts("s1", ["bbbbbbbbbbbb", "cccccccccccc"])
    memory.forget_facts("s1", [])
    stored = memory.get_session("s1")
    assert stored is not None
    assert stored.forgotten_facts == {"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"}
    memory.append_turn(stored, _turn("s1", "more"), TurnWrite(50))  # kept by other writes
    assert len(memory.get_session("s1").forgotten_facts) == 3  # type: ignore[union-attr]
    memory.forget_facts("missing", ["aaaaaaaaaaaa"])  # gone meanwhile: nothing marked, no error
    assert memory.get_session("missing") is None


def test_a_turn_of_a_stale_session_read_is_a_conflict_and_writes_nothing(
    memory: ShortTermMemory,
) -> None:
    session = _create(memory, "s1")
    stale = memory.get_session("s1")
    assert stale is not None
    memory.append_turn(session, _turn("s1", "first"), TurnWrite(50))
    with pytest.raises(Conflict):
        memory.append_turn(stale, _turn("s1", "racing"), TurnWrite(50))
    assert [t.input for t in memory.all_turns("s1")] == ["first"]


def test_answers_go_into_open_sessions_only_and_nothing_into_a_deleted_one(
    memory: ShortTermMemory,
) -> None:
    _create(memory, "s1")
    memory.end_session("s1", T1)
    ended = memory.get_session("s1")
    assert ended is not None
    with pytest.raises(Conflict):
        memory.append_turn(ended, _turn("s1", "answered"), TurnWrite(50))
    memory.append_turn(ended, _turn("s1", "kept", pending=True), TurnWrite(50))
    memory.mark_deleting("s1", T1)
    deleting = memory.get_session("s1")
    assert deleting is not None
    with pytest.raises(Conflict):
        memory.append_turn(deleting, _turn("s1", "late", pending=True), TurnWrite(50))
    assert [t.input for t in memory.all_turns("s1")] == ["kept"]


def test_the_session_remembers_the_last_message_ids(memory: ShortTermMemory) -> None:
    session = _create(memory, "s1")
    for i in range(4):
        memory.append_turn(session, _turn("s1", f"m{i}", cmid=f"id-{i}"), TurnWrite(2))
    stored = memory.get_session("s1")
    assert stored is not None
    assert [stored.turn_of(f"id-{i}") for i in range(4)] == [None, None, 3, 4]


def test_a_pending_turn_is_completed_once(memory: ShortTermMemory) -> None:
    session = _create(memory, "s1")
    memory.append_turn(session, _turn("s1", "q", pending=True), TurnWrite(50))
    pending = memory.get_turn("s1", 1)
    assert pending is not None and pending.pending
    pending.response, pending.pending = "an answer", False
    memory.complete_turn(pending)
    done = memory.get_turn("s1", 1)
    assert done is not None and (done.response, done.pending) == ("an answer", False)
    with pytest.raises(Conflict):
        memory.complete_turn(pending)


def test_a_pending_turn_completed_by_a_stopped_answer_stays_marked_stopped(
    memory: ShortTermMemory,
) -> None:
    session = _create(memory, "s1")
    memory.append_turn(session, _turn("s1", "q", pending=True), TurnWrite(50))
    pending = memory.get_turn("s1", 1)
    assert pending is not None
    memory.complete_turn(replace(pending, response="what was shown", stopped=True))
    done = memory.get_turn("s1", 1)
    assert done is not None and (done.response, done.stopped) == ("what was shown", True)


def test_stacked_messages_are_answered_in_one_conditional_write(memory: ShortTermMemory) -> None:
    session = _create(memory, "s1", auto_named=True)
    for text in ("first", "second", "third"):
        memory.append_turn(session, _turn("s1", text, pending=True), TurnWrite(50, stack=True))
    stored = memory.get_session("s1")
    assert stored is not None and stored.stack_head == 3
    answer = replace(_turn("s1", "third"), turn=3, response="one answer")
    # A head that moved since (a fourth message), or a turn already answered: nothing written.
    with pytest.raises(Conflict):
        memory.complete_stack(answer, CoveredTurns([1, 2], 2))
    memory.complete_stack(answer, CoveredTurns([1, 2], 3), "About three things")
    turns = memory.recent_turns("s1", 10)
    assert [(t.pending, t.answered_by, t.response) for t in turns] == [
        (False, 3, None),
        (False, 3, None),
        (False, None, "one answer"),
    ]
    named = memory.get_session("s1")
    assert named is not None and named.titled
    assert (named.name, named.auto_named) == ("About three things", False)
    with pytest.raises(Conflict):  # answered once
        memory.complete_stack(replace(answer, response="again"), CoveredTurns([1, 2]))
    with pytest.raises(Conflict):
        memory.complete_turn(replace(turns[0], response="late", pending=True))
    assert memory.recent_turns("s1", 10) == turns


def test_a_stack_is_answered_only_in_an_open_session(memory: ShortTermMemory) -> None:
    session = _create(memory, "s1")
    memory.append_turn(session, _turn("s1", "first", pending=True), TurnWrite(50, stack=True))
    memory.end_session("s1", LATER)
    with pytest.raises(Conflict):  # a stacked message is written into an open session only
        memory.append_turn(session, _turn("s1", "second", pending=True), TurnWrite(50, stack=True))
    answer = replace(_turn("s1", "first"), turn=1, response="too late")
    with pytest.raises(Conflict):
        memory.complete_stack(answer, CoveredTurns())
    [turn] = memory.recent_turns("s1", 10)
    assert (turn.pending, turn.response) == (True, None)


def test_a_clients_turn_waits_for_its_response_in_an_open_session_only(
    memory: ShortTermMemory,
) -> None:
    session = _create(memory, "s1")
    waiting = replace(_turn("s1", "asked", pending=True), origin=TurnOrigin.CLIENT)
    waiting.metadata = {"agent": "planner", "step": 3, "ok": True, "cost": 0.25}
    memory.append_turn(session, waiting, TurnWrite(50, at=LATER))
    stored = memory.get_turn("s1", 1)
    assert stored is not None and stored.pending and stored.origin == TurnOrigin.CLIENT
    assert stored.metadata == {"agent": "planner", "step": 3, "ok": True, "cost": 0.25}
    # The session's activity is the server's time, not the turn's (a client's, maybe old).
    after = memory.get_session("s1")
    assert after is not None and (after.last_active_at, stored.created_at) == (LATER, T1)
    memory.end_session("s1", LATER)
    ended = memory.get_session("s1")
    assert ended is not None
    # Unlike a chat turn whose model call failed, a client's unanswered turn is not kept in
    # an ended session: nothing would ever answer it.
    late = replace(_turn("s1", "late", pending=True), origin=TurnOrigin.CLIENT)
    with pytest.raises(Conflict):
        memory.append_turn(ended, late, TurnWrite(50))
    assert [t.input for t in memory.all_turns("s1")] == ["asked"]


def test_a_turns_metadata_and_feedback_are_set_on_the_stored_turn_only(
    memory: ShortTermMemory,
) -> None:
    session = _create(memory, "s1")
    memory.append_turn(session, _turn("s1", "q"), TurnWrite(50))
    memory.update_turn("s1", 1, {"feedback": {"rating": "down", "at": LATER, "comment": None}})
    memory.update_turn("s1", 1, {"metadata": {"channel": "web"}})
    turn = memory.get_turn("s1", 1)
    assert turn is not None and turn.feedback is not None
    assert (turn.feedback.rating, turn.feedback.at, turn.feedback.comment) == ("down", LATER, None)
    assert (turn.metadata, turn.response) == ({"channel": "web"}, "re: q")
    with pytest.raises(TurnNotFound):
        memory.update_turn("s1", 2, {"metadata": {}})
    assert memory.get_turn("s1", 2) is None


def test_turns_are_listed_both_ways_across_pages(memory: ShortTermMemory) -> None:
    session = _create(memory, "s1")
    for i in range(5):
        memory.append_turn(session, _turn("s1", f"m{i}"), TurnWrite(50))
    for ascending, expected in ((True, [1, 2, 3, 4, 5]), (False, [5, 4, 3, 2, 1])):
        seen: list[int] = []
        token = None
        while True:
            page = memory.list_turns("s1", 2, token, ascending)
            seen += [t.turn for t in page.items]
            token = page.next_token
            if not token:
                break
        assert seen == expected


# --- deletion and imports ---------------------------------------------------------------------


def test_a_tombstone_is_written_once_and_removes_only_a_deleting_session(
    memory: ShortTermMemory,
) -> None:
    session = _create(memory, "s1")
    for i in range(7):
        memory.append_turn(session, _turn("s1", f"m{i}"), TurnWrite(50))
    memory.remove_session("s1")  # not deleting: nothing happens
    assert memory.get_session("s1") is not None
    assert memory.mark_deleting("s1", T1) is True
    assert memory.mark_deleting("s1", T1) is False
    assert memory.mark_deleting("never", T1) is False
    assert memory.delete_turns("s1", 5) == 5
    assert [t.turn for t in memory.all_turns("s1")] == [6, 7]
    assert memory.delete_turns("s1", 5) == 2 and memory.delete_turns("s1", 5) == 0
    memory.remove_session("s1")
    assert memory.get_session("s1") is None


def test_an_import_becomes_visible_in_one_conditional_write(memory: ShortTermMemory) -> None:
    _create(memory, "imp", status=SessionStatus.IMPORTING)
    memory.put_turns([Turn("imp", n, "alice", f"m{n}", None, created_at=T0) for n in (1, 2)])
    assert memory.live_sessions("alice", ["imp"]) == set()
    memory.finish_import("imp", T1)
    opened = memory.get_session("imp")
    assert opened is not None and (opened.status, opened.last_active_at) == ("OPEN", T1)
    with pytest.raises(Conflict):
        memory.finish_import("imp", T1)


def test_consolidation_marks_are_conditional(memory: ShortTermMemory) -> None:
    _create(memory, "s1")
    assert memory.mark_consolidated("s1", "sum", T1) is False  # still open
    memory.end_session("s1", T1)
    assert memory.record_consolidation_failure("s1", "boom") == 1
    memory.mark_failed("s1", "boom")
    assert memory.failed_sessions() == ["s1"]
    memory.reset_consolidation("s1")
    assert memory.mark_consolidated("s1", "sum", T1) is True
    stored = memory.get_session("s1")
    assert stored is not None and (stored.status, stored.summary) == ("CONSOLIDATED", "sum")
    memory.mark_deleting("s1", T1)
    assert memory.record_consolidation_failure("s1", "late") is None


def test_the_running_summary_advances_only_from_what_was_read(memory: ShortTermMemory) -> None:
    _create(memory, "s1")
    assert memory.update_running_summary("s1", "first", 6, expected_through=0) is True
    assert memory.update_running_summary("s1", "stale", 8, expected_through=0) is False
    memory.mark_deleting("s1", T1)
    assert memory.update_running_summary("s1", "late", 9, expected_through=6) is False
    stored = memory.get_session("s1")
    assert stored is not None and (stored.running_summary, stored.summary_through_turn) == (
        "first",
        6,
    )


# --- forgetting -------------------------------------------------------------------------------


def test_a_forget_moves_the_caller_to_a_new_owner_key_and_queues_the_old_one(
    memory: ShortTermMemory,
) -> None:
    user = memory.get_user("alice")
    after = memory.forget_user(user, T1)
    assert (after.generation, after.owner) == (1, "alice#1")
    assert [(p.owner, p.state) for p in after.purges] == [("alice", "PENDING")]
    assert memory.pending_user_purges() == ["alice"]
    with pytest.raises(Conflict):
        memory.forget_user(user, T1)  # a stale read of the caller


def test_purge_progress_is_saved_only_over_the_round_it_read(memory: ShortTermMemory) -> None:
    user = memory.forget_user(memory.get_user("alice"), T1)
    marked = [PurgeEntry("alice", T1, PurgeState.MARKED)]
    assert memory.save_purges(user, marked, handover=False) is True
    assert memory.save_purges(user, [], handover=False) is False  # the round moved on
    assert memory.pending_user_purges() == []
    assert [p.state for p in memory.get_user("alice").purges] == ["MARKED"]


def test_a_consolidation_checkpoint_is_taken_once_per_round_and_cleared_at_the_end(
    memory: ShortTermMemory,
) -> None:
    _create(memory, "s1")
    assert memory.checkpoint_consolidation("s1", expected_round=0, cursor=5, summary="x") is False
    memory.end_session("s1", T1)  # only an ended (or failed) session is consolidated
    assert memory.checkpoint_consolidation("s1", expected_round=0, cursor=5, summary="x") is True
    assert memory.checkpoint_consolidation("s1", expected_round=0, cursor=9, summary="y") is False
    stored = memory.get_session("s1")
    assert stored is not None
    assert (stored.consolidation_summary, stored.consolidation_cursor) == ("x", 5)
    assert stored.consolidation_round == 1
    assert memory.mark_consolidated("s1", "x", T1) is True
    done = memory.get_session("s1")
    assert (
        done is not None and done.consolidation_summary is None and done.consolidation_cursor == 0
    )


# --- records ----------------------------------------------------------------------------------


def _record(rid: str, owner: str = "alice", **kw: Any) -> MemoryRecord:
    return MemoryRecord(
        rid, owner, kw.pop("type", RecordType.FACT), kw.pop("text", f"text of {rid}"), T0, T0,
        RecordOrigin.EXTRACTED,
        provenance=[Provenance("s1", 3, T0)], **kw,
    )  # fmt: skip


def test_a_record_is_written_once_and_reads_back(memory: ShortTermMemory) -> None:
    record = _record("2026-01-01-a", subject="residence")
    assert memory.put_record(record) is True
    assert memory.put_record(record) is False  # an extraction retried: nothing changes
    found = memory.get_record("alice", "2026-01-01-a")
    assert found == record
    assert memory.get_record("bob", "2026-01-01-a") is None


def test_records_are_listed_newest_first_by_type_without_deleting_ones(
    memory: ShortTermMemory,
) -> None:
    for i, kind in enumerate([RecordType.FACT, RecordType.PREFERENCE, RecordType.FACT]):
        memory.put_record(_record(f"2026-01-0{i + 1}", type=kind))
    memory.put_record(_record("2026-01-09", "bob"))
    memory.put_record(_record("2026-01-05"))
    memory.mark_record_deleting("alice", "2026-01-05")
    seen: list[str] = []
    token = None
    while True:
        page = memory.list_records("alice", RecordFilter(), 2, token)
        seen += [r.record_id for r in page.items]
        token = page.next_token
        if not token:
            break
    assert seen == ["2026-01-03", "2026-01-02", "2026-01-01"]
    facts = memory.list_records("alice", RecordFilter(RecordType.FACT), 10, None).items
    assert [r.record_id for r in facts] == ["2026-01-03", "2026-01-01"]
    assert {r.record_id for r in memory.records_of_owner("alice")} == {
        "2026-01-01", "2026-01-02", "2026-01-03", "2026-01-05"
    }  # fmt: skip


def test_a_statement_is_claimed_by_one_record_at_a_time(memory: ShortTermMemory) -> None:
    """Of two writers of one statement that read it unclaimed, one writes its record and the
    claim; the other writes nothing. A claim moves only from the holder the writer read, and
    no read of the owner's records meets it."""
    key = "k" * 32
    assert memory.statement_holder("alice", key) is None
    first, second = _record("2026-01-01-a"), _record("2026-01-01-b")
    assert memory.put_stated_record(first, statement=key, holder=None) is True
    assert memory.put_stated_record(second, statement=key, holder=None) is False
    assert memory.get_record("alice", "2026-01-01-b") is None
    assert memory.statement_holder("alice", key) == "2026-01-01-a"
    assert memory.statement_holder("bob", key) is None
    assert memory.put_stated_record(second, statement=key, holder="2026-01-0x") is False
    assert memory.put_stated_record(second, statement=key, holder="2026-01-01-a") is True
    assert memory.statement_holder("alice", key) == "2026-01-01-b"
    assert memory.get_record("alice", "2026-01-01-b") == second
    assert {r.record_id for r in memory.records_of_owner("alice", include_expired=True)} == {
        "2026-01-01-a", "2026-01-01-b"
    }  # fmt: skip
    assert [r.record_id for r in memory.list_records("alice", RecordFilter(), 10, None).items] == [
        "2026-01-01-b", "2026-01-01-a"
    ]  # fmt: skip


def test_the_profile_reads_lasting_facts_and_preferences_most_important_first(
    memory: ShortTermMemory,
) -> None:
    def stated(rid: str, category: str, at: str, **kw: Any) -> MemoryRecord:
        record = _record(rid, category=category, **kw)
        record.updated_at = at
        return record

    for record in [
        stated("r-old-allergy", "health", "2026-01-01T00:00:00.000Z"),
        stated("r-hobby", "preference", "2026-03-01T00:00:00.000Z", type=RecordType.PREFERENCE),
        stated("r-job", "identity", "2026-02-01T00:00:00.000Z"),
        stated("r-new-allergy", "health", "2026-04-01T00:00:00.000Z"),
        stated("r-sister", "people", "2026-02-15T00:00:00.000Z"),
        stated("r-car", "other", "2026-05-01T00:00:00.000Z"),
        # Not the profile's: an event, a summary, an expiring record, a client's item, history,
        # another user's.
        stated("r-event", "event", "2026-06-01T00:00:00.000Z"),
        stated("r-summary", "", "2026-06-01T00:00:00.000Z", type=RecordType.SUMMARY),
        stated("r-expiring", "health", "2026-06-01T00:00:00.000Z", expires_at=4_000_000_000),
        stated("r-item", "", "2026-06-01T00:00:00.000Z", namespace=("agent", "notes")),
        stated("r-history", "health", "2026-06-01T00:00:00.000Z", status=RecordStatus.SUPERSEDED),
        stated("r-bob", "health", "2026-06-01T00:00:00.000Z", owner="bob"),
    ]:
        assert memory.put_record(record)

    found = memory.profile_records("alice", 10)

    assert [r.record_id for r in found] == [
        "r-new-allergy", "r-old-allergy", "r-sister", "r-job", "r-hobby", "r-car",
    ]  # fmt: skip
    # What the block needs reads back.
    allergy = found[0]
    assert (allergy.text, allergy.type, allergy.category) == (
        "text of r-new-allergy", RecordType.FACT, "health"
    )  # fmt: skip
    assert allergy.provenance == [Provenance("s1", 3, T0)]
    assert allergy.origin == RecordOrigin.EXTRACTED
    assert [r.record_id for r in memory.profile_records("alice", 2)] == [
        "r-new-allergy", "r-old-allergy",
    ]  # fmt: skip


def test_a_record_leaves_the_profile_when_it_is_deleted_or_superseded(
    memory: ShortTermMemory,
) -> None:
    for rid in ("r1", "r2", "r3"):
        assert memory.put_record(_record(rid, category="health"))
    assert memory.mark_record_deleting("alice", "r1")
    second = memory.get_record("alice", "r2")
    assert second is not None
    second.status, second.superseded_by = RecordStatus.SUPERSEDED, "r3"
    assert memory.save_record(second)

    assert [r.record_id for r in memory.profile_records("alice", 10)] == ["r3"]


def test_saving_a_record_is_conditional_on_its_version(memory: ShortTermMemory) -> None:
    memory.put_record(_record("r1"))
    first = memory.get_record("alice", "r1")
    second = memory.get_record("alice", "r1")
    assert first is not None and second is not None
    first.text = "corrected"
    assert memory.save_record(first) is True and first.version == 1
    second.text = "lost update"
    assert memory.save_record(second) is False
    assert memory.get_record("alice", "r1").text == "corrected"  # type: ignore[union-attr]
    assert memory.mark_record_deleting("alice", "r1") is True
    assert memory.mark_record_deleting("alice", "r1") is False
    current = memory.get_record("alice", "r1")
    assert current is not None and memory.save_record(current) is False  # deleting: final
    memory.remove_records("alice", ["r1"])
    assert memory.get_record("alice", "r1") is None


def test_a_records_namespace_and_generation_read_back_and_list_by_prefix(
    memory: ShortTermMemory,
) -> None:
    for rid, namespace in [
        ("k1", ("memories", "alice")),
        ("k2", ("memories", "alice", "deep")),
        ("k3", ("memories", "alicex")),
        ("k4", ("profile", "notes")),
        ("k5", ()),  # the profile's own
        ("k6", ("other",)),
    ]:
        memory.put_record(_record(rid, namespace=namespace, generation=f"g-{rid}"))
    found = memory.get_record("alice", "k2")
    assert found is not None and found.namespace == ("memories", "alice", "deep")
    assert found.generation == "g-k2"

    def listed(prefix: tuple[str, ...] | None) -> list[str]:
        seen: list[str] = []
        token = None
        while True:
            page = memory.list_records("alice", RecordFilter(namespace_prefix=prefix), 2, token)
            seen += [r.record_id for r in page.items]
            token = page.next_token
            if not token:
                return seen

    assert listed(("memories", "alice")) == ["k2", "k1"]  # not ("memories", "alicex")
    assert listed(("memories",)) == ["k3", "k2", "k1"]
    assert listed(("profile",)) == ["k5", "k4"]  # the profile's own records are in it
    assert listed(None) == ["k6", "k5", "k4", "k3", "k2", "k1"]
    assert listed(("nowhere",)) == []


def test_a_tombstone_is_removed_only_while_it_is_one(memory: ShortTermMemory) -> None:
    memory.put_record(_record("r1"))
    assert memory.remove_deleted_record("alice", "r1") is False  # live: kept
    assert memory.get_record("alice", "r1") is not None
    memory.mark_record_deleting("alice", "r1")
    assert memory.remove_deleted_record("alice", "r1") is True
    assert memory.get_record("alice", "r1") is None
    assert memory.remove_deleted_record("alice", "r1") is False  # gone already


def test_one_read_tells_which_sessions_and_records_are_live(memory: ShortTermMemory) -> None:
    _create(memory, "mine")
    _create(memory, "gone")
    memory.mark_deleting("gone", T1)
    memory.put_record(_record("r1"))
    memory.put_record(_record("r2"))
    memory.mark_record_deleting("alice", "r2")
    memory.put_record(_record("r3", "bob"))
    memory.put_record(_record("r4", generation="0f3a"))
    sessions, records = memory.live("alice", ["mine", "gone", "never"], ["r1", "r2", "r3", "r4"])
    # Each live record with its generation: an entry of an earlier record under the id differs.
    assert (sessions, records) == ({"mine"}, {"r1": "", "r4": "0f3a"})


# --- hand-off to a person ---------------------------------------------------------------------

LATEST = "2026-11-24T12:00:00.000Z"


def _stale_open(memory: ShortTermMemory, before: str = LATEST) -> set[str]:
    return {sid for shard in range(16) for sid in memory.stale_sessions("OPEN", shard, before, 100)}


def _queue(memory: ShortTermMemory, state: str, limit: int = 100) -> list[str]:
    seen: list[str] = []
    token = None
    while True:
        page = memory.handoff_queue(state, limit, token)
        seen += [s.session_id for s in page.items]
        token = page.next_token
        if not token:
            return seen


def _agent_turn(sid: str, text: str, agent: str = "agent-1") -> Turn:
    return Turn(sid, 0, "alice", "", text, created_at=T1, origin=TurnOrigin.AGENT, agent_id=agent)


def _for_agent(sid: str, text: str) -> Turn:
    return Turn(sid, 0, "alice", text, None, created_at=T1, for_agent=True)


def test_a_hand_off_is_one_conditional_write_that_leaves_the_sweepers_index(
    memory: ShortTermMemory,
) -> None:
    session = _create(memory, "s1")
    memory.append_turn(session, _turn("s1", "hello"), TurnWrite(50))
    assert _stale_open(memory) == {"s1"}
    handed = memory.hand_off("s1", reason="user_request", at=T1)
    assert handed is not None
    assert (handed.handoff_state, handed.handoff_reason, handed.handoff_at) == (
        "WAITING",
        "user_request",
        T1,
    )
    assert handed.handoff_turn == 1 and handed.handoff_agent is None
    assert memory.hand_off("s1", reason="user_request", at=LATER) is None  # once
    assert memory.get_session("s1").handoff_at == T1  # type: ignore[union-attr]
    # The idle sweeper neither lists nor ends it: a person may answer hours later.
    assert _stale_open(memory) == set()
    with pytest.raises(Conflict):
        memory.end_session("s1", LATEST, idle_before=LATEST)
    assert _queue(memory, "WAITING") == ["s1"] and _queue(memory, "ACTIVE") == []
    memory.end_session("s1", LATEST)  # the user may still end it: it leaves the queue
    ended = memory.get_session("s1")
    assert ended is not None and ended.status == "ENDED" and ended.handoff_state is None
    assert _queue(memory, "WAITING") == []
    assert memory.hand_off("s1", reason="user_request", at=LATEST) is None  # not open


def test_each_turn_is_written_only_in_the_hand_off_state_it_needs(memory: ShortTermMemory) -> None:
    bot = _create(memory, "bot")
    with pytest.raises(Conflict):  # no person has this session
        memory.append_turn(bot, _for_agent("bot", "for a person"), TurnWrite(50))
    with pytest.raises(Conflict):
        memory.append_turn(bot, _agent_turn("bot", "hi, I am Ana"), TurnWrite(50))
    _create(memory, "person")
    assert memory.hand_off("person", reason="user_request", at=T1) is not None
    stale = memory.get_session("person")
    assert stale is not None
    with pytest.raises(Conflict):  # the bot does not answer while a person has it
        memory.append_turn(stale, _turn("person", "answered by the bot"), TurnWrite(50))
    memory.append_turn(stale, _for_agent("person", "is anyone there?"), TurnWrite(50))
    replied = memory.append_turn(
        stale,
        _agent_turn("person", "Hi, I am Ana."),
        TurnWrite(50, handoff=Handoff("ACTIVE", agent="agent-1")),
    )
    assert (replied.handoff_state, replied.handoff_agent) == ("ACTIVE", "agent-1")
    stored = memory.get_session("person")
    assert stored is not None and (stored.num_turns, stored.handoff_state) == (2, "ACTIVE")
    assert (stored.handoff_agent, stored.handoff_turn, stored.handoff_reason) == (
        "agent-1",
        0,
        "user_request",
    )
    assert _queue(memory, "WAITING") == [] and _queue(memory, "ACTIVE") == ["person"]
    turns = memory.recent_turns("person", 5)
    assert [(t.origin, t.for_agent, t.agent_id, t.input, t.response) for t in turns] == [
        ("chat", True, None, "is anyone there?", None),
        ("agent", False, "agent-1", "", "Hi, I am Ana."),
    ]
    # A client's own turn (POST /turns) needs neither.
    client = replace(_turn("person", "stored by my agent"), origin=TurnOrigin.CLIENT)
    memory.append_turn(stored, client, TurnWrite(50))


def test_a_turn_hands_its_session_off_in_its_own_write(memory: ShortTermMemory) -> None:
    session = _create(memory, "s1")
    memory.append_turn(session, _turn("s1", "hello"), TurnWrite(50))
    change = Handoff("WAITING", reason="negative_sentiment", at=T1)
    handed = memory.append_turn(
        session, _turn("s1", "this is awful"), TurnWrite(50, handoff=change)
    )
    assert (handed.handoff_state, handed.handoff_turn) == ("WAITING", 2)
    stored = memory.get_session("s1")
    assert stored is not None
    assert (
        stored.handoff_state,
        stored.handoff_reason,
        stored.handoff_at,
        stored.handoff_turn,
    ) == (
        "WAITING",
        "negative_sentiment",
        T1,
        2,
    )
    assert _stale_open(memory) == set() and _queue(memory, "WAITING") == ["s1"]
    with pytest.raises(Conflict):  # already handed off: nothing written
        memory.append_turn(stored, _turn("s1", "again"), TurnWrite(50, handoff=change))
    assert memory.get_session("s1").num_turns == 2  # type: ignore[union-attr]


def test_a_hand_back_clears_the_state_and_returns_to_the_sweepers_index(
    memory: ShortTermMemory,
) -> None:
    session = _create(memory, "s1")
    assert memory.hand_back("s1", at=T1) is None  # not handed off
    memory.append_turn(session, _turn("s1", "hello"), TurnWrite(50))
    memory.hand_off("s1", reason="user_request", at=T1)
    back = memory.hand_back("s1", at=LATER)
    assert back is not None
    assert (back.handoff_state, back.handoff_reason, back.handoff_at, back.handoff_agent) == (
        None,
        None,
        None,
        None,
    )
    assert back.handoff_turn == 1 and back.last_active_at == LATER  # the turn it was at stays
    assert memory.hand_back("s1", at=LATER) is None
    assert _queue(memory, "WAITING") == []
    assert _stale_open(memory, LATER) == set()  # active at the hand-back...
    assert _stale_open(memory, LATEST) == {"s1"}  # ...and swept when idle after it
    memory.append_turn(back, _turn("s1", "the bot again"), TurnWrite(50))


def test_the_queue_is_longest_waiting_first_paged_and_only_open_handed_off_sessions(
    memory: ShortTermMemory,
) -> None:
    for i in range(4):
        _create(memory, f"s{i}")
        memory.hand_off(f"s{i}", reason="user_request", at=f"2026-11-23T10:0{5 - i}:00.000Z")
    _create(memory, "bots")
    memory.mark_deleting("s1", LATER)  # gone from the queue at once
    memory.end_session("s2", LATER)
    assert _queue(memory, "WAITING", limit=1) == ["s3", "s0"]
    token = memory.handoff_queue("WAITING", 1, None).next_token
    assert token
    with pytest.raises(BadRequest):  # a token of the other queue
        memory.handoff_queue("ACTIVE", 1, token)


def test_waiting_messages_become_the_agents_only_while_handed_off(memory: ShortTermMemory) -> None:
    session = _create(memory, "s1")
    for text in ("first", "second"):
        memory.append_turn(session, _turn("s1", text, pending=True), TurnWrite(50, stack=True))
    with pytest.raises(Conflict):  # with the bot: they wait for its answer
        memory.mark_for_agent("s1", [1, 2])
    memory.hand_off("s1", reason="user_request", at=T1)
    answer = replace(_turn("s1", "second"), turn=2, response="the bot, too late")
    with pytest.raises(Conflict):  # the bot's answer lost to the hand-off
        memory.complete_stack(answer, CoveredTurns([1], 2))
    memory.mark_for_agent("s1", [1, 2])
    turns = memory.recent_turns("s1", 5)
    assert [(t.pending, t.for_agent, t.response) for t in turns] == [
        (False, True, None),
        (False, True, None),
    ]
    with pytest.raises(Conflict):  # once
        memory.mark_for_agent("s1", [2])


def test_the_queue_leaves_out_sessions_of_a_user_who_forgot_everything(
    memory: ShortTermMemory,
) -> None:
    _create(memory, "alices")
    _create(memory, "bobs", "bob")
    memory.hand_off("alices", reason="user_request", at=T0)
    memory.hand_off("bobs", reason="user_request", at=T1)
    memory.forget_user(memory.get_user("alice"), LATER)  # the purge has not begun yet
    assert _queue(memory, "WAITING") == ["bobs"]


# --- records that expire (expires_at, the records table's TTL attribute) -----------------------


def test_an_expired_record_is_gone_for_every_read_from_its_expiry_on(
    memory: ShortTermMemory,
) -> None:
    """From the second a record expires no read returns it, whatever DynamoDB's TTL lag; only
    expired_record (which frees its key) still sees the item."""
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    memory.clock = lambda: now  # type: ignore[attr-defined]
    expiry = int(now.timestamp()) + 60
    assert memory.put_record(_record("2026-01-01-a", expires_at=expiry))
    assert memory.put_record(_record("2026-01-01-b"))
    assert memory.get_record("alice", "2026-01-01-a") == _record("2026-01-01-a", expires_at=expiry)
    assert memory.expired_record("alice", "2026-01-01-a") is None

    memory.clock = lambda: now + timedelta(seconds=60)  # type: ignore[attr-defined]
    assert memory.get_record("alice", "2026-01-01-a") is None
    page = memory.list_records("alice", RecordFilter(), 10, None)
    assert [r.record_id for r in page.items] == ["2026-01-01-b"]
    assert [r.record_id for r in memory.records_of_owner("alice")] == ["2026-01-01-b"]
    assert {r.record_id for r in memory.records_of_owner("alice", include_expired=True)} == {
        "2026-01-01-a",
        "2026-01-01-b",
    }
    assert set(memory.live("alice", [], ["2026-01-01-a", "2026-01-01-b"])[1]) == {"2026-01-01-b"}
    stored = memory.expired_record("alice", "2026-01-01-a")
    assert stored is not None and stored.expires_at == expiry
    assert memory.expired_record("alice", "2026-01-01-b") is None


def test_an_expired_record_is_removed_only_while_it_is_that_expired_item(
    memory: ShortTermMemory,
) -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    memory.clock = lambda: now  # type: ignore[attr-defined]
    past = int(now.timestamp()) - 1
    assert memory.put_record(_record("2026-01-01-a", expires_at=past))
    assert memory.put_record(_record("2026-01-01-b", expires_at=past + 3600))
    assert memory.remove_expired_record("alice", "2026-01-01-a", version=5) is False
    assert memory.remove_expired_record("alice", "2026-01-01-b", version=0) is False  # not yet
    assert memory.remove_expired_record("alice", "2026-01-01-a", version=0) is True
    assert memory.expired_record("alice", "2026-01-01-a") is None
    # The key is free: a new record under it is written.
    assert memory.put_record(_record("2026-01-01-a", text="again"))
    assert memory.get_record("alice", "2026-01-01-a") == _record("2026-01-01-a", text="again")
    assert memory.get_record("alice", "2026-01-01-b") is not None
