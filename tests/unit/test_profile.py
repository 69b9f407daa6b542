"""The caller's profile (services/profile/profile.py) on the in-memory short-term memory and the
embedded index: supersession with history, merge of duplicates, idempotent consolidation,
corrections, what each record's index entry says, and what a deleted session takes along."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chatmemory.domain import MemoryRecord, Provenance
from chatmemory.errors import LongTermMemoryUnavailable, RecordNotFound, ShortTermMemoryUnavailable
from chatmemory.ports import ExtractedFact, Search
from chatmemory.schema import MEMORY_INDEX, RecordOrigin, RecordStatus, RecordType
from chatmemory.services.background.forget import Purging, purge_session
from chatmemory.services.conversation import sessions
from chatmemory.services.longterm.recall_block import live_documents
from chatmemory.services.profile import profile
from chatmemory.services.profile.extract import PatternExtractor, classify
from tests.fakes import FakeEmbedder
from tests.memory_fake import InMemoryShortTermMemory
from tests.records_helpers import (
    HookedIndex,
    at,
    by_text,
    consolidate,
    cosine,
    entries,
    facts_of,
    record_entries,
    told,
)

CATS = "We have two cats called Tom and Jerry at home"


@pytest.fixture
def memory() -> InMemoryShortTermMemory:
    return InMemoryShortTermMemory()


@pytest.fixture
def index() -> HookedIndex:
    return HookedIndex()


def _records(memory: Any, user: str = "alice", kind: RecordType | None = None) -> list[Any]:
    items, token = profile.list_records(memory, user, record_type=kind, limit=100, next_token=None)
    assert token is None
    return items


def _facts(memory: Any, user: str = "alice") -> list[MemoryRecord]:
    return facts_of(_records(memory, user))


def _remembered(memory: Any, index: Any, user: str, when: Any, *texts: str) -> str:
    sid = told(memory, user, when, *texts)
    assert consolidate(memory, index, sid, now=when).outcome == "consolidated"
    return sid


def _extracted(memory: Any, index: Any, when: Any, *texts: str) -> None:
    """A session of alice's consolidated with the extractor local mode runs (the rules)."""
    sid = told(memory, "alice", when, *texts)
    done = consolidate(memory, index, sid, now=when, extractor=PatternExtractor())
    assert done.outcome == "consolidated"


def _search(memory: Any, index: Any, query: str, user: str = "alice") -> list[str]:
    found = profile.search_records(
        memory, user, query, record_type=None, limit=10, embedder=FakeEmbedder(), index=index
    )
    return [r.record_id for r in found]


def _recallable(memory: Any, index: Any, owner: str = "alice") -> set[str]:
    """Record ids whose index entry recall would still use (the liveness check of every turn)."""
    docs = [
        c.doc
        for c in index.vector_search(
            Search(MEMORY_INDEX, FakeEmbedder().embed(["x"])[0], "", 1000, owner)
        )
    ]
    return {d.record_id for d in live_documents(memory, owner, docs) if d.record_id}


def _delete_session(memory: Any, index: Any, sid: str, user: str = "alice") -> None:
    """DELETE /sessions/{id} and its purge."""
    sessions.delete_session(memory, user, sid)
    assert (
        purge_session(
            sid, Purging(memory, index, embedder=FakeEmbedder), time_left=lambda: 60
        ).outcome
        == "purged"
    )


# --- supersession -------------------------------------------------------------------------------


def test_moving_from_lisbon_to_porto_keeps_lisbon_as_history_until_the_porto_date(
    memory, index
) -> None:
    lisbon_session = _remembered(memory, index, "alice", at(1), "I live in Lisbon")
    porto_session = _remembered(memory, index, "alice", at(60), "I moved to Porto")

    facts = _facts(memory)
    lisbon, porto = by_text(facts, "I live in Lisbon"), by_text(facts, "I moved to Porto")
    assert [r.text for r in facts if r.status == RecordStatus.ACTIVE] == ["I moved to Porto"]
    assert (lisbon.subject, porto.subject) == ("residence", "residence")
    assert lisbon.status == RecordStatus.SUPERSEDED
    assert lisbon.superseded_by == porto.record_id
    assert lisbon.valid_until == porto.created_at and porto.created_at.startswith("2026-03-01")
    assert porto.superseded_by is None and porto.valid_until is None
    assert [p.session_id for p in lisbon.provenance] == [lisbon_session]
    assert [p.session_id for p in porto.provenance] == [porto_session]
    # The history's entry says until when it was true, so recall can date it.
    assert record_entries(index, "alice")[lisbon.record_id]["valid_until"] == porto.created_at
    assert record_entries(index, "alice")[porto.record_id]["valid_until"] is None


def test_a_birthday_said_later_replaces_the_age_said_before(memory, index) -> None:
    """Failed before: "My daughter Mia is 7." stayed beside "... turned 8" in the profile (an
    age had no subject), and so did "I'm 34." beside "I turned 35 last week."."""
    _extracted(memory, index, at(1), "My daughter Mia is 7.", "I'm 34.")
    _extracted(memory, index, at(60), "My daughter Mia turned 8 yesterday!", "I turned 35.")

    active = [r.text for r in _facts(memory) if r.status == RecordStatus.ACTIVE]
    assert sorted(active) == ["I turned 35.", "My daughter Mia turned 8 yesterday!"]


