"""Open questions: what a session left unsettled becomes a record of its own at consolidation
(services/profile/extract.open_questions), a later answer settles it (services/profile/profile.py),
the next session is reminded of it until then (auto-recall), /past finds it with its session, and it
goes with its session when that is deleted."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from chatmemory.domain import MemoryRecord
from chatmemory.errors import ModelUnavailable
from chatmemory.ports import MemoryDoc, Search
from chatmemory.schema import MEMORY_INDEX, MemoryKind, RecordOrigin, RecordStatus, RecordType
from chatmemory.services.background.consolidation import ConsolidationResult
from chatmemory.services.background.forget import Purging, purge_session
from chatmemory.services.conversation import sessions
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.longterm.recall import RecallWeights, search_sessions
from chatmemory.services.profile import profile
from chatmemory.services.profile.extract import PatternExtractor
from tests.fakes import FakeEmbedder, FakeGenerator
from tests.memory_fake import InMemoryShortTermMemory
from tests.records_helpers import (
    HookedIndex,
    World,
    at,
    by_text,
    chat_world,
    consolidate,
    record_entries,
)

OPEN = RecordType.OPEN_QUESTION
TRIP = "We are going to Japan in the spring with the kids."
UNDECIDED = "We haven't decided the date of the trip yet."
SETTLED = "The date of our trip is the 3rd of April."


@pytest.fixture
def memory() -> InMemoryShortTermMemory:
    return InMemoryShortTermMemory()


@pytest.fixture
def index() -> HookedIndex:
    return HookedIndex()


def _session(
    memory: Any, when: datetime, *exchanges: tuple[str, str | None], user: str = "alice"
) -> str:
    """A session of `user` started at `when`, ended: each message with the answer it got, a
    minute apart (None: the model failed, the turn stays pending)."""
    minute = iter(range(1000))
    clock = lambda: when + timedelta(minutes=next(minute))  # noqa: E731
    session = sessions.create_session(memory, user, clock=clock)
    for text, answer in exchanges:
        model = FakeGenerator(reply=lambda _, a=answer: a or "", fail_next=int(answer is None))
        deps = ChatDeps(memory=memory, generator=model, clock=clock)
        try:
            post_message(
                deps,
                ChatPolicy(),
                Message(user_id=user, session_id=session.session_id, content=text),
            )
        except ModelUnavailable:
            assert answer is None
    sessions.end_session(memory, user, session.session_id, clock=clock)
    return session.session_id


def _consolidated(
    memory: Any, index: Any, when: datetime, *exchanges: tuple[str, str | None]
) -> tuple[str, ConsolidationResult]:
    """A session consolidated with the offline extractor."""
    sid = _session(memory, when, *exchanges)
    result = consolidate(memory, index, sid, now=when, extractor=PatternExtractor())
    assert result.outcome == "consolidated"
    return sid, result


def _records(memory: Any, user: str = "alice") -> list[MemoryRecord]:
    items, _ = profile.list_records(memory, user, record_type=None, limit=100, next_token=None)
    return items


def _open(memory: Any) -> list[MemoryRecord]:
    return [r for r in _records(memory) if r.type == OPEN]


def _docs(index: Any, owner: str = "alice") -> dict[str, MemoryDoc]:
    """The owner's entries that belong to a record, by record id, as search returns them."""
    vector = FakeEmbedder().embed(["x"])[0]
    hits = index.vector_search(Search(MEMORY_INDEX, vector, "", 1000, owner))
    return {c.doc.record_id: c.doc for c in hits if c.doc.record_id}


# --- at consolidation ---------------------------------------------------------------------------


def test_a_session_left_unsettled_keeps_an_open_question_with_its_provenance(memory, index) -> None:
    sid, result = _consolidated(memory, index, at(1), (TRIP, "Lovely!"), (UNDECIDED, "Sure."))

    assert result.concluded is False
    [question] = _open(memory)
    assert (question.text, question.subject, question.status, question.origin) == (
        UNDECIDED, "topic:date+trip", RecordStatus.ACTIVE, RecordOrigin.EXTRACTED
    )  # fmt: skip
    [where] = question.provenance
    assert (where.session_id, where.turn, where.date[:10]) == (sid, 2, "2026-01-01")
    # Its entry is its session's, as a summary's: /past ranks it with the session.
    entry = _docs(index)[question.record_id]
    assert (entry.kind, entry.session_id, entry.valid_until) == (
        MemoryKind.OPEN_QUESTION,
        sid,
        None,
    )
    # The undecided sentence is no fact; the plan before it is.
    assert [r.text for r in _records(memory) if r.type == RecordType.FACT] == [TRIP]


