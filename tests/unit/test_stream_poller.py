"""The local stream poller keeps Lambda's event source mapping semantics (on a fake stream)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from chatmemory import schema
from local.poller import StreamMapping, StreamPoller

ENDED = {
    "OldImage": {"status": {"S": "OPEN"}},
    "NewImage": {"status": {"S": "ENDED"}},
}


class _Error(Exception):
    pass


class FakeStreams:
    """The DynamoDB and DynamoDB Streams calls the poller makes, over in-memory shards.
    describe_stream answers one shard per page, so pagination is exercised too."""

    def __init__(self) -> None:
        self.exceptions = SimpleNamespace(
            ResourceNotFoundException=type("ResourceNotFound", (_Error,), {}),
            ExpiredIteratorException=type("ExpiredIterator", (_Error,), {}),
            TrimmedDataAccessException=type("TrimmedDataAccess", (_Error,), {}),
        )
        self.shards: dict[str, dict[str, Any]] = {}
        self.seq = 100
        self.expire_next = False
        self.reads: list[str] = []
        self.open_shard("shard-1")

    def open_shard(self, shard_id: str, parent: str | None = None) -> None:
        self.shards[shard_id] = {"parent": parent, "records": [], "closed": False}

    def put(self, shard_id: str, name: str, session: str, **images: Any) -> str:
        self.seq += 1
        sequence = f"{self.seq:021d}"
        self.shards[shard_id]["records"].append(
            {
                "eventID": f"e{self.seq}",
                "eventName": name,
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "ddblocal",
                "dynamodb": {
                    "Keys": {"session_id": {"S": session}},
                    "SequenceNumber": sequence,
                    "SizeBytes": 10,
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                    **images,
                },
            }
        )
        return sequence

    # dynamodb
    def describe_table(self, TableName: str) -> dict[str, Any]:  # noqa: N803 - boto3's names
        return {"Table": {"LatestStreamArn": f"arn:stream/{TableName}"}}

    # dynamodbstreams
    def describe_stream(self, StreamArn: str, ExclusiveStartShardId: str = "") -> dict[str, Any]:  # noqa: N803
        ids = list(self.shards)
        start = ids.index(ExclusiveStartShardId) + 1 if ExclusiveStartShardId else 0
        page = ids[start : start + 1]
        shards = [
            {"ShardId": i, **({"ParentShardId": p} if (p := self.shards[i]["parent"]) else {})}
            for i in page
        ]
        description: dict[str, Any] = {"Shards": shards}
        if start + 1 < len(ids):
            description["LastEvaluatedShardId"] = page[-1]
        return {"StreamDescription": description}

    def get_shard_iterator(
        self,
        StreamArn: str,
        ShardId: str,
        ShardIteratorType: str,  # noqa: N803
        SequenceNumber: str = "",
    ) -> dict[str, Any]:
        records = self.shards[ShardId]["records"]
        position = 0
        if ShardIteratorType == "AFTER_SEQUENCE_NUMBER":
            position = next(
                i + 1
                for i, r in enumerate(records)
                if r["dynamodb"]["SequenceNumber"] == SequenceNumber
            )
        return {"ShardIterator": f"{ShardId}|{position}"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:  # noqa: N803
        self.reads.append(ShardIterator.split("|")[0])
        if self.expire_next:
            self.expire_next = False
            raise self.exceptions.ExpiredIteratorException("expired")
        shard_id, position = ShardIterator.split("|")
        shard = self.shards[shard_id]
        start = int(position)
        records = shard["records"][start : start + Limit]
        end = start + len(records)
        answer: dict[str, Any] = {"Records": [json.loads(json.dumps(r)) for r in records]}
        if not (shard["closed"] and end >= len(shard["records"])):
            answer["NextShardIterator"] = f"{shard_id}|{end}"
        return answer


class Recorder:
    """A handler that records every batch's session ids and fails as told."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.events: list[dict[str, Any]] = []
        self.raise_for: set[str] = set()
        self.report: set[str] = set()

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        assert context.aws_request_id and context.get_remaining_time_in_millis() > 0
        sessions = [r["dynamodb"]["Keys"]["session_id"]["S"] for r in event["Records"]]
        self.batches.append(sessions)
        self.events.append(event)
        if self.raise_for & set(sessions):
            raise RuntimeError("poison record")
        failed = [
            {"itemIdentifier": r["dynamodb"]["SequenceNumber"]}
            for r in event["Records"]
            if r["dynamodb"]["Keys"]["session_id"]["S"] in self.report
        ]
        return {"batchItemFailures": failed}