def test_someone_the_profile_names_is_the_users_in_a_later_session_by_name(memory, index) -> None:
    """Failed before: "Mia turned 8 yesterday!" in a later session was no fact (no "my": the
    rules read one session), so "My daughter Mia is 7." stayed the profile's word. A name the
    profile does not hold stays someone else's."""
    _extracted(memory, index, at(1), "My daughter Mia is 7.")
    _extracted(memory, index, at(60), "Mia turned 8 yesterday!", "Leo plays football on Sundays.")

    facts = _facts(memory)
    assert [r.text for r in facts if r.status == RecordStatus.ACTIVE] == ["Mia turned 8 yesterday!"]
    assert by_text(facts, "My daughter Mia is 7.").status == RecordStatus.SUPERSEDED


@pytest.mark.parametrize(
    ("before", "after", "active"),
    [
        # Failed before: the allergy stayed beside its correction, both in every prompt.
        (
            ["Just remember: no peanuts for me, I'm allergic."],
            ["Actually, I'm not allergic to peanuts, it's tree nuts I'm allergic to."],
            ["I'm allergic to tree nuts.", "I'm not allergic to peanuts."],
        ),
        # Failed before: a diet had no subject, so "vegetarian" stayed beside "vegan".
        (["I'm vegetarian."], ["I went vegan last month."], ["I went vegan last month."]),
        (["I'm vegan."], ["I'm not vegan anymore."], ["I'm not vegan anymore."]),
        # Failed before: smoking and drinking had no subject either.
        (
            ["I smoke about ten a day."],
            ["I quit smoking last month."],
            ["I quit smoking last month."],
        ),
        (["I drink socially."], ["I quit drinking in May."], ["I quit drinking in May."]),
    ],
)
def test_a_correction_of_an_allergy_a_diet_or_a_habit_replaces_it(
    memory, index, before: list[str], after: list[str], active: list[str]
) -> None:
    _extracted(memory, index, at(1), *before)
    _extracted(memory, index, at(60), *after)

    assert sorted(r.text for r in _facts(memory) if r.status == RecordStatus.ACTIVE) == active


def test_a_session_consolidated_late_becomes_history_at_once(memory, index) -> None:
    older = told(memory, "alice", at(1), "I live in Lisbon")
    _remembered(memory, index, "alice", at(60), "I moved to Porto")
    assert consolidate(memory, index, older, now=at(61)).outcome == "consolidated"

    facts = _facts(memory)
    lisbon, porto = by_text(facts, "I live in Lisbon"), by_text(facts, "I moved to Porto")
    assert porto.status == RecordStatus.ACTIVE and porto.superseded_by is None
    assert lisbon.status == RecordStatus.SUPERSEDED
    assert (lisbon.superseded_by, lisbon.valid_until) == (porto.record_id, porto.created_at)
    assert record_entries(index, "alice")[lisbon.record_id]["valid_until"] == porto.created_at


def test_a_name_said_as_people_introduce_themselves_is_replaced_and_a_job_taken_up_too(
    memory, index
) -> None:
    """Failed before: "Hi, I'm Zoe." had no subject (only "my name is" and "call me" had), so
    "Call me Zo" stayed beside it; "I just started as a pharmacist" had none either, so "I work
    as a nurse now" left both jobs active. And they, "I'm a chef" and "I'm British" were filed
    under "other", last in the profile block. A plain "I'm a chef" says no job ended: people
    hold two (docs/decisions.md), so it stays."""
    _extracted(
        memory,
        index,
        at(1),
        "Hi, I'm Zoe. I just started as a pharmacist at a hospital in Leeds.",
        "I'm a chef on weekends.",
        "I'm British.",
    )
    first = {r.text: (r.subject, r.category) for r in _facts(memory)}
    assert first == {
        "I'm Zoe.": ("name", "identity"),
        "I just started as a pharmacist at a hospital in Leeds.": ("job", "identity"),
        "I'm a chef on weekends.": ("", "identity"),
        "I'm British.": ("", "identity"),  # a nationality is no name
    }
    _extracted(memory, index, at(60), "Call me Zo, everyone does.", "I work as a nurse now.")
    active = {r.text for r in _facts(memory) if r.status == RecordStatus.ACTIVE}
    assert active == {
        "Call me Zo, everyone does.",
        "I work as a nurse now.",
        "I'm a chef on weekends.",
        "I'm British.",
    }


def test_a_stated_record_supersedes_an_extracted_one_about_the_same_thing(memory, index) -> None:
    _remembered(memory, index, "alice", at(1), "I live in Lisbon")
    stated = _state(memory, index, "I moved to Braga", at(90))
    lisbon = by_text(_facts(memory), "I live in Lisbon")
    assert stated.origin == RecordOrigin.STATED and stated.status == RecordStatus.ACTIVE
    assert (lisbon.status, lisbon.superseded_by) == (RecordStatus.SUPERSEDED, stated.record_id)


