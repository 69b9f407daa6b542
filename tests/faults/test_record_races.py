"""Deleting a profile record, or the session it was drawn from, is final whatever runs at the same
time: a consolidation merging into the record or superseding it, a consolidation writing the
records of the session being deleted, a correction of the record, a recall in flight.

Each race is made deterministic (moto and the embedded index, in process): the index calls a
hook just before or just after a chosen write, or just after a search, and the test deletes at
that moment - with the purge running right then ("purged-meanwhile") or only at the end. After
each: nothing of what was deleted is listed, searched (q) or recalled, and after the purge its
item and its index entry are physically gone."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory.services.conversation import sessions
from chatmemory.services.profile import profile
from tests.records_helpers import (
    World,
    at,
    by_text,
    chat_world,
    consolidate,
    entries,
    facts_of,
    record_entries,
    told,
)

CATS = "We have two cats called Tom and Jerry at home"
ASK_CATS = "what are our cats Tom and Jerry called?"


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context)


def _seen(world: World, rid: str, query: str, message: str) -> list[str]:
    """Where the record still shows: listed, searched with q, recalled in an ordinary turn."""
    where = []
    if rid in [r["record_id"] for r in world.listed()]:
        where.append("listed")
    if rid in world.searched(query):
        where.append("searched")
    if rid in world.recalled(message)[0]:
        where.append("recalled")
    return where


def _physically_gone(world: World, rid: str) -> None:
    world.purger.drain()
    assert rid not in [r["record_id"] for r in world.stored_records()]
    assert rid not in record_entries(world.index, "alice")


MOMENTS = ["before-entry", "after-entry"]
PURGES = {"purged-meanwhile": True, "purged-after": False}


def _arm(world: World, moment: str, hook: Any) -> None:
    if moment == "before-entry":
        world.index.before_upsert = hook
    else:
        world.index.after_upsert = hook


# --- a consolidation merging into the record, or superseding it --------------------------------


@pytest.mark.parametrize("purge", PURGES)
@pytest.mark.parametrize("moment", MOMENTS)
def test_a_record_deleted_while_a_consolidation_merges_into_it(
    world: World, moment: str, purge: str
) -> None:
    """Failed before the fix with the purge meanwhile and the delete before the entry write:
    the merge wrote the record's entry again after its purge, and nothing ever removed it."""
    cats = world.state(CATS)["record_id"]
    sid = told(world.memory, "alice", at(40), CATS, "I love green tea in the morning")
    seen_during: list[list[str]] = []

    def delete_now() -> None:
        merged = world.memory.get_record("alice", cats)
        assert merged is not None and merged.sessions == [sid]  # the merge is saved
        assert world.api.call("DELETE", f"/memories/records/{cats}")[0] == 204
        seen_during.append(_seen(world, cats, "cats Tom and Jerry", ASK_CATS))
        if PURGES[purge]:
            world.purger.drain()

    _arm(world, moment, delete_now)
    assert consolidate(world.memory, world.index, sid, now=at(40)).outcome == "consolidated"

    assert seen_during == [[]]
    assert _seen(world, cats, "cats Tom and Jerry", ASK_CATS) == []
    _physically_gone(world, cats)
    assert "I love green tea in the morning" in [r["text"] for r in world.listed()]


@pytest.mark.parametrize("purge", PURGES)
@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("which", ["the superseded record", "the new record"])
def test_a_record_deleted_while_a_consolidation_supersedes(
    world: World, which: str, moment: str, purge: str
) -> None:
    """Failed before the fix when the purge ran before the entry write: the superseded (or the
    new) record's entry was written after its purge and stayed in the index for good."""
    lisbon = world.state("I live in Lisbon")["record_id"]
    sid = told(world.memory, "alice", at(40), "I moved to Porto")
    doomed: list[str] = []
    seen_during: list[list[str]] = []

    def delete_now() -> None:
        facts = facts_of(list(world.memory.records_of_owner("alice")))
        porto = by_text(facts, "I moved to Porto").record_id
        rid = lisbon if which == "the superseded record" else porto
        doomed.append(rid)
        assert world.api.call("DELETE", f"/memories/records/{rid}")[0] == 204
        seen_during.append(_seen(world, rid, "Lisbon Porto", "where do I live now, Porto?"))
        if PURGES[purge]:
            world.purger.drain()

    # The superseded record's entry is written first, then the new record's.
    if which == "the superseded record":
        _arm(world, moment, delete_now)
    else:
        world.index.after_upsert = lambda: _arm(world, moment, delete_now)
    assert consolidate(world.memory, world.index, sid, now=at(40)).outcome == "consolidated"

    [rid] = doomed
    assert seen_during == [[]]
    assert _seen(world, rid, "Lisbon Porto", "where do I live now, Porto?") == []
    _physically_gone(world, rid)
    # What remains is consistent: the other one is listed, as history or as the current fact.
    [other] = facts_of(world.listed())
    assert other["record_id"] != rid
    assert other["status"] == ("ACTIVE" if which == "the superseded record" else "SUPERSEDED")