def _poller(
    stream: FakeStreams,
    tmp_path: Path,
    handler: Recorder,
    before_reading: Callable[[], None] | None = None,
    **mapping: Any,
) -> StreamPoller:
    options = {"batch_size": 10, "max_retry_attempts": 2, **mapping}
    return StreamPoller(
        stream,
        stream,
        checkpoint_path=tmp_path / "checkpoints.json",
        dead_letter_path=tmp_path / "dead-letters.jsonl",
        mappings=[
            StreamMapping(
                "consolidate",
                "sessions",
                "unused.handler",
                (schema.SESSION_ENDED_FILTER,),
                **options,
            )
        ],
        handlers={"consolidate": handler},
        before_reading=before_reading,
    )


def _ended(stream: FakeStreams, *sessions: str, shard: str = "shard-1") -> list[str]:
    return [stream.put(shard, "MODIFY", s, **ENDED) for s in sessions]


def test_records_not_matching_the_filter_are_dropped_before_invoking(tmp_path: Path) -> None:
    stream, handler = FakeStreams(), Recorder()
    stream.put("shard-1", "INSERT", "a", NewImage={"status": {"S": "OPEN"}})
    _ended(stream, "a")
    last = stream.put(
        "shard-1",
        "MODIFY",
        "a",
        OldImage={"status": {"S": "ENDED"}},
        NewImage={"status": {"S": "CONSOLIDATED"}},
    )
    poller = _poller(stream, tmp_path, handler)
    poller.drain()
    assert handler.batches == [["a"]]
    record = handler.events[0]["Records"][0]
    assert record["eventSource"] == "aws:dynamodb" and record["eventName"] == "MODIFY"
    assert record["eventSourceARN"] == "arn:stream/sessions"
    assert set(record["dynamodb"]) >= {"Keys", "NewImage", "OldImage", "SequenceNumber"}
    saved = json.loads((tmp_path / "checkpoints.json").read_text())["shards"]
    assert [entry["sequence_number"] for entry in saved.values()] == [last]


def test_batches_hold_at_most_batch_size_records_in_order(tmp_path: Path) -> None:
    stream, handler = FakeStreams(), Recorder()
    _ended(stream, "a", "b", "c", "d", "e")
    _poller(stream, tmp_path, handler, batch_size=2).drain()
    assert handler.batches == [["a", "b"], ["c", "d"], ["e"]]


def test_a_reported_item_failure_is_retried_from_the_failed_record(tmp_path: Path) -> None:
    stream, handler = FakeStreams(), Recorder()
    _ended(stream, "a", "b", "c")
    handler.report = {"b"}
    poller = _poller(stream, tmp_path, handler)
    poller.poll_once()
    handler.report = set()
    poller.drain()
    assert handler.batches == [["a", "b", "c"], ["b", "c"]]
    assert poller.dead_letters.entries() == []


def test_an_identifier_not_in_the_batch_fails_the_whole_batch(tmp_path: Path) -> None:
    stream, handler = FakeStreams(), Recorder()
    _ended(stream, "a", "b")
    answers = iter([{"batchItemFailures": [{"itemIdentifier": ""}]}, None])

    def handle(event: dict[str, Any], context: Any) -> Any:
        handler(event, context)
        return next(answers)

    poller = _poller(stream, tmp_path, handler)
    poller._handlers["consolidate"] = handle
    poller.drain()
    assert handler.batches == [["a", "b"], ["a", "b"]]


def test_a_raising_handler_is_bisected_to_the_poison_record_which_is_dead_lettered(
    tmp_path: Path,
) -> None:
    stream, handler = FakeStreams(), Recorder()
    sequences = _ended(stream, "a", "poison", "c", "d")
    handler.raise_for = {"poison"}
    poller = _poller(stream, tmp_path, handler, batch_size=4, max_retry_attempts=2)
    poller.drain()
    # Halves on each error (free), then the first attempt plus two retries of the poison alone.
    assert handler.batches == [
        ["a", "poison", "c", "d"],
        ["a", "poison"],
        ["a"],
        ["poison"],
        ["poison"],
        ["poison"],
        ["c", "d"],
    ]
    [letter] = poller.dead_letters.entries()
    assert [r["sequenceNumber"] for r in letter["records"]] == [sequences[1]]
    assert letter["records"][0]["keys"] == {"session_id": {"S": "poison"}}
    assert letter["error"] == "RuntimeError: poison record"
    assert letter["DDBStreamBatchInfo"]["streamArn"] == "arn:stream/sessions"
    assert letter["requestContext"]["condition"] == "RetryAttemptsExhausted"
    # Records after it were not blocked, and a restart does not see any of them again.
    _ended(stream, "e")
    restarted = Recorder()
    _poller(stream, tmp_path, restarted).drain()
    assert restarted.batches == [["e"]]


