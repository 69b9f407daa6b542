"""Records that expire (POST /memories/records with ttl_seconds): through the chat Lambda on moto
with an injected clock, an expired record vanishes from every read path at its expiry, whatever
DynamoDB's TTL lag; its key is free at once; and the purge Lambda removes the index entries of
an item DynamoDB's TTL deleted (a REMOVE by the service), never those of a record created under
the same key since. DynamoDB Local (local mode) does not run TTL: the purge is tested here with
the REMOVE event DynamoDB Streams delivers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from chatmemory import schema
from chatmemory.adapters.dynamodb import serialize
from chatmemory.adapters.dynamodb.codec import record_to_item
from chatmemory.clock import iso
from chatmemory.domain import MemoryRecord
from chatmemory.schema import RecordOrigin, RecordStatus, RecordType
from chatmemory.services.profile import placing, profile
from tests.fakes import FakeEmbedder
from tests.memory_fake import InMemoryShortTermMemory
from tests.records_helpers import HookedIndex, World, at, chat_world, entries, record_entries


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    world = chat_world(dynamodb, monkeypatch, lambda_context)
    world.deps.memory.clock = world.deps.clock  # type: ignore[attr-defined]
    return world


def _later(world: World, **gap: float) -> None:
    world.deps.clock._now += timedelta(**gap)  # type: ignore[attr-defined]


def _searched(world: World, **body: Any) -> list[str]:
    status, data = world.api.call("POST", "/memories/records/search", body)
    assert status == 200, data
    return [r["record_id"] for r in data["records"]]


def _namespaces(world: World) -> list[list[str]]:
    status, data = world.api.call("POST", "/memories/namespaces", {})
    assert status == 200, data
    return data["namespaces"]


def _ttl_removal(record: dict[str, Any]) -> dict[str, Any]:
    """The stream record of DynamoDB's TTL deleting an item (userIdentity: the service)."""
    return {
        "eventID": "1",
        "eventName": "REMOVE",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        "dynamodb": {
            "Keys": serialize(
                {schema.USER_ID: record[schema.USER_ID], schema.RECORD_ID: record["record_id"]}
            ),
            "OldImage": serialize(record),
            "StreamViewType": "NEW_AND_OLD_IMAGES",
            "SequenceNumber": "1",
        },
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/records/stream/x",
    }


