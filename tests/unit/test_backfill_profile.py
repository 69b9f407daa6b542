"""Records written before the profile block join it once given their category
(scripts/backfill_profile.py), page by page, resumably, without touching the others; and an
older local records table gets the profile index (local/dynamodb_local.ensure_tables)."""

from __future__ import annotations

from typing import Any

from chatmemory import schema, wiring
from chatmemory.adapters.dynamodb.codec import serialize
from scripts.backfill_profile import backfill


def _old_item(rid: str, text: str, kind: str = "fact", **extra: Any) -> dict[str, Any]:
    """A record item as versions before the profile block wrote it: no category, no rank."""
    return serialize(
        {
            "user_id": "alice",
            "record_id": rid,
            "type": kind,
            "text": text,
            "created_at": "2025-01-01T00:00:00.000Z",
            "updated_at": "2025-01-01T00:00:00.000Z",
            "origin": "stated",
            "status": "ACTIVE",
            "subject": "",
            "provenance": [],
            "superseded_by": None,
            "valid_until": None,
            "version": 0,
        }
        | extra
    )


def test_older_facts_and_preferences_get_their_category_and_join_the_profile(
    dynamodb: Any,
) -> None:
    for i in range(7):
        item = _old_item(f"r{i}", f"I speak language number {i}.")
        dynamodb.put_item(TableName="records", Item=item)
    dynamodb.put_item(TableName="records", Item=_old_item("allergy", "I'm allergic to wasps."))
    dynamodb.put_item(TableName="records", Item=_old_item("sum", "User: hello", kind="summary"))
    memory = wiring.short_term_memory()
    assert memory.profile_records("alice", 80) == []

    pages = list(backfill(dynamodb, "records", memory))

    profile = memory.profile_records("alice", 80)
    assert [r.record_id for r in profile][0] == "allergy"  # health first
    assert len(profile) == 8
    assert sum(done for _, done, _ in pages) == 8
    summary = memory.get_record("alice", "sum")
    assert summary is not None and summary.category == ""  # a summary has none
    # Again: nothing left to do.
    assert sum(done for _, done, _ in backfill(dynamodb, "records", memory)) == 0


def test_a_run_resumes_after_the_last_key_it_printed(dynamodb: Any, monkeypatch: Any) -> None:
    import scripts.backfill_profile as module

    monkeypatch.setattr(module, "PAGE_ITEMS", 3)
    for i in range(8):
        dynamodb.put_item(TableName="records", Item=_old_item(f"r{i}", f"I own bike {i}."))
    memory = wiring.short_term_memory()
    first = next(backfill(dynamodb, "records", memory))
    assert first[2] is not None

    rest = list(backfill(dynamodb, "records", memory, start_key=first[2]))

    assert first[1] + sum(done for _, done, _ in rest) == 8
    assert rest[-1][2] is None
    assert len(memory.profile_records("alice", 80)) == 8


def test_a_record_changed_meanwhile_is_left_to_its_writer(dynamodb: Any) -> None:
    """The save is conditional on the version read: a record corrected between the page and
    its save keeps the correction (its writer categorized it)."""
    dynamodb.put_item(TableName="records", Item=_old_item("r1", "I own a red bike."))
    memory = wiring.short_term_memory()
    pages = backfill(dynamodb, "records", memory)
    record = memory.get_record("alice", "r1")
    assert record is not None
    real_scan = dynamodb.scan

    def scan_then_correct(**kwargs: Any) -> Any:
        page = real_scan(**kwargs)
        record.text = "I own a blue bike."
        assert memory.save_record(record)
        return page

    dynamodb.scan = scan_then_correct
    try:
        assert [done for _, done, _ in pages] == [0]
    finally:
        dynamodb.scan = real_scan
    assert memory.get_record("alice", "r1").text == "I own a blue bike."  # type: ignore[union-attr]


def test_an_older_local_records_table_gets_the_profile_index(dynamodb_local: Any) -> None:
    from local.dynamodb_local import ensure_tables

    client = wiring.aws_client("dynamodb", dynamodb_local.endpoint)
    kwargs = schema.RECORDS.create_table_kwargs("older-records")
    kwargs.pop("GlobalSecondaryIndexes")
    kwargs["AttributeDefinitions"] = [
        a for a in kwargs["AttributeDefinitions"] if a["AttributeName"] != schema.PROFILE_RANK
    ]
    client.create_table(**kwargs)

    ensure_tables(client, {schema.RECORDS.logical_name: "older-records"} | _others())

    indexes = client.describe_table(TableName="older-records")["Table"]["GlobalSecondaryIndexes"]
    assert [i["IndexName"] for i in indexes] == [schema.PROFILE_RECORDS_INDEX.name]


def _others() -> dict[str, str]:
    return {
        spec.logical_name: f"older-{spec.logical_name}"
        for spec in schema.TABLES
        if spec is not schema.RECORDS
    }
