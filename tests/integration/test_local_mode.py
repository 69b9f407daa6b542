"""Local mode end to end on a real DynamoDB Local: the HTTP gateway, the stream poller with
Lambda's semantics, the real handlers and the offline models."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.schema import MEMORY_INDEX
from local.dynamodb_local import DynamoDBLocal
from local.poller import load_handler
from tests.integration.helpers import World

pytestmark = pytest.mark.integration

GARDEN = [
    "My tomatoes have blight on the lower leaves.",
    "I removed the yellow leaves and watered at the base in the morning.",
    "I also planted basil next to them.",
]


class Recording:
    """Wraps a real stream handler: records each invocation's sequence numbers."""

    def __init__(self, dotted: str, poison: str | None = None) -> None:
        self._handler = load_handler(dotted)
        self.poison = poison
        self.batches: list[list[str]] = []
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        self.events.append(json.loads(json.dumps(event)))
        self.batches.append([r["dynamodb"]["SequenceNumber"] for r in event["Records"]])
        if self.poison and any(_session(r) == self.poison for r in event["Records"]):
            raise RuntimeError(f"cannot handle {self.poison}")
        return self._handler(event, context)

    @property
    def sequences(self) -> set[str]:
        return {s for batch in self.batches for s in batch}

    def sessions(self) -> list[str]:
        return [_session(r) for e in self.events for r in e["Records"]]


def _session(record: dict[str, Any]) -> str:
    return record["dynamodb"]["Keys"]["session_id"]["S"]


def _recording_poller(world: World, **options: Any) -> tuple[Any, Recording, Recording]:
    consolidate = Recording("handlers.consolidate.handler", options.pop("poison", None))
    compact = Recording("handlers.compact.handler")
    poller = world.new_poller(handlers={"consolidate": consolidate, "compact": compact}, **options)
    return poller, consolidate, compact


def _chat(world: World, name: str, lines: list[str], **kwargs: Any) -> str:
    session_id = world.api.new_session(name, **kwargs)
    for line in lines:
        world.api.say(session_id, line, **kwargs)
    return session_id


def _memory_keys(world: World, session_id: str) -> list[str]:
    index = EmbeddedLongTermIndex(wiring.settings().memory_path)
    rows = index._db.execute(
        "SELECT doc_key FROM docs WHERE idx = ? AND session_id = ? ORDER BY doc_key",
        (MEMORY_INDEX, session_id),
    ).fetchall()
    return [r[0] for r in rows]


def test_a_chat_over_http_is_consolidated_by_the_poller_and_recalled_with_past(
    world: World,
) -> None:
    api = world.api
    garden = _chat(world, "Garden", GARDEN)
    _chat(world, "Travel", ["I booked a train to Lisbon for the conference in May."])
    assert api.end(garden)["status"] == "ENDED"
    world.poller.drain()
    assert api.status(garden) == "CONSOLIDATED"

    today = api.new_session("Today")
    turn = api.say(today, "/past what was wrong with my tomatoes?")
    assert turn["intent"] == "past"
    assert [s["id"] for s in turn["sources"]] == [garden]
    started = api.ok("GET", f"/sessions/{garden}")["session"]["started_at"]
    assert turn["sources"][0]["date"] == started and turn["sources"][0]["title"] == "Garden"
    assert "blight" in turn["response"]

    memories = api.ok("GET", "/memories?q=tomato%20leaves&k=3")["memories"]
    assert memories[0]["session_id"] == garden
    # Another user (local mode's X-User-Id) recalls none of it.
    other = api.new_session("Mine", user="bob")
    assert api.say(other, "/past what was wrong with my tomatoes?", user="bob")["sources"] == []
    assert api.call("GET", f"/sessions/{garden}", user="bob")[0] == 404