def test_a_stated_correction_said_as_people_say_it_supersedes_what_it_corrects(
    memory, index
) -> None:
    """Failed before: `/remember Actually I'm not allergic to shellfish anymore, I outgrew it.`
    had no subject (the opener and the clause after the comma hid the allergy), so the
    allergy stayed in the profile beside it."""
    _extracted(memory, index, at(1), "I'm allergic to shellfish.")
    stated = _state(
        memory, index, "Actually I'm not allergic to shellfish anymore, I outgrew it.", at(90)
    )
    allergy = by_text(_facts(memory), "I'm allergic to shellfish.")
    assert stated.subject == "allergy:shellfish"
    assert (allergy.status, allergy.superseded_by) == (RecordStatus.SUPERSEDED, stated.record_id)


def test_records_about_different_things_do_not_supersede_each_other(memory, index) -> None:
    _remembered(memory, index, "alice", at(1), "I live in Lisbon")
    _remembered(memory, index, "bob", at(2), "I moved to Porto")
    _remembered(memory, index, "alice", at(3), "I work as a nurse at Santa Maria")
    assert {r.status for r in _facts(memory)} == {RecordStatus.ACTIVE}
    assert {r.status for r in _facts(memory, "bob")} == {RecordStatus.ACTIVE}


# --- merge --------------------------------------------------------------------------------------


def test_the_same_words_in_two_sessions_are_one_record_with_both_provenances(memory, index) -> None:
    first = _remembered(memory, index, "alice", at(1), CATS)
    second = _remembered(
        memory, index, "alice", at(5), "we have two cats called Tom and Jerry, at home!"
    )

    [cats] = _facts(memory)
    assert cats.text == CATS
    assert [(p.session_id, p.turn) for p in cats.provenance] == [(first, 1), (second, 1)]
    assert record_entries(index, "alice")[cats.record_id]["sessions"] == [first, second]


def test_a_near_duplicate_without_a_subject_merges_by_embedding_similarity(memory, index) -> None:
    near = "We have two cats called Tom and Jerry at home now"
    assert cosine(CATS, near) >= profile.ProfilePolicy().merge_similarity
    assert classify(near)[1] == ""  # nothing in particular: no subject
    first = _remembered(memory, index, "alice", at(1), CATS)
    second = _remembered(memory, index, "alice", at(5), near)

    [cats] = _facts(memory)
    assert cats.text == CATS and cats.sessions == [first, second]


def test_a_near_duplicate_with_a_subject_supersedes_instead_of_merging(memory, index) -> None:
    old, new = "I live in Porto near the river", "I live in Porto near the river now"
    assert cosine(old, new) >= profile.ProfilePolicy().merge_similarity
    _remembered(memory, index, "alice", at(1), old)
    _remembered(memory, index, "alice", at(5), new)

    facts = _facts(memory)
    assert len(facts) == 2
    older, newer = by_text(facts, old), by_text(facts, new)
    assert (older.status, older.superseded_by) == (RecordStatus.SUPERSEDED, newer.record_id)
    assert newer.status == RecordStatus.ACTIVE


def test_different_statements_stay_apart(memory, index) -> None:
    _remembered(memory, index, "alice", at(1), CATS, "We are planning a trip to Japan in May")
    assert len(_facts(memory)) == 2


# --- idempotency --------------------------------------------------------------------------------


def _facts_of_session(memory: Any, sid: str) -> tuple[list[ExtractedFact], list[Any]]:
    from tests.records_helpers import StatementExtractor

    turns = list(memory.all_turns(sid))
    return StatementExtractor().extract(turns), turns


def test_placing_a_sessions_facts_twice_writes_nothing_twice(memory, index) -> None:
    _remembered(memory, index, "alice", at(1), "I live in Lisbon", CATS)
    sid = told(memory, "alice", at(9), "I moved to Porto", CATS, "I love green tea")
    facts, turns = _facts_of_session(memory, sid)
    session = memory.get_session(sid)

    def place() -> profile.ProfileResult:
        return profile.remember_facts(
            session, facts, turns, memory=memory, embedder=FakeEmbedder(), index=index, now=at(9)
        )

    assert place() == profile.ProfileResult(created=2, merged=1, superseded=1)
    before = (_records(memory), entries(index, "alice"))
    again = place()
    assert (again.created, again.superseded) == (0, 0)
    after = (_records(memory), entries(index, "alice"))
    assert [r.record_id for r in after[0]] == [r.record_id for r in before[0]]
    assert [len(r.provenance) for r in after[0]] == [len(r.provenance) for r in before[0]]
    assert after[1].keys() == before[1].keys()


def test_a_consolidation_retried_after_a_failure_writes_no_duplicate_records(memory, index) -> None:
    sid = told(memory, "alice", at(1), "I live in Lisbon", CATS)
    # The first attempt writes the records, then the embedder fails on the session's documents.
    flaky = FakeEmbedder(fail=lambda texts: len(texts) >= 3)
    with pytest.raises(Exception, match="embedder is down"):
        consolidate(memory, index, sid, now=at(1), embedder=flaky)
    written = [r.record_id for r in _records(memory)]
    assert len(facts_of(_records(memory))) == 2

    assert consolidate(memory, index, sid, now=at(1)).outcome == "consolidated"
    assert [r.record_id for r in _records(memory)] == written
    assert {r.record_id for r in _records(memory)} <= set(record_entries(index, "alice"))