# --- a session deleted while its consolidation writes records ----------------------------------


@pytest.mark.parametrize("purge", PURGES)
@pytest.mark.parametrize("delete", ["the session", "everything"])
def test_a_session_deleted_while_its_consolidation_writes_records(
    world: World, delete: str, purge: str
) -> None:
    """Failed before the fix: between the delete and the compensation (or the purge), the
    records consolidation had already written from the session - its summary first - were
    listed, searched and open to correction."""
    earlier = told(world.memory, "alice", at(1), CATS)
    assert consolidate(world.memory, world.index, earlier, now=at(1)).outcome == "consolidated"
    sid = told(world.memory, "alice", at(40), CATS, "I live in Lisbon", "I love green tea")
    seen_during: list[set[str]] = []

    def delete_now() -> None:  # after the first record entry is written (the merge into cats)
        path = f"/sessions/{sid}" if delete == "the session" else "/memories"
        assert world.api.call("DELETE", path)[0] == 204
        seen_during.append(_of_session(world, sid))
        if PURGES[purge]:
            world.purger.drain()

    world.index.after_upsert = delete_now
    outcome = consolidate(world.memory, world.index, sid, now=at(40)).outcome
    # A forgotten caller's session is still ENDED under the old owner key until the purge
    # marks it: consolidating it then is harmless (nobody reaches that key), the purge cleans.
    late_forget = delete == "everything" and not PURGES[purge]
    assert outcome == ("consolidated" if late_forget else "deleted")

    assert seen_during == [set()]
    assert _of_session(world, sid) == set()
    world.purger.drain()
    stored = world.stored_records()
    assert not [r for r in stored if sid in [p["session_id"] for p in r["provenance"]]]
    assert not [e for e in entries(world.index, "alice").values() if e["session_id"] == sid]
    if delete == "the session":
        # What the earlier session said is kept, without the deleted session's provenance.
        assert {r["text"] for r in facts_of(stored)} == {CATS}
        assert {r["record_id"] for r in stored} == set(record_entries(world.index, "alice"))
    else:
        assert stored == [] and entries(world.index, "alice") == {}


def _of_session(world: World, sid: str) -> set[str]:
    """What of the session's records the caller can still reach, and how."""
    drawn = {
        r.record_id
        for r in world.memory.records_of_owner("alice")
        if r.sessions == [sid]  # drawn only from it (the merged cats record is not)
    }
    reached = set()
    for record in world.listed():
        if record["record_id"] in drawn:
            reached.add(f"listed {record['text']}")
    for q in ("I live in Lisbon", "green tea"):
        reached |= {f"searched {rid}" for rid in world.searched(q) if rid in drawn}
    for rid in drawn:
        status, _ = world.api.call("PATCH", f"/memories/records/{rid}", {"text": "changed"})
        if status != 404:
            reached.add(f"corrected {rid}")
    cited, memory = world.recalled("did I live in Lisbon?")
    reached |= {f"recalled {rid}" for rid in cited if rid in drawn or rid == sid}
    return reached


# --- a correction racing a delete --------------------------------------------------------------


@pytest.mark.parametrize("purge", PURGES)
@pytest.mark.parametrize("moment", ["before-save", *MOMENTS])
def test_a_correction_racing_a_delete_leaves_nothing_behind(
    world: World, monkeypatch: pytest.MonkeyPatch, moment: str, purge: str
) -> None:
    """The corrected entry must not survive: the correction answers 404 and removes what it
    wrote. Failed before the fix with the delete before the save: 409 "read it again and
    retry", for a record that was gone."""
    rid = world.state(CATS)["record_id"]

    def delete_now() -> None:
        # Inside the PATCH request: the DELETE of another request, as the service runs it.
        profile.delete_record(world.memory, "alice", rid)
        if PURGES[purge]:
            world.purger.drain()

    if moment == "before-save":
        real = world.memory.save_record

        def save_record(record: Any) -> bool:
            monkeypatch.setattr(world.memory, "save_record", real)
            delete_now()
            return real(record)

        monkeypatch.setattr(world.memory, "save_record", save_record)
    else:
        _arm(world, moment, delete_now)
    status, data = world.api.call(
        "PATCH", f"/memories/records/{rid}", {"text": "We have three cats and a parrot"}
    )
    assert status == 404 and data["error"]["code"] == "record_not_found"

    assert _seen(world, rid, "cats parrot", "what are our cats and the parrot called?") == []
    assert "parrot" not in " ".join(e["text"] for e in entries(world.index, "alice").values())
    _physically_gone(world, rid)