def test_a_restart_keeps_sessions_and_neither_reprocesses_nor_skips_records(
    world: World, dynamodb_local: DynamoDBLocal
) -> None:
    api = world.api
    before = _chat(world, "Before", ["first session about sourdough starters"])
    api.end(before)
    first, consolidated_1, compacted_1 = _recording_poller(world)
    first.drain()
    assert api.status(before) == "CONSOLIDATED"

    dynamodb_local.stop()
    dynamodb_local.start()
    after = _chat(world, "After", ["second session about bicycle repairs", "the chain slips"])
    api.end(after)
    second, consolidated_2, compacted_2 = _recording_poller(world)
    second.drain()

    assert api.status(before) == "CONSOLIDATED"  # kept across the restart
    assert len(api.ok("GET", f"/sessions/{before}/messages")["messages"]) == 1
    assert api.status(after) == "CONSOLIDATED"
    assert not consolidated_1.sequences & consolidated_2.sequences
    assert not compacted_1.sequences & compacted_2.sequences
    assert consolidated_2.sessions() == [after]
    # Every turn written after the restart reached compaction, once.
    assert compacted_2.sessions() == [after, after]


def test_a_redelivered_batch_leaves_one_long_term_entry_per_session(world: World) -> None:
    api = world.api
    ids = [_chat(world, f"S{i}", [f"note {i} about the quarterly budget"]) for i in range(2)]
    world.poller.drain()  # checkpoints every record up to here
    checkpoint = world.stack.paths["checkpoints"]
    saved = checkpoint.with_suffix(".before")
    shutil.copy(checkpoint, saved)
    for session_id in ids:
        api.end(session_id)
    first, consolidated, _ = _recording_poller(world)
    first.drain()
    keys = {s: _memory_keys(world, s) for s in ids}
    assert all(k.count(f"{s}#summary") == 1 for s, k in keys.items())

    # The process died after the handler succeeded, before its checkpoint reached the disk.
    shutil.copy(saved, checkpoint)
    replay, consolidated_again, _ = _recording_poller(world)
    replay.drain()
    assert consolidated_again.sessions() == consolidated.sessions() == ids  # delivered again
    assert {s: _memory_keys(world, s) for s in ids} == keys

    # A redelivery can also find the session ENDED again (its first run failed to mark it):
    # then the work is redone, and its documents overwrite the first ones.
    for session_id in ids:
        world.dynamodb().update_item(
            TableName=wiring.settings().sessions_table,
            Key={"session_id": {"S": session_id}},
            UpdateExpression="SET #s = :e",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":e": {"S": "ENDED"}},
        )
    from local.lambda_context import LocalLambdaContext

    handler = load_handler("handlers.consolidate.handler")
    for event in consolidated.events:
        assert handler(event, LocalLambdaContext("consolidate")) == {"batchItemFailures": []}
    assert all(api.status(s) == "CONSOLIDATED" for s in ids)
    assert {s: _memory_keys(world, s) for s in ids} == keys


def test_a_poisoned_record_is_retried_a_bounded_number_of_times_then_dead_lettered(
    world: World,
) -> None:
    api = world.api
    good_1 = _chat(world, "Good 1", ["a fine conversation"])
    poison = _chat(world, "Poison", ["this one breaks the handler"])
    good_2 = _chat(world, "Good 2", ["another fine conversation"])
    for session_id in (good_1, poison, good_2):
        api.end(session_id)
    poller, consolidate, _ = _recording_poller(world, poison=poison)
    poller.drain()

    assert api.status(good_1) == api.status(good_2) == "CONSOLIDATED"
    assert api.status(poison) == "ENDED"
    alone = [
        b for b in consolidate.batches if len(b) == 1 and b[0] in _ended_seq(consolidate, poison)
    ]
    assert len(alone) == 1 + poller.mappings[0].max_retry_attempts
    [letter] = poller.dead_letters.entries()
    assert [r["keys"]["session_id"]["S"] for r in letter["records"]] == [poison]
    assert letter["error"] == f"RuntimeError: cannot handle {poison}"
    # Records after it keep flowing.
    later = _chat(world, "Later", ["still working"])
    api.end(later)
    poller.drain()
    assert api.status(later) == "CONSOLIDATED"