class _DownOnce(HookedIndex):
    """Fails the first write of a record's entry, as an index timing out would."""

    failed = False

    def upsert(self, index: str, docs: Any) -> None:
        if not self.failed and any(d.doc_key.startswith("record#") for d in docs):
            self.failed = True
            raise LongTermMemoryUnavailable("index timed out")
        super().upsert(index, docs)


def test_a_retry_after_the_entry_write_failed_writes_the_entry() -> None:
    memory, index = InMemoryShortTermMemory(), _DownOnce()
    sid = told(memory, "alice", at(1), "I live in Lisbon")
    facts, turns = _facts_of_session(memory, sid)
    session = memory.get_session(sid)
    place = lambda: profile.remember_facts(  # noqa: E731
        session, facts, turns, memory=memory, embedder=FakeEmbedder(), index=index, now=at(1)
    )
    with pytest.raises(LongTermMemoryUnavailable):
        place()
    [lisbon] = _facts(memory)
    assert lisbon.record_id not in record_entries(index, "alice")  # stored, not yet findable

    place()  # the stream's retry
    assert record_entries(index, "alice")[lisbon.record_id]["text"] == "I live in Lisbon"
    assert _search(memory, index, "Lisbon") == [lisbon.record_id]


def test_a_retry_of_a_supersession_also_dates_the_history_entry() -> None:
    """Failed before the fix: the retry wrote the new record's entry only, so the superseded
    record's entry never learnt its end date and recall presented it as still true."""
    memory, index = InMemoryShortTermMemory(), _DownOnce()
    index.failed = True  # Lisbon's consolidation goes through
    _remembered(memory, index, "alice", at(1), "I live in Lisbon")
    index.failed = False  # ...Porto's first attempt loses its entry writes
    sid = told(memory, "alice", at(60), "I moved to Porto")
    facts, turns = _facts_of_session(memory, sid)
    session = memory.get_session(sid)
    place = lambda: profile.remember_facts(  # noqa: E731
        session, facts, turns, memory=memory, embedder=FakeEmbedder(), index=index, now=at(60)
    )
    with pytest.raises(LongTermMemoryUnavailable):
        place()
    place()

    facts_now = _facts(memory)
    lisbon, porto = by_text(facts_now, "I live in Lisbon"), by_text(facts_now, "I moved to Porto")
    found = record_entries(index, "alice")
    assert found[porto.record_id]["valid_until"] is None
    assert found[lisbon.record_id]["valid_until"] == porto.created_at == lisbon.valid_until


class _DiesOnPut(InMemoryShortTermMemory):
    """The process dies at the next new record's write (after the history was saved)."""

    dies = False

    def put_record(self, record: MemoryRecord) -> bool:
        if self.dies:
            self.dies = False
            raise ShortTermMemoryUnavailable("the Lambda timed out")
        return super().put_record(record)


def test_a_retry_after_dying_between_the_history_and_the_new_record_dates_the_history() -> None:
    """Failed before the fix: Lisbon was saved as history, the attempt died before Porto was
    written; the retry wrote Porto as a plain new record and Lisbon's entry never got its end
    date."""
    memory, index = _DiesOnPut(), HookedIndex()
    _remembered(memory, index, "alice", at(1), "I live in Lisbon")
    sid = told(memory, "alice", at(60), "I moved to Porto")
    facts, turns = _facts_of_session(memory, sid)
    session = memory.get_session(sid)
    place = lambda: profile.remember_facts(  # noqa: E731
        session, facts, turns, memory=memory, embedder=FakeEmbedder(), index=index, now=at(60)
    )
    memory.dies = True
    with pytest.raises(ShortTermMemoryUnavailable):
        place()
    place()

    lisbon, porto = (
        by_text(_facts(memory), "I live in Lisbon"),
        by_text(_facts(memory), "I moved to Porto"),
    )
    assert (lisbon.status, porto.status) == (RecordStatus.SUPERSEDED, RecordStatus.ACTIVE)
    assert lisbon.superseded_by == porto.record_id
    assert record_entries(index, "alice")[lisbon.record_id]["valid_until"] == porto.created_at


# --- what the caller states ---------------------------------------------------------------------


def _state(memory: Any, index: Any, text: str, when: Any = None, **kw: Any) -> MemoryRecord:
    return profile.state_record(
        "alice",
        text,
        profile.Editing(memory, FakeEmbedder(), index, when or at(30)),
        record_type=kw.pop("record_type", None),
        **kw,
    )


def test_stating_what_is_already_remembered_answers_the_record_it_merged_into(
    memory, index
) -> None:
    """Failed before the fix: the answer carried the id of a record never written (the merge
    kept the older one), so PATCH and DELETE of it answered 404 and /remember cited nothing."""
    first = _state(memory, index, CATS)
    again = _state(memory, index, CATS.upper(), when=at(31))
    assert again.record_id == first.record_id
    assert memory.get_record("alice", again.record_id) is not None
    assert len(_facts(memory)) == 1