# --- a recall in flight ------------------------------------------------------------------------


@pytest.mark.parametrize("delete", ["the record", "its session"])
def test_a_recall_in_flight_when_the_delete_returns_does_not_use_it(
    world: World, delete: str
) -> None:
    """The index answers with the record, the delete returns, then the turn goes on: its
    liveness check comes after the search, so the record is neither cited nor in the prompt."""
    sid = told(world.memory, "alice", at(1), CATS)
    assert consolidate(world.memory, world.index, sid, now=at(1)).outcome == "consolidated"
    [cats] = facts_of(world.listed())
    rid = cats["record_id"]
    assert rid in world.recalled(ASK_CATS)[0]  # what the turn would use

    def delete_now() -> None:
        assert rid in record_entries(world.index, "alice")
        if delete == "the record":
            profile.delete_record(world.memory, "alice", rid)
        else:
            sessions.delete_session(world.memory, "alice", sid)

    world.index.after_search = delete_now
    cited, memory = world.recalled(ASK_CATS)
    assert world.index.after_search is None  # the hook ran, between search and answer
    assert rid not in cited and ", fact]" not in memory
    if delete == "its session":
        assert sid not in cited and "two cats" not in memory
    else:  # the session itself stays: its transcript may still be recalled
        assert sid in cited


@pytest.mark.parametrize("delete", ["the record", "its session"])
def test_a_records_search_in_flight_when_the_delete_returns_does_not_answer_it(
    world: World, delete: str
) -> None:
    sid = told(world.memory, "alice", at(1), CATS)
    assert consolidate(world.memory, world.index, sid, now=at(1)).outcome == "consolidated"
    [cats] = facts_of(world.listed())
    rid = cats["record_id"]
    assert world.searched("cats Tom and Jerry")[0] == rid

    def delete_now() -> None:
        if delete == "the record":
            profile.delete_record(world.memory, "alice", rid)
        else:
            sessions.delete_session(world.memory, "alice", sid)

    world.index.after_search = delete_now
    assert rid not in world.searched("cats Tom and Jerry")
    assert world.index.after_search is None


# --- a session's summary record -----------------------------------------------------------------


def test_a_summary_record_deleted_between_consolidation_attempts_is_not_recalled(
    world: World,
) -> None:
    """The first attempt stores the summary record, then fails; the caller deletes that record;
    the retry indexes the session's summary again. Failed before the fix: the retry wrote the
    summary entry without the record's id, so recall used the deleted summary until the purge
    (and, the purge having removed the record, kept using it)."""
    from tests.fakes import FakeEmbedder

    sid = told(world.memory, "alice", at(1), CATS)
    flaky = FakeEmbedder(fail=lambda texts: len(texts) >= 3)  # the session's documents
    with pytest.raises(Exception, match="embedder is down"):
        consolidate(world.memory, world.index, sid, now=at(1), embedder=flaky, extract=False)
    [summary] = world.listed(type="summary")
    assert world.api.call("DELETE", f"/memories/records/{summary['record_id']}")[0] == 204

    assert consolidate(world.memory, world.index, sid, now=at(1), extract=False).outcome == (
        "consolidated"
    )
    # The deletion is marked on the session: the retry does not index the summary again.
    assert f"{sid}#summary" not in entries(world.index, "alice")
    cited, memory = world.recalled(ASK_CATS)
    assert ", summary]" not in memory
    world.purger.drain()
    assert f"{sid}#summary" not in entries(world.index, "alice")
    assert world.listed(type="summary") == []


# --- /past and GET /memories, consolidation indexing, a retried consolidation ---------------------


def test_a_deleted_summary_record_is_not_quoted_by_past_or_memories_before_its_purge(
    world: World,
) -> None:
    sid = told(world.memory, "alice", at(1), CATS)
    assert consolidate(world.memory, world.index, sid, now=at(1)).outcome == "consolidated"
    [summary] = world.listed(type="summary")
    rid = summary["record_id"]
    status, _ = world.api.call(
        "PATCH", f"/memories/records/{rid}", {"text": "We talked about our two pets"}
    )
    assert status == 200
    assert world.api.call("DELETE", f"/memories/records/{rid}")[0] == 204

    status, found = world.api.call("GET", "/memories", query={"q": "our two pets"})
    assert status == 200
    snippets = [s for m in found["memories"] for s in m["snippets"]]
    assert "We talked about our two pets" not in snippets


def test_a_summary_record_deleted_and_purged_while_consolidation_indexes_leaves_no_entry(
    world: World,
) -> None:
    sid = told(world.memory, "alice", at(1), CATS)

    def delete_now() -> None:  # just before the session's documents are written
        [summary] = world.listed(type="summary")
        assert world.api.call("DELETE", f"/memories/records/{summary['record_id']}")[0] == 204
        world.purger.drain()

    world.index.before_upsert = delete_now
    assert consolidate(world.memory, world.index, sid, now=at(1), extract=False).outcome == (
        "consolidated"
    )
    assert world.listed(type="summary") == []
    assert f"{sid}#summary" not in entries(world.index, "alice")


