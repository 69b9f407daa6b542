"""The records API (GET/POST /memories/records, PATCH/DELETE /memories/records/{id}) and the chat
command /remember, through the chat Lambda on moto with the embedded index."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from chatmemory.adapters.dynamodb.tokens import encode_token
from chatmemory.errors import ModelUnavailable
from chatmemory.schema import MAX_RECORD_CHARS
from chatmemory.services.conversation.chat import NO_LONG_TERM_MEMORY
from tests.fakes import FakeEmbedder
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
TEA = "I love green tea in the morning"


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context)


def _consolidated(world: World, when: Any, *texts: str, user: str = "alice") -> str:
    sid = told(world.memory, user, when, *texts)
    assert consolidate(world.memory, world.index, sid, now=when).outcome == "consolidated"
    return sid


# --- list and search ----------------------------------------------------------------------------


def test_records_are_listed_newest_first_by_type_and_page_by_page(world: World) -> None:
    sid = _consolidated(world, at(1), "I live in Lisbon", "I moved to Porto")
    stated = [
        world.state(text)
        for text in (TEA, CATS, "I work as a nurse at Santa Maria", "I hate loud music")
    ]
    everything = world.listed()
    assert [r["record_id"] for r in everything[:4]] == [r["record_id"] for r in reversed(stated)]
    assert len(everything) == 7  # and Lisbon, Porto, the session's summary

    preferences = world.listed(type="preference")
    assert [r["text"] for r in preferences] == ["I hate loud music", TEA]
    [summary] = world.listed(type="summary")
    assert summary["provenance"] == [
        {"session_id": sid, "turn": 1, "date": summary["provenance"][0]["date"]}
    ]
    lisbon = by_text(world.listed(type="fact"), "I live in Lisbon")
    porto = by_text(world.listed(type="fact"), "I moved to Porto")
    assert (lisbon["status"], lisbon["superseded_by"]) == ("SUPERSEDED", porto["record_id"])
    assert lisbon["valid_until"] == porto["created_at"]
    assert lisbon["provenance"][0]["session_id"] == sid

    paged = world.listed(limit="2")
    assert [r["record_id"] for r in paged] == [r["record_id"] for r in everything]


def test_q_finds_records_by_meaning_and_words_checked_live(world: World) -> None:
    tea, cats = world.state(TEA), world.state(CATS)
    world.state("I work as a nurse at Santa Maria")
    assert world.searched("green tea")[0] == tea["record_id"]
    assert world.searched("what are the cats called")[0] == cats["record_id"]
    assert world.searched("tea", type="preference") == [tea["record_id"]]
    assert len(world.searched("anything", limit="2")) == 2


@pytest.mark.parametrize(
    "query",
    [
        {"type": "opinion"},
        {"limit": "0"},
        {"limit": "101"},
        {"limit": "1.0"},
        {"next_token": "bm90IGEgdG9rZW4"},
        {"next_token": encode_token({"user_id": {"S": "alice"}, "record_id": {"S": ""}})},
        {"q": ""},
        {"q": "x" * 1001},
    ],
)
def test_bad_list_parameters_answer_400(world: World, query: dict[str, str]) -> None:
    status, data = world.api.call("GET", "/memories/records", query=query)
    assert status == 400 and data["error"]["code"] == "bad_request"


# --- create -------------------------------------------------------------------------------------


def test_a_stated_record_is_created_with_its_type_inferred_or_given(world: World) -> None:
    status, data = world.api.call("POST", "/memories/records", {"text": f"  {TEA} "})
    assert status == 201
    tea = data["record"]
    assert (tea["text"], tea["type"], tea["origin"], tea["status"]) == (
        TEA, "preference", "stated", "ACTIVE"
    )  # fmt: skip
    assert tea["provenance"] == [] and tea["superseded_by"] is None
    porto = world.state("I moved to Porto")
    assert (porto["type"], porto["subject"]) == ("fact", "residence")
    given = world.state("Dark chocolate after dinner", type="preference")
    assert (given["type"], given["subject"]) == ("preference", "")
    assert {r["record_id"] for r in world.listed()} == {
        tea["record_id"], porto["record_id"], given["record_id"]
    }  # fmt: skip


def test_a_stated_record_supersedes_and_is_recalled_in_ordinary_chat(world: World) -> None:
    lisbon = world.state("I live in Lisbon")
    porto = world.state("I moved to Porto")
    listed = {r["record_id"]: r for r in world.listed()}
    assert listed[lisbon["record_id"]]["superseded_by"] == porto["record_id"]
    cited, memory = world.recalled("where do I live now, Porto?")
    assert porto["record_id"] in cited and "I moved to Porto" in memory


@pytest.mark.parametrize(
    "raw",
    [
        "{not json",
        "[]",
        "{}",
        '{"text": ""}',
        '{"text": "   "}',
        '{"text": 5}',
        '{"text": "I like tea", "type": "summary"}',
        '{"text": "I like tea", "type": "Fact"}',
        '{"text": "I like tea", "unknown": 1}',
        json.dumps({"text": "x" * (MAX_RECORD_CHARS + 1)}),
    ],
)
def test_bad_record_bodies_answer_400_and_store_nothing(world: World, raw: str) -> None:
    status, data = world.api.call("POST", "/memories/records", raw=raw)
    assert status == 400 and data["error"]["code"] == "bad_request"
    assert world.stored_records() == []


# --- correct ------------------------------------------------------------------------------------


def test_a_correction_replaces_the_text_and_is_found_by_its_new_words(world: World) -> None:
    job = world.state("I work as a baker at Pao Quente")
    status, data = world.api.call(
        "PATCH", f"/memories/records/{job['record_id']}", {"text": "I work as a chef at Tasca"}
    )
    assert status == 200
    fixed = data["record"]
    assert (fixed["record_id"], fixed["text"], fixed["origin"]) == (
        job["record_id"], "I work as a chef at Tasca", "corrected"
    )  # fmt: skip
    assert by_text(world.listed(), "I work as a chef at Tasca")["record_id"] == job["record_id"]
    assert world.searched("chef Tasca")[0] == job["record_id"]
    assert record_entries(world.index, "alice")[job["record_id"]]["text"] == fixed["text"]
    cited, memory = world.recalled("where do I work as a chef, Tasca?")
    assert job["record_id"] in cited and "baker" not in memory

    for raw in ('{"text": ""}', '{"text": "x", "type": "fact"}', "{}"):
        status, _ = world.api.call("PATCH", f"/memories/records/{job['record_id']}", raw=raw)
        assert status == 400
    status, data = world.api.call("PATCH", "/memories/records/no-such-record", {"text": "x"})
    assert status == 404 and data["error"]["code"] == "record_not_found"


def test_an_extracted_record_corrected_through_the_api_outlives_its_session(
    world: World,
) -> None:
    sid = _consolidated(world, at(1), "I work as a baker", CATS)
    job = by_text(world.listed(), "I work as a baker")
    status, _ = world.api.call(
        "PATCH", f"/memories/records/{job['record_id']}", {"text": "I work as a baker in Porto"}
    )
    assert status == 200
    assert world.api.call("DELETE", f"/sessions/{sid}")[0] == 204
    world.purger.drain()
    [kept] = world.listed()
    assert (kept["record_id"], kept["provenance"]) == (job["record_id"], [])
    assert set(record_entries(world.index, "alice")) == {job["record_id"]}


# --- delete -------------------------------------------------------------------------------------


def test_a_deleted_record_is_gone_from_every_route_at_once_and_purged(world: World) -> None:
    cats, tea = world.state(CATS), world.state(TEA)
    rid = cats["record_id"]
    assert rid in world.recalled("what are our cats Tom and Jerry called?")[0]  # before

    assert world.api.call("DELETE", f"/memories/records/{rid}") == (204, None)
    for method, body in (("PATCH", {"text": "We have three cats"}), ("DELETE", None)):
        status, data = world.api.call(method, f"/memories/records/{rid}", body)
        assert status == 404 and data["error"]["code"] == "record_not_found"
    assert world.api.call("GET", f"/memories/records/{rid}")[0] == 404
    assert [r["record_id"] for r in world.listed()] == [tea["record_id"]]
    assert rid not in world.searched("cats Tom and Jerry")
    cited, memory = world.recalled("what are our cats Tom and Jerry called?")
    assert rid not in cited and "two cats" not in memory
    # Purged in the request (its id is free at once); the stream's purge finds nothing left.
    assert rid not in record_entries(world.index, "alice")
    world.purger.drain()
    assert rid not in record_entries(world.index, "alice")
    assert [r["record_id"] for r in world.stored_records()] == [tea["record_id"]]


def test_a_deleted_summary_record_takes_its_session_entry_along(world: World) -> None:
    sid = _consolidated(world, at(1), CATS)
    [summary] = world.listed(type="summary")
    assert f"{sid}#summary" in entries(world.index, "alice")
    assert world.api.call("DELETE", f"/memories/records/{summary['record_id']}")[0] == 204
    assert world.listed(type="summary") == []
    world.purger.drain()
    assert f"{sid}#summary" not in entries(world.index, "alice")
    assert f"{sid}#opening" in entries(world.index, "alice")  # the session itself stays
    assert world.api.call("GET", f"/sessions/{sid}")[0] == 200


def test_a_deleted_session_takes_its_records_along_at_once(world: World) -> None:
    kept = _consolidated(world, at(1), CATS)
    gone = _consolidated(world, at(5), CATS, "I live in Lisbon")
    assert len(world.listed()) == 4  # cats (both sessions), Lisbon, two summaries
    lisbon = by_text(world.listed(), "I live in Lisbon")["record_id"]
    assert world.api.call("DELETE", f"/sessions/{gone}")[0] == 204

    # Before its purge has run: nothing drawn only from it is listed, searched or recalled.
    listed = world.listed()
    assert {r["text"] for r in facts_of(listed)} == {CATS}
    # The record that stays is listed without the deleted session (its turn, its date).
    assert [p["session_id"] for p in by_text(listed, CATS)["provenance"]] == [kept]
    assert [r["provenance"][0]["session_id"] for r in world.listed(type="summary")] == [kept]
    assert lisbon not in world.searched("I live in Lisbon")
    cited, memory = world.recalled("did I live in Lisbon?")
    assert lisbon not in cited and gone not in cited and "Lisbon" not in memory

    world.purger.drain()
    stored = world.stored_records()
    assert {r["text"] for r in facts_of(stored)} == {CATS}
    assert {r["record_id"] for r in stored} == set(record_entries(world.index, "alice"))
    assert [p["session_id"] for p in by_text(world.listed(), CATS)["provenance"]] == [kept]


# --- isolation ----------------------------------------------------------------------------------


def test_another_caller_can_neither_see_nor_touch_a_record(world: World) -> None:
    cats = world.state(CATS)
    rid = cats["record_id"]
    _, alices_page = world.api.call("GET", "/memories/records", query={"limit": "1"})
    world.state(TEA)

    assert world.listed(user="mallory") == []
    assert world.searched("cats Tom and Jerry", user="mallory") == []
    assert rid not in world.recalled("what are our cats Tom and Jerry called?", user="mallory")[0]
    missing = world.api.call("PATCH", "/memories/records/no-such-record", {"text": "x"}, user="m")
    for method, body in (("PATCH", {"text": "We have no cats"}), ("DELETE", None)):
        status, data = world.api.call(method, f"/memories/records/{rid}", body, user="mallory")
        # The same answer as for a record that does not exist: nothing tells it does.
        assert status == 404 and data["error"]["code"] == missing[1]["error"]["code"]
    status, _ = world.api.call(
        "GET", "/memories/records", user="mallory", query={"next_token": alices_page["next_token"]}
    )
    assert status == 400
    assert by_text(world.listed(), CATS) == cats
    assert world.stored_records("mallory") == []


# --- without long-term memory -------------------------------------------------------------------


def test_the_records_api_without_long_term_memory(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    """Listing and deleting need only DynamoDB; what must embed or search (q, create, correct,
    /remember) answers 503 long_term_memory_unavailable, or says so in the chat, and stores
    nothing."""
    from chatmemory.domain import MemoryRecord
    from chatmemory.schema import RecordOrigin, RecordType

    world = chat_world(dynamodb, monkeypatch, lambda_context, long_term=False)
    old = MemoryRecord(
        "20260101T000000000-old", "alice", RecordType.FACT, "I live in Lisbon",
        "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", RecordOrigin.STATED,
    )  # fmt: skip
    world.memory.put_record(old)
    assert [r["record_id"] for r in world.listed()] == [old.record_id]
    for method, path, body, query in (
        ("GET", "/memories/records", None, {"q": "Lisbon"}),
        ("POST", "/memories/records", {"text": TEA}, None),
        ("PATCH", f"/memories/records/{old.record_id}", {"text": "I live in Porto"}, None),
    ):
        status, data = world.api.call(method, path, body, query=query)
        assert status == 503 and data["error"]["code"] == "long_term_memory_unavailable"
    turn = world.api.say(world.api.new_session(), f"/remember {TEA}")
    assert turn["response"] == NO_LONG_TERM_MEMORY and turn["sources"] == []
    assert [r["text"] for r in world.stored_records()] == ["I live in Lisbon"]

    assert world.api.call("DELETE", f"/memories/records/{old.record_id}")[0] == 204
    assert world.listed() == []
    world.purger.drain()
    assert world.stored_records() == []


# --- /remember ----------------------------------------------------------------------------------


def test_remember_in_chat_creates_a_record_and_cites_it(world: World) -> None:
    sid = world.api.new_session()
    turn = world.api.say(sid, "/remember I moved to Porto")
    assert turn["intent"] == "remember" and turn["response"].startswith("Noted")
    [source] = turn["sources"]
    [record] = world.listed()
    assert source["kind"] == "record" and source["id"] == record["record_id"]
    assert (record["text"], record["origin"], record["subject"]) == (
        "I moved to Porto", "stated", "residence"
    )  # fmt: skip

    # Said again: the same record is cited, none is added (failed before the fix: the turn
    # cited the id of a record that was never written).
    again = world.api.say(sid, "/remember i moved to porto!")
    assert [s["id"] for s in again["sources"]] == [record["record_id"]]
    assert [r["record_id"] for r in world.listed()] == [record["record_id"]]
    assert world.api.call("DELETE", f"/memories/records/{again['sources'][0]['id']}")[0] == 204


def test_remember_and_post_records_take_more_than_a_thousand_characters(world: World) -> None:
    """Records were limited to 1,000 characters (a LangMem memory of 1,521 crashed its graph):
    now POST /memories/records takes MAX_RECORD_CHARS and refuses one more, and /remember
    takes whatever a chat message can carry."""
    sid = world.api.new_session()
    said = "I like " + "x" * 1993
    assert world.api.say(sid, f"/remember {said}")["response"].startswith("Noted")
    most = "I like " + "y" * (MAX_RECORD_CHARS - 7)
    status, data = world.api.call("POST", "/memories/records", {"text": most + "z"})
    assert status == 400, data
    status, data = world.api.call("POST", "/memories/records", {"text": most})
    assert status == 201, data
    assert sorted(len(r["text"]) for r in world.listed()) == [2000, MAX_RECORD_CHARS]


def test_remember_of_what_a_session_said_outlives_that_session(world: World) -> None:
    sid = _consolidated(world, at(1), CATS)
    turn = world.api.say(world.api.new_session(), f"/remember {CATS}")
    [cited] = [s["id"] for s in turn["sources"]]
    assert world.api.call("DELETE", f"/sessions/{sid}")[0] == 204
    world.purger.drain()
    [kept] = world.listed()
    assert (kept["record_id"], kept["origin"], kept["provenance"]) == (cited, "stated", [])


# --- forget everything --------------------------------------------------------------------------


def test_forgetting_everything_takes_every_record_along(world: World) -> None:
    _consolidated(world, at(1), CATS, "I live in Lisbon")
    world.state(TEA)
    world.api.say(world.api.new_session(), "/remember I moved to Porto")
    assert len(world.listed()) == 5

    assert world.api.call("DELETE", "/memories")[0] == 204
    assert world.listed() == []
    assert world.searched("cats Lisbon tea Porto") == []
    cited, memory = world.recalled("what are our cats Tom and Jerry called?")
    assert cited == set() and memory == ""
    world.purger.drain()
    assert world.stored_records() == [] and entries(world.index, "alice") == {}
    # A record stated after the forget is the caller's new memory, under the new owner key.
    new = world.state("I work as a nurse at Santa Maria")
    assert [r["record_id"] for r in world.listed()] == [new["record_id"]]


# --- a deleted fact stays deleted when its session's consolidation runs again --------------------


def test_a_fact_deleted_after_a_failed_consolidation_is_not_written_again_by_its_retry(
    world: World,
) -> None:
    """The first attempt wrote the session's facts and then failed (the embedder went down on
    the windows); the caller deletes a fact; the stream's retry (or a redrive) extracts the same
    fact again and must not write it."""
    sid = told(world.memory, "alice", at(1), CATS, TEA)
    flaky = FakeEmbedder(fail=lambda texts: len(texts) >= 3)
    with pytest.raises(ModelUnavailable):
        consolidate(world.memory, world.index, sid, now=at(1), embedder=flaky)
    cats = by_text(facts_of(world.listed()), CATS)
    assert world.api.call("DELETE", f"/memories/records/{cats['record_id']}")[0] == 204
    world.purger.drain()

    assert consolidate(world.memory, world.index, sid, now=at(1)).outcome == "consolidated"
    assert [r["text"] for r in facts_of(world.listed())] == [TEA]
    assert cats["record_id"] not in record_entries(world.index, "alice")
    assert "two cats" not in world.recalled("what are our cats Tom and Jerry called?")[1]


def test_a_fact_deleted_while_the_retry_extracts_it_is_deleted_again_after_its_write(
    world: World,
) -> None:
    """The delete lands after the retry read its session (no fact forgotten yet) and before it
    writes the fact again: the retry reads the session again after its writes and marks what
    was deleted meanwhile, which the records stream's purge then removes."""
    sid = told(world.memory, "alice", at(1), CATS, TEA)
    flaky = FakeEmbedder(fail=lambda texts: len(texts) >= 3)
    with pytest.raises(ModelUnavailable):
        consolidate(world.memory, world.index, sid, now=at(1), embedder=flaky)
    cats = by_text(facts_of(world.listed()), CATS)

    def delete_meanwhile(texts: Sequence[str]) -> bool:
        if CATS in texts:  # the retry embeds the facts it is about to place
            assert world.api.call("DELETE", f"/memories/records/{cats['record_id']}")[0] == 204
        return False

    hooked = FakeEmbedder(fail=delete_meanwhile)
    assert consolidate(world.memory, world.index, sid, now=at(1), embedder=hooked).outcome == (
        "consolidated"
    )
    assert [r["text"] for r in facts_of(world.listed())] == [TEA]
    world.purger.drain()
    assert [r["text"] for r in facts_of(world.stored_records())] == [TEA]
    assert cats["record_id"] not in record_entries(world.index, "alice")


def test_a_corrected_fact_deleted_is_not_written_again_in_its_first_words(world: World) -> None:
    sid = told(world.memory, "alice", at(1), CATS, TEA)
    flaky = FakeEmbedder(fail=lambda texts: len(texts) >= 3)
    with pytest.raises(ModelUnavailable):
        consolidate(world.memory, world.index, sid, now=at(1), embedder=flaky)
    rid = by_text(facts_of(world.listed()), CATS)["record_id"]
    corrected = {"text": "We have three cats"}
    assert world.api.call("PATCH", f"/memories/records/{rid}", corrected)[0] == 200
    assert world.api.call("DELETE", f"/memories/records/{rid}")[0] == 204
    world.purger.drain()

    assert consolidate(world.memory, world.index, sid, now=at(1)).outcome == "consolidated"
    assert [r["text"] for r in facts_of(world.listed())] == [TEA]