def test_without_bisection_a_failing_batch_is_retried_then_dead_lettered_whole(
    tmp_path: Path,
) -> None:
    stream, handler = FakeStreams(), Recorder()
    _ended(stream, "a", "poison")
    handler.raise_for = {"poison"}
    poller = _poller(stream, tmp_path, handler, bisect_batch_on_error=False, max_retry_attempts=1)
    poller.drain()
    assert handler.batches == [["a", "poison"], ["a", "poison"]]
    [letter] = poller.dead_letters.entries()
    assert [r["keys"]["session_id"]["S"] for r in letter["records"]] == ["a", "poison"]


def test_a_persistent_item_failure_goes_to_the_dead_letters_after_bounded_retries(
    tmp_path: Path,
) -> None:
    stream, handler = FakeStreams(), Recorder()
    _ended(stream, "a", "bad", "c")
    handler.report = {"bad"}
    poller = _poller(stream, tmp_path, handler, max_retry_attempts=2)
    poller.drain()
    assert handler.batches == [["a", "bad", "c"], ["bad", "c"], ["bad", "c"]]
    [letter] = poller.dead_letters.entries()
    assert [r["keys"]["session_id"]["S"] for r in letter["records"]] == ["bad", "c"]
    assert "batchItemFailures" in letter["error"]


def test_a_restart_resumes_after_the_checkpoint_without_skipping(tmp_path: Path) -> None:
    stream, first = FakeStreams(), Recorder()
    _ended(stream, "a", "b")
    _poller(stream, tmp_path, first).drain()
    _ended(stream, "c")
    second = Recorder()
    _poller(stream, tmp_path, second).drain()
    assert first.batches == [["a", "b"]] and second.batches == [["c"]]


def test_a_closed_shard_is_finished_before_its_child_starts(tmp_path: Path) -> None:
    stream, handler = FakeStreams(), Recorder()
    _ended(stream, "old-1", "old-2")
    stream.shards["shard-1"]["closed"] = True
    stream.open_shard("shard-2", parent="shard-1")
    _ended(stream, "new-1", shard="shard-2")
    # The child is listed first: it must still wait for its parent.
    stream.shards = {k: stream.shards[k] for k in ("shard-2", "shard-1")}
    poller = _poller(stream, tmp_path, handler, batch_size=1)
    poller.drain()
    assert handler.batches == [["old-1"], ["old-2"], ["new-1"]]
    saved = json.loads((tmp_path / "checkpoints.json").read_text())["shards"]
    assert [v["closed"] for k, v in sorted(saved.items())] == [True, False]
    # After a restart the finished parent is not read again.
    stream.reads.clear()
    restarted = Recorder()
    _poller(stream, tmp_path, restarted).drain()
    assert restarted.batches == []
    assert set(stream.reads) == {"shard-2"}


def test_an_expired_iterator_is_replaced_without_losing_or_repeating_records(
    tmp_path: Path,
) -> None:
    stream, handler = FakeStreams(), Recorder()
    _ended(stream, "a")
    poller = _poller(stream, tmp_path, handler)
    poller.drain()
    _ended(stream, "b", "c")
    stream.expire_next = True
    poller.drain()
    assert handler.batches == [["a"], ["b", "c"]]


def test_checkpoints_are_replaced_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from local.poller import checkpoints

    stream, handler = FakeStreams(), Recorder()
    _ended(stream, "a")
    _poller(stream, tmp_path, handler).drain()
    before = (tmp_path / "checkpoints.json").read_text()

    def crash(*_: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(checkpoints.os, "replace", crash)
    _ended(stream, "b")
    with pytest.raises(OSError):
        _poller(stream, tmp_path, Recorder()).drain()
    assert (tmp_path / "checkpoints.json").read_text() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".checkpoints")] == []