def test_a_summary_record_deleted_and_purged_between_attempts_is_not_written_again(
    world: World,
) -> None:
    from tests.fakes import FakeEmbedder

    sid = told(world.memory, "alice", at(1), CATS)
    flaky = FakeEmbedder(fail=lambda texts: len(texts) >= 3)
    with pytest.raises(Exception, match="embedder is down"):
        consolidate(world.memory, world.index, sid, now=at(1), embedder=flaky, extract=False)
    [summary] = world.listed(type="summary")
    assert world.api.call("DELETE", f"/memories/records/{summary['record_id']}")[0] == 204
    world.purger.drain()

    assert consolidate(world.memory, world.index, sid, now=at(1), extract=False).outcome == (
        "consolidated"
    )
    assert world.listed(type="summary") == []


# --- upserts of one client key ------------------------------------------------------------------


def test_two_upserts_of_one_record_id_create_it_once_and_each_text_is_applied(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed first: both requests found no record "home"; the one whose write came second
    found the other's record there and answered 201 with the other request's text (its own
    was lost), as if it had created it."""
    memory = world.memory
    real = memory.put_record
    raced: list[tuple[Any, bool]] = []

    def the_other_upsert_first(record: Any) -> bool:
        monkeypatch.setattr(memory, "put_record", real)
        raced.append(
            profile.put_keyed_record(
                "alice",
                "home",
                "I live in Porto",
                profile.Editing(memory, world.deps.embedder, world.index, world.deps.clock()),
                record_type=None,
            )
        )
        return real(record)

    monkeypatch.setattr(memory, "put_record", the_other_upsert_first)
    status, data = world.api.call(
        "POST", "/memories/records", {"text": "I live in Lisbon", "record_id": "home"}
    )
    [(other, created)] = raced
    assert created and other.text == "I live in Porto"
    # This request came second: it replaced the text (200), as it would have one after the other.
    assert (status, data["record"]["text"]) == (200, "I live in Lisbon"), data
    status, data = world.api.call("GET", "/memories/records/home")
    assert data["record"]["text"] == "I live in Lisbon"
    assert [r["record_id"] for r in world.listed()].count("home") == 1


# --- identical statements at once -----------------------------------------------------------------


def _active(world: World, text: str) -> list[str]:
    return [r["record_id"] for r in world.listed() if r["text"] == text and r["status"] == "ACTIVE"]


def test_a_statement_made_while_the_same_words_are_written_answers_that_record(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (issue 42): both statements read the caller's records before either was
    written, found no duplicate, and each wrote a record: two ACTIVE records of one statement."""
    memory = world.memory
    real = memory.records_of_owner
    others: list[dict[str, Any]] = []

    def the_same_words_stated_now(owner: str, **kw: Any) -> Any:
        read = list(real(owner, **kw))  # this request has read: no duplicate yet
        monkeypatch.setattr(memory, "records_of_owner", real)
        others.append(world.state("I play the cello on Sundays"))
        return iter(read)

    monkeypatch.setattr(memory, "records_of_owner", the_same_words_stated_now)
    mine = world.state("I play the cello on Sundays")
    [other] = others
    assert mine["record_id"] == other["record_id"]
    assert _active(world, "I play the cello on Sundays") == [other["record_id"]]


def test_a_statement_that_superseded_before_the_same_words_were_written_hands_it_over(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first statement made "I live in Lisbon" history before the same words, stated at
    once, wrote their record: it answers that record, which is what Lisbon is history of."""
    lisbon = world.state("I live in Lisbon")["record_id"]
    memory = world.memory
    real = memory.save_record
    others: list[dict[str, Any]] = []

    def the_same_words_written_now(record: Any) -> bool:
        saved = real(record)
        if saved and record.record_id == lisbon:
            monkeypatch.setattr(memory, "save_record", real)
            others.append(world.state("I live in Porto"))
        return saved

    monkeypatch.setattr(memory, "save_record", the_same_words_written_now)
    mine = world.state("I live in Porto")
    [other] = others
    assert mine["record_id"] == other["record_id"]
    assert _active(world, "I live in Porto") == [other["record_id"]]
    old = world.api.call("GET", f"/memories/records/{lisbon}")[1]["record"]
    assert (old["status"], old["superseded_by"]) == ("SUPERSEDED", other["record_id"])
    [entry] = [e for e in record_entries(world.index, "alice").values() if "Lisbon" in e["text"]]
    assert entry["valid_until"]  # recall presents it as history