def test_stating_an_extracted_fact_makes_it_the_callers_own(memory, index) -> None:
    """Failed before the fix: /remember of what a session said merged into the extracted
    record, which the session's deletion then took along - the caller's statement was lost."""
    sid = _remembered(memory, index, "alice", at(1), CATS)
    stated = _state(memory, index, CATS)
    assert stated.origin == RecordOrigin.STATED
    _delete_session(memory, index, sid)
    [kept] = _facts(memory)
    assert kept.record_id == stated.record_id and kept.provenance == []
    assert _search(memory, index, "cats Tom Jerry") == [kept.record_id]


# --- corrections --------------------------------------------------------------------------------


def test_a_correction_replaces_the_text_and_re_embeds_the_entry(memory, index) -> None:
    _remembered(memory, index, "alice", at(1), "I work as a baker at Pao Quente")
    [job] = _facts(memory)

    corrected = profile.correct_record(
        "alice",
        job.record_id,
        " I work as a chef at Tasca do Chico ",
        profile.Editing(memory, FakeEmbedder(), index, at(2)),
    )
    assert corrected.text == "I work as a chef at Tasca do Chico"
    assert corrected.origin == RecordOrigin.CORRECTED and corrected.updated_at != job.updated_at
    assert corrected.subject == "job" and corrected.provenance == job.provenance
    entry = record_entries(index, "alice")[job.record_id]
    assert entry["text"] == corrected.text and entry["sessions"] == []
    # Embedded again: the new words find it first, with the score of the new text.
    [best] = index.vector_search(
        Search(MEMORY_INDEX, FakeEmbedder().embed([corrected.text])[0], "", 1, "alice")
    )
    assert best.doc.record_id == job.record_id and best.vector_score == pytest.approx(1.0)
    assert _search(memory, index, "chef Tasca")[0] == job.record_id


def test_a_corrected_record_survives_the_deletion_of_its_session(memory, index) -> None:
    sid = _remembered(memory, index, "alice", at(1), "I work as a baker", CATS)
    job = by_text(_facts(memory), "I work as a baker")
    profile.correct_record(
        "alice",
        job.record_id,
        "I work as a baker at Pao Quente",
        profile.Editing(memory, FakeEmbedder(), index, at(2)),
    )
    _delete_session(memory, index, sid)

    [kept] = _records(memory)
    assert kept.record_id == job.record_id and kept.provenance == []
    assert set(record_entries(index, "alice")) == {job.record_id}
    assert _recallable(memory, index) == {job.record_id}
    assert _search(memory, index, "baker Pao Quente") == [job.record_id]


def test_a_record_being_deleted_cannot_be_corrected(memory, index) -> None:
    record = _state(memory, index, CATS)
    profile.delete_record(memory, "alice", record.record_id)
    with pytest.raises(RecordNotFound):
        profile.correct_record(
            "alice",
            record.record_id,
            "We have three cats",
            profile.Editing(memory, FakeEmbedder(), index, at(31)),
        )
    assert record_entries(index, "alice")[record.record_id]["text"] == CATS  # until the purge
    assert profile.purge_record("alice", record.record_id, memory=memory, index=index)
    assert (
        record_entries(index, "alice") == {}
        and memory.get_record("alice", record.record_id) is None
    )


def test_a_correction_losing_to_a_delete_answers_not_found(memory, index) -> None:
    """Failed before the fix: 409 "read it again and retry", of a record already deleted."""
    record = _state(memory, index, CATS)
    real = memory.save_record

    def deleted_first(changed: MemoryRecord) -> bool:
        profile.delete_record(memory, "alice", changed.record_id)
        return real(changed)

    memory.save_record = deleted_first  # type: ignore[method-assign]
    with pytest.raises(RecordNotFound):
        profile.correct_record(
            "alice",
            record.record_id,
            "We have three cats",
            profile.Editing(memory, FakeEmbedder(), index, at(31)),
        )


# --- index entries (record_document) ------------------------------------------------------------


def _record(**kw: Any) -> MemoryRecord:
    values: dict[str, Any] = {
        "record_id": "r1", "user_id": "alice", "type": RecordType.FACT, "text": "a fact",
        "created_at": "2026-01-01T10:00:00.000Z", "updated_at": "2026-01-01T10:00:00.000Z",
        "origin": RecordOrigin.EXTRACTED,
        "provenance": [
            Provenance("s1", 3, "2026-01-01T10:03:00.000Z"),
            Provenance("s2", 1, "2026-02-01T10:00:00.000Z"),
            Provenance("s1", 5, "2026-01-01T10:05:00.000Z"),
        ],
    }  # fmt: skip
    values.update(kw)
    return MemoryRecord(**values)


def test_a_summarys_entry_belongs_to_its_session() -> None:
    summary = _record(type=RecordType.SUMMARY, provenance=[Provenance("s1", 1, "2026-01-01")])
    doc = profile.record_document(summary, title="Trip planning")
    assert (doc.doc_key, doc.session_id, doc.kind, doc.title) == (
        "s1#summary", "s1", "summary", "Trip planning"
    )  # fmt: skip
    assert doc.sessions == [] and doc.record_id == "r1"