def _ended_seq(recording: Recording, session_id: str) -> set[str]:
    return {
        r["dynamodb"]["SequenceNumber"]
        for e in recording.events
        for r in e["Records"]
        if _session(r) == session_id
    }


def test_a_session_whose_consolidation_keeps_failing_is_marked_failed_without_blocking(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scripts.redrive import redrive

    api = world.api
    broken = _chat(world, "Broken", ["the index refuses this one"])
    fine = _chat(world, "Fine", ["this one is indexed"])
    upsert: Callable[..., Any] = EmbeddedLongTermIndex.upsert

    def flaky_upsert(self: EmbeddedLongTermIndex, index: str, docs: Any) -> None:
        if any(d.session_id == broken for d in docs):
            raise OSError("disk full")
        upsert(self, index, docs)

    monkeypatch.setattr(EmbeddedLongTermIndex, "upsert", flaky_upsert)
    api.end(broken)
    api.end(fine)
    world.poller.drain()
    assert api.status(fine) == "CONSOLIDATED"
    assert api.status(broken) == "FAILED"  # by its last attempt: nothing dead-lettered
    assert world.poller.dead_letters.entries() == []

    monkeypatch.setattr(EmbeddedLongTermIndex, "upsert", upsert)
    report = redrive(wiring.consolidation_deps(), now=datetime.now(UTC))
    assert report == {broken: "consolidated"}
    assert api.status(broken) == "CONSOLIDATED"


@pytest.mark.parametrize("delete", ["DELETE /sessions/{id}", "DELETE /memories"])
def test_an_imported_session_deleted_just_after_it_ended_is_never_recalled(
    world: World, delete: str
) -> None:
    """The bug report's round, on local mode: import 120 turns, end, delete at once. Before the
    fix, /memories and /past still found the deleted session 30 s later (10 of 10 rounds)."""
    api = world.api
    messages = [
        {"input": f"Day {i}: the greyhound Biscuit walked by the river", "response": "Lovely."}
        for i in range(120)
    ]
    sid = api.ok("POST", "/sessions/import", {"messages": messages})["session"]["session_id"]
    api.end(sid)
    method, path = delete.split()
    assert api.call(method, path.replace("{id}", sid))[0] == 204
    assert api.ok("GET", "/deletions")["complete"] is False
    world.poller.drain()  # consolidation and the purge, in the order the streams give them

    assert api.ok("GET", "/memories?q=greyhound%20Biscuit%20river")["memories"] == []
    now = api.new_session("Later")
    assert api.say(now, "/past where did Biscuit walk?")["sources"] == []
    assert api.call("GET", f"/sessions/{sid}")[0] == 404
    assert _memory_keys(world, sid) == []
    client = world.dynamodb()
    turns = client.query(
        TableName=wiring.settings().conversations_table,
        KeyConditionExpression="session_id = :s",
        ExpressionAttributeValues={":s": {"S": sid}},
    )["Items"]
    assert turns == []
    api.call("DELETE", f"/sessions/{now}")
    world.poller.drain()
    assert api.ok("GET", "/deletions")["complete"] is True


def test_local_mode_leaves_the_environment_as_it_found_it(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: `make ingest` in a local-mode test (test_terminal_chat) applies local
    mode's defaults to the process's environment, and POWERTOOLS_METRICS_DISABLED stayed there
    for the worker's later tests (a metric test saw no metrics)."""
    from local.config import apply_local_defaults
    from tests.integration.helpers import local_world

    before = dict(os.environ)
    opened = local_world(dynamodb_local, tmp_path, monkeypatch)
    next(opened)
    apply_local_defaults()  # what local/ingest.py's main does
    assert os.environ.get("POWERTOOLS_METRICS_DISABLED") == "true"
    opened.close()
    assert os.environ.get("POWERTOOLS_METRICS_DISABLED") == before.get(
        "POWERTOOLS_METRICS_DISABLED"
    )
    assert dict(os.environ) == before