def _purge(world: World, event_record: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    from chatmemory import wiring
    from chatmemory.services.background.forget import Purging
    from handlers import purge

    deps = Purging(memory=world.deps.memory, index=world.index)
    monkeypatch.setattr(wiring, "purge_deps", lambda: deps)
    return purge.handler({"Records": [event_record]}, world.api._context)


def test_an_expired_record_vanishes_from_every_read_path_at_its_expiry(world: World) -> None:
    lasting = world.state("My cat Miso likes sardines")
    brief = world.state("My cat Miso is at the vet this week", ttl_seconds=3600)
    item = world.state(
        "Miso the cat takes her pill with sardines",
        record_id="agent.cat",
        namespace=["agent", "cat"],
        ttl_seconds=3600,
    )
    assert brief["expires_at"] and item["expires_at"] and lasting["expires_at"] is None
    ids = {lasting["record_id"], brief["record_id"], "agent.cat"}
    assert {r["record_id"] for r in world.listed()} == ids
    assert set(world.searched("cat Miso sardines")) == ids
    assert set(_searched(world, query="cat Miso sardines")) == ids
    assert set(_searched(world, namespace_prefix=["agent"])) == {"agent.cat"}
    assert ["agent", "cat"] in _namespaces(world)
    cited, memory = world.recalled("What about my cat Miso and sardines?")
    assert "vet" in memory and "pill" in memory

    _later(world, hours=1)
    assert {r["record_id"] for r in world.listed()} == {lasting["record_id"]}
    assert world.searched("cat Miso sardines") == [lasting["record_id"]]
    assert _searched(world, query="cat Miso sardines") == [lasting["record_id"]]
    assert _searched(world, query="pill", namespace_prefix=["agent"]) == []
    assert _searched(world, namespace_prefix=["agent"]) == []
    assert _namespaces(world) == [["profile"]]
    cited, memory = world.recalled("What about my cat Miso and sardines?")
    assert "vet" not in memory and "pill" not in memory
    assert not cited & {brief["record_id"], "agent.cat"}
    for rid in (brief["record_id"], "agent.cat"):
        assert world.api.call("GET", f"/memories/records/{rid}")[0] == 404
        assert world.api.call("PATCH", f"/memories/records/{rid}", {"text": "x"})[0] == 404
        assert world.api.call("DELETE", f"/memories/records/{rid}")[0] == 404
    # The items are still stored (DynamoDB's TTL has not run): only reads hide them.
    assert {r["record_id"] for r in world.stored_records()} == ids


def test_a_put_after_expiry_creates_a_new_record_that_a_late_ttl_purge_never_touches(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.state("Lunch is at noon", record_id="agent.lunch", namespace=["agent"], ttl_seconds=60)
    [old] = world.stored_records()
    _later(world, minutes=2)
    status, data = world.api.call(
        "POST", "/memories/records", {"text": "Lunch is at one", "record_id": "agent.lunch",
                                      "namespace": ["agent"]},
    )  # fmt: skip
    assert status == 201, data  # created: the expired record's key was free
    assert data["record"]["expires_at"] is None
    [new] = world.stored_records()
    assert new["generation"] != old["generation"] and "expires_at" not in new
    # The expired record's entries went before its item; the new one has its own.
    assert [e["text"] for e in record_entries(world.index, "alice").values()] == ["Lunch is at one"]
    # DynamoDB's TTL deleting the old item (had it run first) names the old generation only.
    _purge(world, _ttl_removal(old), monkeypatch)
    assert [e["text"] for e in entries(world.index, "alice").values()] == ["Lunch is at one"]
    assert world.searched("lunch") == ["agent.lunch"]


def test_the_purge_removes_the_entries_of_a_record_dynamodbs_ttl_deleted(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = world.state("I play the cello")
    world.state("I am in Lisbon until Friday", ttl_seconds=60)
    gone = next(r for r in world.stored_records() if r["record_id"] != kept["record_id"])
    assert len(record_entries(world.index, "alice")) == 2
    # A REMOVE by someone else (the API's own deletes) is not the TTL's: filtered out.
    foreign = _ttl_removal(gone)
    del foreign["userIdentity"]
    _purge(world, foreign, monkeypatch)
    assert len(record_entries(world.index, "alice")) == 2
    world.dynamodb.delete_item(
        TableName="records", Key=serialize({"user_id": "alice", "record_id": gone["record_id"]})
    )
    answer = _purge(world, _ttl_removal(gone), monkeypatch)
    assert answer == {"batchItemFailures": []}
    assert set(record_entries(world.index, "alice")) == {kept["record_id"]}


def test_the_ttl_filter_matches_only_dynamodbs_own_removals() -> None:
    from chatmemory.streams import matches

    record = {"user_id": "alice", "record_id": "r1", "type": "fact"}
    event = _ttl_removal(record)
    assert matches(schema.RECORD_EXPIRED_FILTER, event)
    assert not matches(schema.RECORD_EXPIRED_FILTER, {**event, "userIdentity": {"type": "X"}})
    assert not matches(schema.RECORD_EXPIRED_FILTER, {**event, "eventName": "MODIFY"})
    # A statement's claim expiring (schema.STATEMENT_HOLDER) is no record: nothing to purge.
    claim = {"user_id": schema.statement_partition("alice"), "record_id": "k" * 32, "holder": "r1"}
    assert not matches(schema.RECORD_EXPIRED_FILTER, _ttl_removal(claim))
    assert schema.RECORDS.ttl_attribute == schema.EXPIRES_AT == "expires_at"
    assert schema.RECORD_EXPIRED_FILTER in schema.RECORD_PURGE_TRIGGER.filters


def test_an_expiring_profile_record_neither_merges_nor_supersedes() -> None:
    """ "I am in Lisbon this week" must not make "I live in Porto" history, which would
    outlive it; nor merge into it and take it along when it expires."""
    memory, index = InMemoryShortTermMemory(), HookedIndex()
    now = at(1)
    memory.clock = lambda: now
    owner = "alice"
    home = profile.state_record(
        owner,
        "I live in Porto",
        profile.Editing(memory, FakeEmbedder(), index, now),
        record_type=None,
    )
    brief = profile.state_record(
        owner,
        "I live in Porto",
        profile.Editing(memory, FakeEmbedder(), index, now),
        record_type=None,
        expires_at=int(now.timestamp()) + 60,
    )
    assert brief.record_id != home.record_id
    current = memory.get_record(owner, home.record_id)
    assert isinstance(current, MemoryRecord) and current.status == RecordStatus.ACTIVE
    assert current.expires_at is None
    memory.clock = lambda: now + timedelta(minutes=1)
    assert [r.record_id for r in memory.records_of_owner(owner)] == [home.record_id]


def test_a_lasting_statement_is_never_absorbed_by_an_expiring_record(world: World) -> None:
    """Failed before (issue 46): the same text stated without ttl_seconds after it was stated
    with one (POST /memories/records) answered 201 with the expiring record (merged into it, its expires_at shown), and
    once that expired nothing of the lasting statement was left."""
    brief = world.state("My cat Miso is at the vet", ttl_seconds=60)
    lasting = world.state("My cat Miso is at the vet")
    assert lasting["record_id"] != brief["record_id"]
    assert lasting["expires_at"] is None and brief["expires_at"] is not None
    _later(world, seconds=61)
    assert [r["record_id"] for r in world.listed()] == [lasting["record_id"]]
    assert world.searched("cat Miso vet") == [lasting["record_id"]]
    # Stated again while the lasting one holds it: that record, not a third one.
    assert world.state("my cat Miso is at the vet!")["record_id"] == lasting["record_id"]


def _stated_at(memory: Any, index: Any, text: str, when: Any, **kw: Any) -> MemoryRecord:
    return profile.state_record(
        "alice",
        text,
        profile.Editing(memory, FakeEmbedder(), index, when),
        record_type=kw.pop("record_type", None),
        **kw,
    )


def test_a_lasting_record_is_never_superseded_or_settled_by_an_expiring_one() -> None:
    """Failed before (issue 46): a lasting record placed after an expiring one on its subject
    but dated before it (a session consolidated late) became history of the expiring record
    ("newer"), and so did a lasting open question that an expiring statement answered: once
    the expiring record expired, nothing lasting was current any more."""
    memory, index = InMemoryShortTermMemory(), HookedIndex()
    now = at(10)
    memory.clock = lambda: now
    brief = _stated_at(
        memory, index, "I live in Lisbon", at(10), expires_at=int(now.timestamp()) + 60
    )
    assert brief.subject  # a subject of its own, shared with what follows
    home = _stated_at(memory, index, "I live in Porto", at(5))
    question = _stated_at(
        memory, index, "Where I will live", at(5), record_type=RecordType.OPEN_QUESTION
    )
    question.subject = brief.subject  # what "I live in Lisbon" settles
    assert memory.save_record(question)
    late_question = MemoryRecord(
        "late-q", "alice", RecordType.OPEN_QUESTION, "Where do I live?", iso(at(6)), iso(at(6)),
        RecordOrigin.EXTRACTED, subject=brief.subject,
    )  # fmt: skip
    placing.place(
        late_question, [0.0], memory=memory, embedder=FakeEmbedder(), index=index,
        policy=profile.ProfilePolicy(),
    )  # fmt: skip
    for record in (home, late_question):
        current = memory.get_record("alice", record.record_id)
        assert current is not None and current.status == RecordStatus.ACTIVE, current
        assert current.superseded_by is None
    expiring = memory.get_record("alice", brief.record_id)
    assert expiring is not None and expiring.status == RecordStatus.ACTIVE
    memory.clock = lambda: now + timedelta(minutes=2)
    assert {r.record_id for r in memory.records_of_owner("alice")} == {
        home.record_id,
        question.record_id,
        "late-q",
    }


def test_the_record_item_carries_the_tables_ttl_attribute_in_epoch_seconds() -> None:
    def record(**kw: Any) -> MemoryRecord:
        return MemoryRecord(
            "r1", "alice", RecordType.FACT, "t", "x", "x", RecordOrigin.STATED, **kw
        )

    assert record_to_item(record(expires_at=1_800_000_000))[schema.EXPIRES_AT] == 1_800_000_000
    assert schema.EXPIRES_AT not in record_to_item(record())


def test_forgetting_everything_removes_expired_records_too(world: World) -> None:
    """The forget's purge does not wait for DynamoDB's TTL: expired items and their entries go
    with the rest (records_of_owner(include_expired=True))."""
    world.state("I play the cello")
    world.state("I am in Lisbon until Friday", ttl_seconds=60)
    _later(world, minutes=2)
    assert len(world.stored_records()) == 2
    assert world.api.call("DELETE", "/memories")[0] in (202, 204)
    world.purger.drain()
    assert world.stored_records() == []
    assert entries(world.index, "alice") == {}


def test_a_key_created_again_after_dynamodbs_ttl_removed_it_is_never_recalled_with_old_text(
    world: World,
) -> None:
    """DynamoDB's TTL deletes the expired item; until the stream's purge runs, its entries are
    still in the index. A put of the key in that window creates a record of a new generation:
    recall, auto-recall and search must not take the old entries for it."""
    world.state(
        "The door code of the office is 4711",
        record_id="agent.door",
        namespace=["agent"],
        ttl_seconds=60,
    )
    [old] = world.stored_records()
    _later(world, minutes=2)
    world.dynamodb.delete_item(  # the TTL's delete; the purge it triggers has not run yet
        TableName="records", Key=serialize({"user_id": "alice", "record_id": "agent.door"})
    )
    status, data = world.api.call(
        "POST", "/memories/records", {"text": "The office door opens with a badge now",
                                      "record_id": "agent.door", "namespace": ["agent"]},
    )  # fmt: skip
    assert status == 201, data
    [new] = world.stored_records()
    assert new["generation"] != old["generation"]
    texts = sorted(e["text"] for e in entries(world.index, "alice").values())
    assert texts[0] == "The door code of the office is 4711"  # the window: old entries still there
    cited, memory = world.recalled("What is the door code of the office?")
    assert "4711" not in memory and "badge" in memory
    status, data = world.api.call("POST", "/memories/records/search", {"query": "door code 4711"})
    assert status == 200, data
    assert [r["text"] for r in data["records"]] == ["The office door opens with a badge now"]
    # Only the new entry can score it: the old text's words find nothing of it.
    assert all("4711" not in r["text"] for r in data["records"])