def test_an_extracted_facts_entry_lists_its_sessions_and_is_its_own() -> None:
    doc = profile.record_document(_record(valid_until="2026-03-01T00:00:00.000Z"))
    assert (doc.doc_key, doc.session_id, doc.sessions) == ("record#alice#r1", None, ["s1", "s2"])
    assert (doc.created_at, doc.turn_from) == ("2026-01-01T10:03:00.000Z", 3)
    assert doc.valid_until == "2026-03-01T00:00:00.000Z" and doc.kind == "fact"
    preference = profile.record_document(_record(type=RecordType.PREFERENCE))
    assert preference.kind == "preference" and preference.sessions == ["s1", "s2"]


@pytest.mark.parametrize("origin", [RecordOrigin.STATED, RecordOrigin.CORRECTED])
def test_what_the_caller_stated_or_corrected_lists_no_session(origin: RecordOrigin) -> None:
    doc = profile.record_document(_record(origin=origin))
    assert doc.sessions == [] and doc.session_id is None and doc.doc_key == "record#alice#r1"
    bare = profile.record_document(_record(origin=origin, provenance=[]))
    assert bare.created_at == "2026-01-01T10:00:00.000Z" and bare.turn_from is None


def test_consolidation_writes_the_entries_record_document_describes(memory, index) -> None:
    sid = _remembered(memory, index, "alice", at(1), CATS)
    summary = by_text(_records(memory, kind=RecordType.SUMMARY), memory.get_session(sid).summary)
    found = entries(index, "alice")
    assert found[f"{sid}#summary"]["record_id"] == summary.record_id
    assert found[f"{sid}#summary"]["session_id"] == sid
    [cats] = _facts(memory)
    assert found[f"record#alice#{cats.record_id}"]["sessions"] == [sid]
    assert found[f"record#alice#{cats.record_id}"]["session_id"] is None


# --- what a deleted session takes along ---------------------------------------------------------


def test_a_deleted_session_takes_the_records_drawn_only_from_it(memory, index) -> None:
    kept_session = _remembered(memory, index, "alice", at(1), CATS)
    gone = _remembered(memory, index, "alice", at(5), CATS, "I live in Lisbon")
    stated = _state(memory, index, "I love green tea")
    _delete_session(memory, index, gone)

    records = _records(memory)
    assert {r.text for r in records} == {
        CATS,
        "I love green tea",
        _summary_of(memory, kept_session),
    }
    assert by_text(records, CATS).sessions == [kept_session]
    assert by_text(records, "I love green tea").record_id == stated.record_id
    assert {e["session_id"] for e in entries(index, "alice").values()} == {kept_session, None}
    assert set(record_entries(index, "alice")) == {r.record_id for r in records}


def _summary_of(memory: Any, sid: str) -> str:
    return [r for r in _records(memory, kind=RecordType.SUMMARY) if r.sessions == [sid]][0].text


def test_records_of_a_deleted_session_are_hidden_before_its_purge_runs(memory, index) -> None:
    """Failed before the fix: between DELETE /sessions/{id} and its purge, the records drawn
    only from that session were still listed, searched and open to correction."""
    kept = _remembered(memory, index, "alice", at(1), CATS)
    gone = _remembered(memory, index, "alice", at(5), CATS, "I live in Lisbon")
    lisbon = by_text(_facts(memory), "I live in Lisbon")
    sessions.delete_session(memory, "alice", gone)  # the purge has not run yet

    listed = _records(memory)
    assert {r.text for r in listed} == {CATS, _summary_of(memory, kept)}
    assert lisbon.record_id not in _search(memory, index, "I live in Lisbon")
    assert lisbon.record_id not in _recallable(memory, index)
    for act in (
        lambda: profile.delete_record(memory, "alice", lisbon.record_id),
        lambda: profile.correct_record("alice", lisbon.record_id, "I live in Lisbon's Alfama", profile.Editing(memory, FakeEmbedder(), index, at(6))),
    ):  # fmt: skip
        with pytest.raises(RecordNotFound):
            act()
    # Listed without the deleted session; the stored record keeps it until the purge trims it.
    cats = by_text(_records(memory), CATS)
    assert cats.sessions == [kept]
    assert memory.get_record("alice", cats.record_id).sessions == [kept, gone]


class _BusyMemory(InMemoryShortTermMemory):
    """Another writer saves a record just before the next save of that record (a merge of a
    concurrent consolidation), so that save loses the version race once."""

    race: str | None = None

    def save_record(self, record: MemoryRecord) -> bool:
        if self.race == record.record_id:
            self.race = None
            other = self.get_record(record.user_id, record.record_id)
            assert other is not None
            super().save_record(replace(other, updated_at="2026-12-31T00:00:00.000Z"))
        return super().save_record(record)


def test_a_session_purge_that_loses_a_race_on_a_record_still_removes_its_provenance() -> None:
    """Failed before the fix: the lost save was ignored, the record kept the deleted session
    in its provenance, and after its other session was deleted it was never removed."""
    memory, index = _BusyMemory(), HookedIndex()
    first = _remembered(memory, index, "alice", at(1), CATS)
    second = _remembered(memory, index, "alice", at(5), CATS)
    [cats] = _facts(memory)
    memory.race = cats.record_id
    _delete_session(memory, index, first)
    assert memory.get_record("alice", cats.record_id).sessions == [second]  # type: ignore[union-attr]

    _delete_session(memory, index, second)
    assert memory.get_record("alice", cats.record_id) is None
    assert record_entries(index, "alice") == {}