def test_a_last_question_the_session_ended_without_answering_is_left_open(memory, index) -> None:
    flights = "When should we book the flights to Japan?"
    _, result = _consolidated(memory, index, at(1), (TRIP, "How exciting!"), (flights, None))

    assert result.concluded is False
    assert [(q.text, q.provenance[0].turn) for q in _open(memory)] == [(flights, 2)]


def test_a_concluded_session_leaves_no_open_question_and_says_so(memory, index) -> None:
    _, result = _consolidated(
        memory,
        index,
        at(1),
        ("I work as a nurse at the children's hospital.", "That sounds rewarding."),
        ("Which shoes are best for long shifts?", "Cushioned clogs, for example."),
    )
    assert result.concluded is True
    assert _open(memory) == []


# --- settled by a later answer ------------------------------------------------------------------


def test_a_later_answer_settles_the_open_question_which_stays_as_history(memory, index) -> None:
    _consolidated(memory, index, at(1), (TRIP, "Lovely!"), (UNDECIDED, "Sure."))
    _consolidated(memory, index, at(20), (SETTLED, "Noted!"))

    [question] = _open(memory)
    answer = by_text(_records(memory), SETTLED)
    assert question.status == RecordStatus.SUPERSEDED
    assert (question.superseded_by, question.valid_until) == (answer.record_id, answer.created_at)
    assert answer.status == RecordStatus.ACTIVE
    # Its entry learns the date it was settled: recall leaves it out from then on.
    assert _docs(index)[question.record_id].valid_until == answer.created_at


def test_a_later_fact_on_the_named_subject_settles_it(memory, index) -> None:
    unsure = "I'm not sure yet whether my job at the bank will last."
    _consolidated(memory, index, at(1), (unsure, "Fingers crossed."))
    [question] = _open(memory)
    assert question.subject == "job"

    _consolidated(memory, index, at(9), ("I work as a nurse at the children's hospital.", "Ok."))
    nurse = by_text(_records(memory), "I work as a nurse at the children's hospital.")
    assert (_open(memory)[0].status, _open(memory)[0].superseded_by) == (
        RecordStatus.SUPERSEDED, nurse.record_id
    )  # fmt: skip


def test_a_later_statement_on_another_part_of_the_topic_settles_nothing(memory, index) -> None:
    _consolidated(memory, index, at(1), (TRIP, "Lovely!"), (UNDECIDED, "Sure."))
    _consolidated(memory, index, at(20), ("We booked a hotel near the station for our trip.", "Ok"))
    assert [q.status for q in _open(memory)] == [RecordStatus.ACTIVE]


def test_an_open_question_consolidated_after_its_answer_is_history_from_the_start(
    memory, index
) -> None:
    late = _session(memory, at(1), (TRIP, "Lovely!"), (UNDECIDED, "Sure."))
    _consolidated(memory, index, at(20), (SETTLED, "Noted!"))
    assert consolidate(memory, index, late, now=at(21), extractor=PatternExtractor()).outcome == (
        "consolidated"
    )
    [question] = _open(memory)
    answer = by_text(_records(memory), SETTLED)
    assert (question.status, question.superseded_by) == (RecordStatus.SUPERSEDED, answer.record_id)
    assert _docs(index)[question.record_id].valid_until == answer.created_at


def test_a_later_session_leaving_the_same_thing_open_replaces_the_older_question(
    memory, index
) -> None:
    _consolidated(memory, index, at(1), (UNDECIDED, "Sure."))
    again = "We still haven't settled the date of the trip."
    _consolidated(memory, index, at(10), (again, "No rush."))

    older, newer = by_text(_open(memory), UNDECIDED), by_text(_open(memory), again)
    assert (older.status, older.superseded_by) == (RecordStatus.SUPERSEDED, newer.record_id)
    assert newer.status == RecordStatus.ACTIVE