def test_local_mappings_are_the_deployed_triggers() -> None:
    from chatmemory import schema
    from local.poller import MAPPINGS

    assert [
        (m.name, m.table, m.handler, m.filters, m.batch_size, m.max_retry_attempts,
         m.timeout_seconds)
        for m in MAPPINGS
    ] == [
        (t.name, t.table.logical_name, t.handler, t.filters, t.batch_size, t.retry_attempts,
         t.timeout_seconds)
        for t in schema.STREAM_TRIGGERS
    ]  # fmt: skip


# --- the records table (issue 13): deleted profile records reach the purge -------------------


class TableStreams:
    """One FakeStreams per physical table: the poller finds each table's own stream (a table
    that is not listed does not exist yet)."""

    def __init__(self, **tables: FakeStreams) -> None:
        self.tables = tables
        self.exceptions = next(iter(tables.values())).exceptions

    def describe_table(self, TableName: str) -> dict[str, Any]:  # noqa: N803 - boto3's names
        if TableName not in self.tables:
            raise self.exceptions.ResourceNotFoundException(TableName)
        return self.tables[TableName].describe_table(TableName=TableName)

    def _of(self, stream_arn: str) -> FakeStreams:
        return self.tables[stream_arn.removeprefix("arn:stream/")]

    def describe_stream(self, StreamArn: str, **kwargs: Any) -> dict[str, Any]:  # noqa: N803
        return self._of(StreamArn).describe_stream(StreamArn=StreamArn, **kwargs)

    def get_shard_iterator(self, StreamArn: str, **kwargs: Any) -> dict[str, Any]:  # noqa: N803
        answer = self._of(StreamArn).get_shard_iterator(StreamArn=StreamArn, **kwargs)
        return {"ShardIterator": f"{StreamArn}#{answer['ShardIterator']}"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:  # noqa: N803
        stream_arn, iterator = ShardIterator.split("#", 1)
        answer = self._of(stream_arn).get_records(ShardIterator=iterator, Limit=Limit)
        if "NextShardIterator" in answer:
            answer["NextShardIterator"] = f"{stream_arn}#{answer['NextShardIterator']}"
        return answer


def _record_change(stream: FakeStreams, name: str, record_id: str, old: str, new: str) -> None:
    """A change of one profile record (keys: owner and record id) on the records stream."""
    stream.put("shard-1", name, "unused", NewImage={"status": {"S": new}})
    change = stream.shards["shard-1"]["records"][-1]["dynamodb"]
    change["Keys"] = {"user_id": {"S": "user-a"}, "record_id": {"S": record_id}}
    if old:
        change["OldImage"] = {"status": {"S": old}}


def test_local_mode_feeds_deleted_records_from_the_records_stream_to_the_purge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run`'s poller (default_poller) reads the records table named by Settings and runs
    RECORD_PURGE_TRIGGER as the deployed mapping does: only a record marked DELETING (or one
    DynamoDB's TTL removed, which DynamoDB Local never does) reaches handlers.purge."""
    from chatmemory import wiring
    from local.poller import MAPPINGS, default_poller

    [mapping] = [m for m in MAPPINGS if m.table == schema.RECORDS.logical_name]
    assert (mapping.name, mapping.handler, mapping.filters) == (
        schema.RECORD_PURGE_TRIGGER.name,
        "handlers.purge.handler",
        (schema.RECORD_DELETING_FILTER, schema.RECORD_EXPIRED_FILTER),
    )
    records = FakeStreams()
    _record_change(records, "INSERT", "r-1", "", "ACTIVE")
    _record_change(records, "MODIFY", "r-1", "ACTIVE", "SUPERSEDED")
    _record_change(records, "MODIFY", "r-2", "ACTIVE", "DELETING")
    streams = TableStreams(**{"dev-records": records})
    monkeypatch.setattr(wiring, "aws_client", lambda service, endpoint=None: streams)
    settings = SimpleNamespace(
        dynamodb_endpoint="http://127.0.0.1:1",
        sessions_table="dev-sessions",
        conversations_table="dev-conversations",
        users_table="dev-users",
        records_table="dev-records",
        checkpoints_table="dev-checkpoints",
    )
    events: dict[str, list[dict[str, Any]]] = {m.name: [] for m in MAPPINGS}

    def recorder(name: str) -> Any:
        def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
            events[name].extend(event["Records"])
            return {"batchItemFailures": []}

        return handle

    poller = default_poller(
        settings,
        checkpoint_path=tmp_path / "checkpoints.json",
        dead_letter_path=tmp_path / "dead-letters.jsonl",
        handlers={m.name: recorder(m.name) for m in MAPPINGS},
    )
    poller.drain()

    [purged] = events.pop(schema.RECORD_PURGE_TRIGGER.name)
    assert purged["eventSourceARN"] == "arn:stream/dev-records"
    assert purged["dynamodb"]["Keys"] == {"user_id": {"S": "user-a"}, "record_id": {"S": "r-2"}}
    assert all(not batch for batch in events.values())  # the other tables' mappings wait


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _idle_poller(
    stream: FakeStreams, tmp_path: Path, handler: Recorder, clock: _Clock, **options: Any
) -> Any:
    return StreamPoller(
        stream,
        stream,
        checkpoint_path=tmp_path / "checkpoints.json",
        dead_letter_path=tmp_path / "dead-letters.jsonl",
        mappings=[StreamMapping("consolidate", "sessions", "unused.handler", (), batch_size=10)],
        handlers={"consolidate": handler},
        clock=clock,
        **{"idle_backoff_seconds": 0.25, "max_idle_backoff_seconds": 4.0, **options},
    )


def _reads_at(
    poller: StreamPoller, stream: FakeStreams, clock: _Clock, until: float
) -> list[float]:
    """Step the poller every 1/16 s of its clock (exact in binary) up to `until`; the times it
    read the shard."""
    times = []
    while clock.now < until:
        before = len(stream.reads)
        poller.poll_once()
        if len(stream.reads) > before:
            times.append(clock.now - 1000.0)
        clock.now += 0.0625
    return times


def test_an_empty_shard_is_read_less_often_each_time_up_to_the_longest_wait(
    tmp_path: Path,
) -> None:
    """Failed before (issue 46): every shard was read at every step (four times a second in
    local mode), which cost DynamoDB Local more as its data grew. Now an empty read backs off:
    0.25 s, 0.5 s, 1 s, 2 s, then 4 s between reads."""
    stream, handler, clock = FakeStreams(), Recorder(), _Clock()
    poller = _idle_poller(stream, tmp_path, handler, clock)
    reads = _reads_at(poller, stream, clock, 1020.0)
    gaps = [b - a for a, b in zip(reads, reads[1:], strict=False)]
    assert gaps[:4] == [0.25, 0.5, 1.0, 2.0]
    assert set(gaps[4:]) == {4.0}


def test_records_and_a_wake_reset_the_backoff(tmp_path: Path) -> None:
    stream, handler, clock = FakeStreams(), Recorder(), _Clock()
    poller = _idle_poller(stream, tmp_path, handler, clock)
    _reads_at(poller, stream, clock, 1020.0)  # backed off to 4 s
    stream.put("shard-1", "MODIFY", "a", **ENDED)
    poller.wake()  # a request wrote something: read at once
    poller.poll_once()
    assert handler.batches == [["a"]]
    reads = _reads_at(poller, stream, clock, clock.now + 1.0)
    assert reads[1] - reads[0] == 0.25  # from the shortest wait again
    # Without a wake, a record is read within the longest wait, and the backoff restarts.
    _reads_at(poller, stream, clock, clock.now + 20.0)
    stream.put("shard-1", "MODIFY", "b", **ENDED)
    _reads_at(poller, stream, clock, clock.now + 4.0625)
    assert handler.batches == [["a"], ["b"]]


def test_the_shards_of_an_idle_mapping_are_listed_less_often_until_woken(tmp_path: Path) -> None:
    stream, handler, clock = FakeStreams(), Recorder(), _Clock()
    listings: list[float] = []
    describe = stream.describe_stream

    def counted(**kwargs: Any) -> dict[str, Any]:
        if "ExclusiveStartShardId" not in kwargs:
            listings.append(clock.now - 1000.0)
        return describe(**kwargs)

    stream.describe_stream = counted  # type: ignore[method-assign]
    poller = _idle_poller(
        stream, tmp_path, handler, clock, shard_refresh_seconds=5.0, max_shard_refresh_seconds=40.0
    )
    _reads_at(poller, stream, clock, 1200.0)
    gaps = [b - a for a, b in zip(listings, listings[1:], strict=False)]
    assert gaps[:4] == [5.0, 10.0, 20.0, 40.0] and set(gaps[4:]) == {40.0}
    poller.wake()
    before = len(listings)
    _reads_at(poller, stream, clock, clock.now + 6.0)
    assert len(listings) == before + 2  # at once, then after the shortest wait again