def test_a_corrected_summary_goes_with_its_session(memory, index) -> None:
    """A summary's entry is its session's: a corrected summary that outlived its session was
    listed but could never be searched or recalled again (its entry went with the session).
    It now goes with the session, as its entry does."""
    sid = _remembered(memory, index, "alice", at(1), CATS)
    [summary] = _records(memory, kind=RecordType.SUMMARY)
    profile.correct_record(
        "alice",
        summary.record_id,
        "We talked about our cats",
        profile.Editing(memory, FakeEmbedder(), index, at(2)),
    )
    entry = entries(index, "alice")[f"{sid}#summary"]
    assert entry["text"] == "We talked about our cats"
    assert (entry["session_id"], entry["title"]) == (sid, memory.get_session(sid).name)
    _delete_session(memory, index, sid)
    assert _records(memory) == [] and entries(index, "alice") == {}


class _FailingEmbedder(FakeEmbedder):
    def embed(self, texts: Any) -> list[list[float]]:
        raise RuntimeError("the embedding endpoint is down")


def test_a_summary_corrected_before_a_retried_consolidation_keeps_its_words_in_the_index(
    memory, index
) -> None:
    """A consolidation that failed after its summary record was written (the page lists it),
    whose summary the caller then corrected, is retried: its summary entry, which recall and
    /past read, was written again with the summarizer's words, while the record kept the
    caller's (and search no longer ranked the record by it)."""
    sid = told(memory, "alice", at(1), CATS)
    with pytest.raises(RuntimeError):
        consolidate(memory, index, sid, now=at(1), embedder=_FailingEmbedder())
    [summary] = _records(memory, kind=RecordType.SUMMARY)
    edit = profile.Editing(memory, FakeEmbedder(), index, at(2))
    profile.correct_record("alice", summary.record_id, "We talked about our cats", edit)

    assert consolidate(memory, index, sid, now=at(3)).outcome == "consolidated"
    assert entries(index, "alice")[f"{sid}#summary"]["text"] == "We talked about our cats"
    [summary] = _records(memory, kind=RecordType.SUMMARY)
    assert summary.text == "We talked about our cats"
    assert summary.record_id in _search(memory, index, "We talked about our cats")


# --- nothing of a deleted session survives in a record drawn from another -----------------------

PIN = CATS + " 88231"


def test_a_consolidation_after_a_session_was_deleted_does_not_merge_into_its_hidden_record(
    memory, index
) -> None:
    """Found by an audit: the later session's near-duplicate merged into the deleted session's
    record (hidden until its purge), which then outlived the purge with the deleted words."""
    assert cosine(PIN, CATS) >= profile.ProfilePolicy().merge_similarity
    gone = _remembered(memory, index, "alice", at(1), PIN)
    sessions.delete_session(memory, "alice", gone)  # the purge has not run yet
    kept = _remembered(memory, index, "alice", at(5), CATS)
    assert purge_session(
        gone, Purging(memory, index, embedder=FakeEmbedder), time_left=lambda: 60
    ).outcome == ("purged")
    [cats] = _facts(memory)
    assert cats.text == CATS and cats.sessions == [kept]
    assert not any("88231" in e["text"] for e in entries(index, "alice").values())


def test_an_older_session_consolidated_after_a_newer_one_was_deleted_is_not_its_history(
    memory, index
) -> None:
    """Found by an audit: the deleted session's record (hidden) superseded the late one, which
    stayed history until the deleted session's date after the purge."""
    gone = _remembered(memory, index, "alice", at(10), "I moved to Porto")
    sessions.delete_session(memory, "alice", gone)
    late = told(memory, "alice", at(1), "I live in Lisbon")
    assert consolidate(memory, index, late, now=at(11)).outcome == "consolidated"
    assert purge_session(
        gone, Purging(memory, index, embedder=FakeEmbedder), time_left=lambda: 60
    ).outcome == ("purged")
    lisbon = by_text(_facts(memory), "I live in Lisbon")
    assert lisbon.status == RecordStatus.ACTIVE
    assert (lisbon.superseded_by, lisbon.valid_until) == (None, None)


def test_stating_a_near_duplicate_of_an_extracted_fact_keeps_the_callers_words(
    memory, index
) -> None:
    """Found by an audit: the stated record took over the session's words and, the caller's
    own, kept them after that session was deleted."""
    gone = _remembered(memory, index, "alice", at(1), PIN)
    stated = _state(memory, index, CATS)
    assert stated.text == CATS
    _delete_session(memory, index, gone)
    [kept] = _facts(memory)
    assert kept.text == CATS and kept.origin == RecordOrigin.STATED
    assert not any("88231" in e["text"] for e in entries(index, "alice").values())


def test_a_record_that_stays_is_listed_without_the_deleted_session_before_its_purge(
    memory, index
) -> None:
    """Found by an audit: until the purge, the listing still named the deleted session, its
    turn and its date in the record's provenance."""
    kept = _remembered(memory, index, "alice", at(1), CATS)
    gone = _remembered(memory, index, "alice", at(5), CATS)
    sessions.delete_session(memory, "alice", gone)  # the purge has not run yet
    [cats] = _facts(memory)
    assert cats.sessions == [kept]
    assert [r.sessions for r in profile.search_records(
        memory, "alice", "cats Tom Jerry", record_type=None, limit=10,
        embedder=FakeEmbedder(), index=index,
    ) if r.record_id == cats.record_id] == [[kept]]  # fmt: skip
    assert profile.owned_record(memory, "alice", cats.record_id).sessions == [kept]