def test_a_statement_the_caller_makes_settles_an_open_question_too(memory, index) -> None:
    _consolidated(memory, index, at(1), (UNDECIDED, "Sure."))
    stated = profile.state_record(
        "alice", SETTLED, profile.Editing(memory, FakeEmbedder(), index, at(3)), record_type=None
    )
    assert _open(memory)[0].superseded_by == stated.record_id


# --- deleted with its session -------------------------------------------------------------------


def test_deleting_the_session_deletes_its_open_questions_even_corrected(memory, index) -> None:
    sid, _ = _consolidated(memory, index, at(1), (TRIP, "Lovely!"), (UNDECIDED, "Sure."))
    [question] = _open(memory)
    profile.correct_record(
        "alice",
        question.record_id,
        "We have not settled the dates of the trip yet.",
        profile.Editing(memory, FakeEmbedder(), index, at(2)),
    )
    assert _open(memory)[0].origin == RecordOrigin.CORRECTED

    sessions.delete_session(memory, "alice", sid)
    assert _open(memory) == []  # at once, before the purge
    assert purge_session(sid, Purging(memory, index), time_left=lambda: 60).outcome == "purged"
    assert memory.get_record("alice", question.record_id) is None
    assert question.record_id not in record_entries(index, "alice")


# --- /past --------------------------------------------------------------------------------------


def test_past_finds_the_open_question_with_its_session(memory, index) -> None:
    sid, _ = _consolidated(memory, index, at(1), (TRIP, "Lovely!"), (UNDECIDED, "Sure."))
    _consolidated(memory, index, at(3), ("My sister Ana teaches piano in Porto.", "Nice."))

    [best, *_] = search_sessions(
        "did we decide the date of the trip?",
        user_id="alice",
        embedder=FakeEmbedder(),
        index=index,
        weights=RecallWeights(),
        now=at(5),
        k=2,
        live=lambda s, r: memory.live("alice", s, r),
    )
    assert best.session_id == sid
    assert UNDECIDED in best.texts  # the open question's own entry, not only its window


# --- through the chat API: the records API and the next session's prompt -------------------------


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context)


def _world_consolidated(world: World, when: datetime, *exchanges: tuple[str, str | None]) -> str:
    sid = _session(world.memory, when, *exchanges)
    result = consolidate(world.memory, world.index, sid, now=when, extractor=PatternExtractor())
    assert result.outcome == "consolidated"
    return sid


def test_the_records_api_lists_open_questions_by_type_corrects_and_deletes_them(
    world: World,
) -> None:
    sid = _world_consolidated(world, at(1), (TRIP, "Lovely!"), (UNDECIDED, "Sure."))

    [question] = world.listed(type="open_question")
    assert (question["type"], question["text"], question["status"]) == (
        "open_question", UNDECIDED, "ACTIVE"
    )  # fmt: skip
    assert [(p["session_id"], p["turn"]) for p in question["provenance"]] == [(sid, 2)]
    assert [r["text"] for r in world.listed(type="fact")] == [TRIP]
    rid = question["record_id"]

    status, data = world.api.call(
        "PATCH", f"/memories/records/{rid}", {"text": "We have not settled the dates yet."}
    )
    assert status == 200 and data["record"]["type"] == "open_question"
    assert world.api.call("DELETE", f"/memories/records/{rid}") == (204, None)
    assert world.listed(type="open_question") == []
    world.purger.drain()
    assert rid not in record_entries(world.index, "alice")


def test_the_next_session_is_told_what_was_left_open_until_a_later_answer_settles_it(
    world: World,
) -> None:
    _world_consolidated(world, at(1), (TRIP, "Lovely!"), (UNDECIDED, "Sure."))
    [question] = world.listed(type="open_question")

    cited, memory = world.recalled("what date did we pick for the trip to Japan?")
    assert question["record_id"] in cited
    assert f"[2026-01-01, open question: not settled then] {UNDECIDED}" in memory

    _world_consolidated(world, at(20), (SETTLED, "Noted!"))
    cited, memory = world.recalled("what date did we pick for the trip to Japan?")
    assert question["record_id"] not in cited
    assert "open question" not in memory
