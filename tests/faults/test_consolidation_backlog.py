"""Consolidation that falls behind loses no session (local mode: DynamoDB Local, the real
consolidation handler, the sweeper's service on a clock the test moves).

Sessions end faster than consolidation runs: the sessions stream delivers at most a few
records a tick to the consolidation handler (its concurrency, bounded by the model quota), a
record older than the mapping's maximum age is discarded (as Lambda does, to the dead-letter
queue), and some records go to the dead-letter queue on their own (a run that crashed until its
retries ran out). The sessions whose records were lost stay ENDED in the sweeper's index, which
hands them back to consolidation; in the end every one is CONSOLIDATED, none FAILED.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.services.background.maintenance import SweepPass, SweepPolicy, sweep
from chatmemory.streams import matches
from local.lambda_context import LocalLambdaContext, load_handler
from local.poller import lambda_record
from tests.fakes import FakeEmbedder, FakeSummarizer
from tests.integration.helpers import World

pytestmark = pytest.mark.integration

SESSIONS = 16
PER_TICK = 2  # consolidations a tick: far fewer than the sessions that end at once
MAX_AGE_TICKS = 3  # a record not delivered within 3 ticks is discarded
TICK = timedelta(minutes=10)
DEAD_LETTERED = 3  # records whose delivery crashed until the mapping gave up


class SessionsStream:
    """The sessions table's stream as an event source mapping reads it: new records since the
    last read, each with the tick it arrived at."""

    def __init__(self, world: World) -> None:
        self._client = wiring.aws_client("dynamodbstreams", world.endpoint)
        table = wiring.settings().sessions_table
        self._arn = world.dynamodb().describe_table(TableName=table)["Table"]["LatestStreamArn"]
        self._iterators: dict[str, str] = {}

    def new_records(self) -> list[dict[str, Any]]:
        shards = self._client.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]
        found: list[dict[str, Any]] = []
        for shard in shards:
            iterator = (
                self._iterators.get(shard["ShardId"])
                or self._client.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            )
            answer = self._client.get_records(ShardIterator=iterator)
            self._iterators[shard["ShardId"]] = answer["NextShardIterator"]
            found += [lambda_record(r, self._arn) for r in answer["Records"]]
        return sorted(found, key=lambda r: int(r["dynamodb"]["SequenceNumber"]))


def _consolidation_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if any(matches(f, r) for f in schema.CONSOLIDATION_TRIGGER.filters)]


def test_sessions_ended_faster_than_consolidation_runs_are_all_consolidated_in_the_end(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = world.api
    sids = []
    for n in range(SESSIONS):
        sid = api.new_session(f"chat {n}")
        # A turn stored with its answer (POST /turns): no model call, the turn all the same.
        text = f"My favourite number is {n} and I keep a diary about it."
        api.ok("POST", f"/sessions/{sid}/turns", {"input": text, "response": "Noted."})
        sids.append(sid)
    stream = SessionsStream(world)
    stream.new_records()  # the sessions' creation and turns: not consolidation's
    for sid in sids:  # all at once, as at midnight
        api.end(sid)
    consolidate = load_handler(schema.CONSOLIDATION_TRIGGER.handler)
    memory = wiring.short_term_memory()
    # The handler as deployed, with quick stand-ins for the models (what is tested is whether
    # each session is consolidated, not how well).
    deps = wiring.consolidation_deps()
    fast = replace(deps, summarizer=FakeSummarizer(), embedder=FakeEmbedder(), extractor=None)
    monkeypatch.setattr(wiring, "consolidation_deps", lambda: fast)

    def status(sid: str) -> str:
        session = memory.get_session(sid)
        return session.status if session is not None else "GONE"

    policy = SweepPolicy(retry_minutes=60, retries_per_sweep=PER_TICK * 2, run=SweepPass(workers=4))
    start = datetime.now(UTC)
    waiting: list[tuple[int, dict[str, Any]]] = []  # (tick it arrived, record)
    expired: set[str] = set()
    dead: set[str] = set()
    delivered: list[str] = []
    oldest_waits: list[float] = []

    for tick in range(60):
        waiting += [(tick, r) for r in _consolidation_records(stream.new_records())]
        # The mapping gives up on records past their maximum age (to the dead-letter queue).
        expired |= {_sid(r) for t, r in waiting if tick - t > MAX_AGE_TICKS}
        waiting = [(t, r) for t, r in waiting if tick - t <= MAX_AGE_TICKS]
        batch, waiting = waiting[:PER_TICK], waiting[PER_TICK:]
        for _, record in batch:
            if len(dead) < DEAD_LETTERED and _sid(record) not in dead:
                dead.add(_sid(record))  # its run crashed every time: dead-lettered, not run
                continue
            context = LocalLambdaContext("consolidate", timeout_seconds=300)
            assert consolidate({"Records": [record]}, context) == {"batchItemFailures": []}
            delivered.append(_sid(record))
        now = start + tick * TICK
        result = sweep(memory, now=now, policy=policy)
        if result.oldest_unconsolidated is not None:
            oldest_waits.append((now - result.oldest_unconsolidated).total_seconds())
        if all(status(sid) == "CONSOLIDATED" for sid in sids):
            break

    statuses = {sid: status(sid) for sid in sids}
    assert set(statuses.values()) == {"CONSOLIDATED"}, statuses
    # Records were lost both ways, and those sessions were consolidated all the same.
    assert expired - set(delivered[: len(expired)]) and len(dead) == DEAD_LETTERED
    assert (expired | dead) <= set(delivered)
    # The alarm's metric saw the backlog, and nothing waits any more.
    assert max(oldest_waits) >= 60 * 60
    assert sweep(memory, now=start + 300 * TICK, policy=policy).oldest_unconsolidated is None


def _sid(record: dict[str, Any]) -> str:
    return str(record["dynamodb"]["Keys"]["session_id"]["S"])