def test_a_merged_record_holding_a_deleted_sessions_words_takes_the_words_that_stay(
    memory, index
) -> None:
    """Found by an audit: the record kept the first session's words (and date) after that
    session was deleted and purged, because a later session said something close; recall
    quoted them from its entry."""
    gone = _remembered(memory, index, "alice", at(1), PIN)
    kept = _remembered(memory, index, "alice", at(5), CATS)
    [merged] = _facts(memory)
    assert merged.text == PIN and merged.sessions == [gone, kept]  # one record, two sessions

    sessions.delete_session(memory, "alice", gone)
    # At once: nothing in the deleted session's words is listed, searched or recalled.
    assert _facts(memory) == []
    assert merged.record_id not in _search(memory, index, "cats Tom Jerry")
    assert merged.record_id not in _recallable(memory, index)

    assert purge_session(
        gone, Purging(memory, index, embedder=FakeEmbedder), time_left=lambda: 60
    ).outcome == "purged"  # fmt: skip
    [cats] = _facts(memory)
    assert (cats.record_id, cats.text, cats.sessions) == (merged.record_id, CATS, [kept])
    assert cats.created_at == cats.provenance[0].date and cats.created_at.startswith("2026-01-05")
    entry = record_entries(index, "alice")[cats.record_id]
    assert entry["text"] == CATS and entry["sessions"] == [kept]
    assert cats.record_id in _recallable(memory, index)
    assert not any("88231" in e["text"] for e in entries(index, "alice").values())


def test_a_merged_record_in_the_words_of_a_session_that_stays_stays_visible(memory, index) -> None:
    kept = _remembered(memory, index, "alice", at(1), CATS)
    gone = _remembered(memory, index, "alice", at(5), PIN)
    [merged] = _facts(memory)
    assert merged.text == CATS
    sessions.delete_session(memory, "alice", gone)
    [cats] = _facts(memory)
    assert (cats.text, cats.sessions) == (CATS, [kept])
    _purge(memory, index, gone)
    stored = memory.get_record("alice", merged.record_id)
    assert stored.sessions == [kept] and all(p.text is None for p in stored.provenance)


def test_history_a_deleted_session_ended_is_current_again_after_its_purge(memory, index) -> None:
    """Found by an audit: the record the deleted session superseded stayed history until that
    session's date, with the purged record's id, for good."""
    _remembered(memory, index, "alice", at(1), "I live in Lisbon")
    porto = _remembered(memory, index, "alice", at(60), "I moved to Porto")
    assert by_text(_facts(memory), "I live in Lisbon").status == RecordStatus.SUPERSEDED
    sessions.delete_session(memory, "alice", porto)
    _purge(memory, index, porto)
    [lisbon] = _facts(memory)
    assert lisbon.text == "I live in Lisbon" and lisbon.status == RecordStatus.ACTIVE
    assert (lisbon.superseded_by, lisbon.valid_until) == (None, None)
    assert record_entries(index, "alice")[lisbon.record_id]["valid_until"] is None


def _purge(memory: Any, index: Any, sid: str) -> None:
    assert purge_session(
        sid, Purging(memory, index, embedder=FakeEmbedder), time_left=lambda: 60
    ).outcome == "purged"  # fmt: skip


def test_a_run_that_fails_after_another_consolidated_the_session_takes_nothing_away(
    memory, index
) -> None:
    """Found by an audit: a redelivered record's run failed after a concurrent run had
    consolidated the session; counting its failure found the session no longer ENDED, took that
    for a delete and removed the session's entries and records."""
    sid = told(memory, "alice", at(1), CATS)

    def other_run_first(texts: Any) -> bool:
        assert consolidate(memory, index, sid, now=at(1)).outcome == "consolidated"
        return True  # then this run's model fails

    failing = FakeEmbedder(fail=other_run_first)
    assert consolidate(memory, index, sid, now=at(1), embedder=failing).outcome == "skipped"
    assert memory.get_session(sid).status == "CONSOLIDATED"
    assert [r.text for r in _facts(memory)] == [CATS]
    assert f"{sid}#summary" in entries(index, "alice")


def test_a_record_that_stays_is_listed_without_the_deleted_sessions_date_before_its_purge(
    memory, index
) -> None:
    """The record's date was the deleted session's (the first to say it) until the purge; and
    a consolidation merging into it meanwhile saved that date for good."""
    gone = _remembered(memory, index, "alice", at(1), CATS)
    _remembered(memory, index, "alice", at(5), CATS)
    sessions.delete_session(memory, "alice", gone)  # the purge has not run yet
    [cats] = _facts(memory)
    assert cats.created_at.startswith("2026-01-05")
    later = _remembered(memory, index, "alice", at(9), CATS)  # merges into the record
    _purge(memory, index, gone)
    [cats] = _facts(memory)
    assert cats.created_at.startswith("2026-01-05") and later in cats.sessions
