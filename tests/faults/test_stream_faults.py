"""Duplicate, out-of-order and poisoned stream records in local mode (DynamoDB Local, the stream
poller with Lambda's semantics, the real handlers): one long-term entry per session, nothing
changed by a stale record, and a poisoned record dead-lettered without blocking its shard.
(A redelivered batch and a handler that raises are covered in tests/integration.)"""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.dynamodb import deserialize
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.schema import MEMORY_INDEX
from local.lambda_context import LocalLambdaContext
from local.poller import lambda_record, load_handler
from tests.integration.helpers import World

pytestmark = pytest.mark.integration


def _chat(world: World, name: str, lines: list[str]) -> str:
    session_id = world.api.new_session(name)
    for line in lines:
        world.api.say(session_id, line)
    return session_id


def _stream(world: World, table: str) -> list[dict[str, Any]]:
    """Every record of a table's stream so far, oldest first, as Lambda receives them."""
    client = world.dynamodb()
    streams = wiring.aws_client("dynamodbstreams", world.endpoint)
    arn = client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            answer = streams.get_records(ShardIterator=iterator)
            records += [lambda_record(r, arn) for r in answer["Records"]]
            if not answer["Records"]:
                break
            iterator = answer.get("NextShardIterator")
    return sorted(records, key=lambda r: int(r["dynamodb"]["SequenceNumber"]))


def _of(records: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    return [r for r in records if r["dynamodb"]["Keys"]["session_id"]["S"] == session_id]


def _deliver(handler: str, records: list[dict[str, Any]]) -> Any:
    return load_handler(handler)({"Records": records}, LocalLambdaContext(handler.split(".")[1]))


def _memories(session_id: str) -> list[tuple[str, str]]:
    index = EmbeddedLongTermIndex(wiring.settings().memory_path)
    rows = index._db.execute(
        "SELECT doc_key, text FROM docs WHERE idx = ? AND session_id = ? ORDER BY doc_key",
        (MEMORY_INDEX, session_id),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def _session_item(world: World, session_id: str) -> dict[str, Any]:
    item = (
        world.dynamodb()
        .get_item(
            TableName=wiring.settings().sessions_table,
            Key={"session_id": {"S": session_id}},
            ConsistentRead=True,
        )
        .get("Item")
    )
    return deserialize(item) if item else {}


def test_older_and_duplicate_session_records_after_newer_ones_change_nothing(
    world: World,
) -> None:
    api = world.api
    garden = _chat(world, "Garden", ["my tomatoes have blight", "I watered at the base"])
    api.end(garden)
    world.poller.drain()
    assert api.status(garden) == "CONSOLIDATED"
    memories = _memories(garden)
    assert [k for k, _ in memories] == [
        f"{garden}#chunk-1",
        f"{garden}#opening",
        f"{garden}#summary",
    ]
    consolidated = _session_item(world, garden)
    history = _of(_stream(world, wiring.settings().sessions_table), garden)
    ended = [r for r in history if r["dynamodb"]["NewImage"]["status"]["S"] == "ENDED"]
    assert [r["eventName"] for r in ended] == ["MODIFY"]

    # Newest first, the OPEN -> ENDED record twice: as a late redelivery would bring them.
    late = [*reversed(history), ended[0], ended[0]]
    assert _deliver("handlers.consolidate.handler", late) == {"batchItemFailures": []}

    assert _memories(garden) == memories  # one entry per part, not re-summarized
    assert _session_item(world, garden) == consolidated  # not even its version moved

    # After the user deleted the session, a stale record does not bring its memories back.
    assert api.call("DELETE", f"/sessions/{garden}")[0] == 204
    world.poller.drain()  # the purge
    assert _memories(garden) == [] and _session_item(world, garden) == {}
    assert _deliver("handlers.consolidate.handler", ended) == {"batchItemFailures": []}
    assert _memories(garden) == [] and _session_item(world, garden) == {}


def test_turn_records_redelivered_out_of_order_leave_the_rolling_summary_alone(
    world: World,
) -> None:
    sid = _chat(world, "Long", [f"fact number {i} about the allotment" for i in range(1, 21)])
    world.poller.drain()
    compacted = _session_item(world, sid)
    assert (
        compacted["summary_through_turn"] == 14 and "fact number 1" in compacted["running_summary"]
    )

    inserts = [
        r
        for r in _stream(world, wiring.settings().conversations_table)
        if r["eventName"] == "INSERT"
    ]
    assert len(_of(inserts, sid)) == 20
    shuffled = inserts[::-1] + inserts[::2]
    assert _deliver("handlers.compact.handler", shuffled) == {"batchItemFailures": []}

    assert _session_item(world, sid) == compacted


def test_a_malformed_record_is_dead_lettered_and_the_shard_moves_on(world: World) -> None:
    """The real consolidation handler reports the record it cannot read; the poller retries it
    a bounded number of times, writes it to the dead-letter file and goes on."""
    api = world.api
    good = [_chat(world, f"Good {i}", [f"fine conversation {i}"]) for i in range(2)]
    poison = _chat(world, "Poison", ["its stream record arrives damaged"])
    for session_id in (*good, poison):
        api.end(session_id)

    def damage(parsed: dict[str, Any], **_: Any) -> None:
        for record in parsed.get("Records", []):
            keys = record["dynamodb"]["Keys"]
            session = keys.get("session_id", {})  # the records table's have none
            if session.get("S") == poison and record["eventName"] == "MODIFY":
                keys["session_id"] = {"B": b"\x00not a session id"}

    streams = wiring.aws_client("dynamodbstreams", world.endpoint)
    streams.meta.events.register("after-call.dynamodb-streams.GetRecords", damage)
    poller = world.new_poller()
    poller.drain()

    assert [api.status(s) for s in good] == ["CONSOLIDATED", "CONSOLIDATED"]
    assert api.status(poison) == "ENDED"
    [letter] = poller.dead_letters.entries()
    assert [r["keys"]["session_id"] for r in letter["records"]] == [
        {"B": "AG5vdCBhIHNlc3Npb24gaWQ="}
    ]
    assert letter["requestContext"]["approximateInvokeCount"] == 1 + 3  # max_retry_attempts
    assert letter["error"].startswith("batchItemFailures: ")

    later = _chat(world, "Later", ["still flowing"])
    api.end(later)
    poller.drain()
    assert api.status(later) == "CONSOLIDATED"
    assert len(poller.dead_letters.entries()) == 1
