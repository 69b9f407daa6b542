"""The event source mapping emulator: reads each mapping's shards, filters, invokes the handler
in batches, retries, bisects, dead-letters and checkpoints (see the package docstring)."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatmemory.streams import matches
from local.lambda_context import Handler, LocalLambdaContext, load_handler
from local.poller.checkpoints import CheckpointStore
from local.poller.dead_letters import DeadLetterFile, dead_letter_entry
from local.poller.mappings import MAPPINGS, StreamMapping
from local.poller.records import lambda_record, sequence_number, sequence_order

log = logging.getLogger("local.poller")


@dataclass
class _Shard:
    mapping: StreamMapping
    stream_arn: str
    shard_id: str
    parent_id: str | None
    checkpoint: str | None = None  # last processed (or discarded) sequence number
    read_position: str | None = None  # last sequence number read into the buffer
    iterator: str | None = None
    exhausted: bool = False  # closed shard read to its end
    finished: bool = False
    buffer: list[dict[str, Any]] = field(default_factory=list)
    # Sizes of the next batches after a bisection ([2, 2] after a batch of 4 failed).
    plan: list[int] = field(default_factory=list)
    retry_head: str | None = None  # first record of the batch being retried
    failures: int = 0
    not_before: float = 0.0  # backoff after a failed batch
    # Reads of an open shard that found nothing new back off (StreamPoller's idle_backoff):
    # the next read of this shard not before `read_after`, `idle_wait` after the last one.
    idle_wait: float = 0.0
    read_after: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.mapping.name}|{self.stream_arn}|{self.shard_id}"


@dataclass
class _Outcome:
    invoked: int = 0  # records sent to the handler
    moved: int = 0  # records checkpointed (processed, filtered out or dead-lettered)


class StreamPoller:
    """Event source mappings for the project's table streams, run locally. Thread-compatible:
    one thread steps it (`poll_once`, `drain`, or the thread from `start()`)."""

    def __init__(
        self,
        dynamodb: Any,
        streams: Any,
        *,
        checkpoint_path: Path | str,
        dead_letter_path: Path | str,
        mappings: Sequence[StreamMapping] = MAPPINGS,
        table_names: Mapping[str, str] | None = None,
        handlers: Mapping[str, Handler] | None = None,
        retry_backoff_seconds: float = 0.0,
        max_backoff_seconds: float = 10.0,
        shard_refresh_seconds: float = 5.0,
        records_per_read: int = 1000,
        idle_backoff_seconds: float = 0.25,
        max_idle_backoff_seconds: float = 16.0,
        max_shard_refresh_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        before_reading: Callable[[], None] | None = None,
    ) -> None:
        self._dynamodb = dynamodb
        self._streams = streams
        self.mappings = tuple(mappings)
        self._tables = dict(table_names or {})
        self._handlers: dict[str, Handler] = dict(handlers or {})
        self.checkpoints = CheckpointStore(checkpoint_path)
        self.dead_letters = DeadLetterFile(dead_letter_path)
        self._backoff = retry_backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._refresh_every = shard_refresh_seconds
        self._per_read = records_per_read
        # A shard whose read found nothing new is read again after idle_backoff_seconds, then
        # twice as long after each empty read, up to max_idle_backoff_seconds; a read that
        # finds records resets it. The shards of a mapping are listed again (new shards, a
        # recreated table) every shard_refresh_seconds, and while all of them are backing off
        # twice as long after each listing, up to max_shard_refresh_seconds. DynamoDB Local's
        # stream reads and listings cost more as its database grows, and reading and listing
        # every stream several times a second kept it busy while nothing happened
        # (bench/local_idle.py). `wake()` resets both for every mapping: local mode wakes the
        # poller after each API request and idle sweep, and the poller itself after invoking a
        # handler (whose writes may feed another stream), so what they wrote is read at once,
        # as with no backoff; only other writers (an operator's tool) wait up to the longest.
        self._idle_backoff = idle_backoff_seconds
        self._max_idle_backoff = max(max_idle_backoff_seconds, idle_backoff_seconds)
        self._max_refresh = max(max_shard_refresh_seconds, shard_refresh_seconds)
        self._refresh_wait: dict[str, float] = {}
        self._woken = threading.Event()
        self._clock = clock
        # Called before each shard is listed or read (local mode: waits, a bounded time, while
        # a streamed answer has not sent its first chunk; local/gateway StartingAnswers).
        self._before_reading = before_reading or (lambda: None)
        self._shards: dict[str, dict[str, _Shard]] = {m.name: {} for m in self.mappings}
        self._refreshed_at: dict[str, float] = {}
        self._missing_tables: set[str] = set()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.invocations = 0

    # --- public stepping API -----------------------------------------------------------------

    def wake(self) -> None:
        """Read every shard at the next step, whatever its idle backoff (something was just
        written: a request of local mode's gateway). Any thread may call it."""
        self._woken.set()

    def poll_once(self) -> int:
        """One step per ready shard of every mapping: read, filter, invoke one batch, checkpoint.
        Returns how many records were invoked or checkpointed (0: nothing to do right now)."""
        if self._woken.is_set():
            self._woken.clear()
            self._refresh_wait.clear()
            for shard in self._all_shards():
                shard.idle_wait = shard.read_after = 0.0
        progress = invoked = 0
        for mapping in self.mappings:
            now = self._clock()
            wait = self._refresh_wait.get(mapping.name, self._refresh_every)
            if now - self._refreshed_at.get(mapping.name, -math.inf) >= wait:
                self._before_reading()
                self._refresh_shards(mapping)
                ready = self._ready_shards(mapping)
                # While every shard of the mapping backs off, list them less often too.
                idle = bool(ready) and all(s.idle_wait > 0 for s in ready)
                self._refresh_wait[mapping.name] = (
                    min(wait * 2, self._max_refresh) if idle else self._refresh_every
                )
            for shard in self._ready_shards(mapping):
                self._before_reading()
                outcome = self._step(shard)
                progress += outcome.invoked + outcome.moved
                invoked += outcome.invoked
        if invoked:
            self.wake()  # what the handlers wrote may feed a stream: read it at once
        return progress

    def drain(self, timeout: float = 60.0) -> None:
        """Step until every shard is caught up and no retry is pending (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        self._refreshed_at.clear()
        idle = 0
        while idle < 2:
            if time.monotonic() > deadline:
                raise TimeoutError(f"stream poller not drained within {timeout} s")
            self.wake()  # every shard read at each step: drained means read to its end now
            if self.poll_once():
                idle = 0
                continue
            waiting = [s.not_before for s in self._all_shards() if s.buffer and not s.finished]
            if waiting:
                time.sleep(max(min(waiting) - self._clock(), 0.0) + 0.001)
                continue
            idle += 1
            self._refreshed_at.clear()  # the second idle round also looks for new shards

    def start(self, interval: float = 0.25) -> threading.Thread:
        """Poll in a daemon thread (Lambda polls each shard four times a second)."""
        self._stop.clear()

        def loop() -> None:
            last_error = ""
            while not self._stop.is_set():
                try:
                    busy = self.poll_once()
                    last_error = ""
                except Exception as error:  # DynamoDB Local restarting, say: keep polling
                    if str(error) != last_error:
                        log.warning("stream poller: %s; retrying", error)
                    last_error, busy = str(error), 0
                    self._stop.wait(2.0)
                if not busy:
                    # Woken early by wake(): what a request just wrote is read at once.
                    self._woken.wait(interval)

        self._thread = threading.Thread(target=loop, name="stream-poller", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the batch in progress (its checkpoint is written before the thread ends)."""
        self._stop.set()
        self._woken.set()  # out of its wait at once
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    # --- shards ----------------------------------------------------------------------------

    def _all_shards(self) -> list[_Shard]:
        return [s for shards in self._shards.values() for s in shards.values()]

    def _refresh_shards(self, mapping: StreamMapping) -> None:
        self._refreshed_at[mapping.name] = self._clock()
        table = self._tables.get(mapping.table, mapping.table)
        try:
            described = self._dynamodb.describe_table(TableName=table)["Table"]
        except self._dynamodb.exceptions.ResourceNotFoundException:
            if table not in self._missing_tables:
                log.warning("table %s does not exist (yet); %s waits for it", table, mapping.name)
                self._missing_tables.add(table)
            return
        self._missing_tables.discard(table)
        stream_arn = described.get("LatestStreamArn")
        if not stream_arn:
            return
        listed = self._describe_shards(stream_arn)
        known = self._shards[mapping.name]
        # A recreated table has a new stream: forget the old one's shards and checkpoints.
        for key in [k for k, s in known.items() if s.stream_arn != stream_arn]:
            del known[key]
        for shard_id, parent_id in listed:
            if shard_id in known:
                continue
            shard = _Shard(mapping, stream_arn, shard_id, parent_id)
            saved = self.checkpoints.get(shard.key)
            if saved:
                shard.checkpoint = saved.get("sequence_number")
                shard.finished = bool(saved.get("closed"))
            known[shard_id] = shard
        # Checkpoints of shards the stream no longer lists (trimmed, or an old stream).
        live = {s.key for s in known.values()}
        prefix = f"{mapping.name}|"
        self.checkpoints.forget(
            k for k in self.checkpoints.shard_keys() if k.startswith(prefix) and k not in live
        )

    def _describe_shards(self, stream_arn: str) -> list[tuple[str, str | None]]:
        shards: list[tuple[str, str | None]] = []
        kwargs: dict[str, Any] = {"StreamArn": stream_arn}
        while True:
            description = self._streams.describe_stream(**kwargs)["StreamDescription"]
            shards += [(s["ShardId"], s.get("ParentShardId")) for s in description["Shards"]]
            last = description.get("LastEvaluatedShardId")
            if not last:
                return shards
            kwargs["ExclusiveStartShardId"] = last

    def _ready_shards(self, mapping: StreamMapping) -> list[_Shard]:
        """Unfinished shards whose parent (if the stream still lists it) is finished: records
        of one item stay in order across a shard rollover."""
        known = self._shards[mapping.name]
        ready = []
        for shard in known.values():
            parent = known.get(shard.parent_id or "")
            if not shard.finished and (parent is None or parent.finished):
                ready.append(shard)
        return ready

    # --- one step of one shard ---------------------------------------------------------------

    def _step(self, shard: _Shard) -> _Outcome:
        now = self._clock()
        if now < shard.not_before:
            return _Outcome()
        if not self._has_full_batch(shard) and now >= shard.read_after:
            before = shard.read_position
            self._read(shard)
            if shard.read_position != before or shard.exhausted:
                shard.idle_wait = shard.read_after = 0.0
            else:  # nothing new: read this shard again later, and later each time
                shard.idle_wait = min(
                    max(shard.idle_wait * 2, self._idle_backoff), self._max_idle_backoff
                )
                shard.read_after = now + shard.idle_wait
        if not shard.buffer:
            if shard.exhausted:
                shard.finished = True
                self.checkpoints.set(
                    shard.key,
                    sequence_number=shard.checkpoint,
                    closed=True,
                    mapping=shard.mapping.name,
                    stream_arn=shard.stream_arn,
                    shard_id=shard.shard_id,
                )
                self._refreshed_at.pop(shard.mapping.name, None)  # children may be listed now
                return _Outcome(moved=1)
            return _Outcome()
        batch, walked = self._next_batch(shard)
        if not batch:  # every buffered record filtered out: checkpoint past them
            self._advance(shard, walked)
            return _Outcome(moved=walked)
        return self._invoke(shard, batch, walked)

    @staticmethod
    def _limit(shard: _Shard) -> int:
        return shard.plan[0] if shard.plan else shard.mapping.batch_size

    def _has_full_batch(self, shard: _Shard) -> bool:
        wanted = sum(1 for r in shard.buffer if self._matches(shard.mapping, r))
        return wanted >= self._limit(shard)

    def _read(self, shard: _Shard) -> None:
        if shard.exhausted:
            return
        errors = self._streams.exceptions
        try:
            if shard.iterator is None:
                shard.iterator = self._iterator(shard)
            answer = self._streams.get_records(ShardIterator=shard.iterator, Limit=self._per_read)
        except errors.ExpiredIteratorException:
            shard.iterator = None  # iterators live 15 minutes: get a new one next step
            return
        except errors.TrimmedDataAccessException:
            # DynamoDB Local also says this for an iterator taken on a shard still empty then;
            # only a position already read from means records were lost (older than 24 h).
            if shard.read_position or shard.checkpoint:
                log.warning(
                    "%s: records after %s in %s were trimmed (older than 24 h); reading from "
                    "the oldest record left",
                    shard.mapping.name,
                    shard.read_position or shard.checkpoint,
                    shard.shard_id,
                )
            shard.iterator = self._iterator(shard, trim_horizon=True)
            return
        except errors.ResourceNotFoundException:
            shard.finished = True
            self.checkpoints.forget([shard.key])
            return
        seen = shard.read_position or shard.checkpoint
        for raw in answer.get("Records", []):
            record = lambda_record(raw, shard.stream_arn)
            if seen and sequence_order(sequence_number(record)) <= sequence_order(seen):
                continue  # read again after re-positioning the iterator
            shard.buffer.append(record)
            shard.read_position = sequence_number(record)
        shard.iterator = answer.get("NextShardIterator")
        if shard.iterator is None:
            shard.exhausted = True

    def _iterator(self, shard: _Shard, *, trim_horizon: bool = False) -> str:
        position = None if trim_horizon else (shard.read_position or shard.checkpoint)
        kwargs: dict[str, Any] = {"StreamArn": shard.stream_arn, "ShardId": shard.shard_id}
        if position:
            kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=position)
        else:
            # The mapping's starting position: every record the stream still holds.
            kwargs["ShardIteratorType"] = "TRIM_HORIZON"
        iterator: str = self._streams.get_shard_iterator(**kwargs)["ShardIterator"]
        return iterator

    @staticmethod
    def _matches(mapping: StreamMapping, record: Mapping[str, Any]) -> bool:
        return not mapping.filters or any(matches(p, dict(record)) for p in mapping.filters)

    def _next_batch(self, shard: _Shard) -> tuple[list[dict[str, Any]], int]:
        """Up to a batch of matching records from the front of the buffer, and how many buffered
        records that walked over (the filtered-out ones are checkpointed with the batch)."""
        batch: list[dict[str, Any]] = []
        walked = 0
        limit = self._limit(shard)
        for record in shard.buffer:
            if len(batch) >= limit:
                break
            walked += 1
            if self._matches(shard.mapping, record):
                batch.append(record)
        return batch, walked

    def _advance(self, shard: _Shard, count: int) -> None:
        """Checkpoint the first `count` buffered records as done."""
        if count <= 0:
            return
        done, shard.buffer = shard.buffer[:count], shard.buffer[count:]
        shard.checkpoint = sequence_number(done[-1])
        self.checkpoints.set(
            shard.key,
            sequence_number=shard.checkpoint,
            closed=False,
            mapping=shard.mapping.name,
            stream_arn=shard.stream_arn,
            shard_id=shard.shard_id,
        )

    def load_handlers(self) -> None:
        """Import every mapping's handler now (at start, not on the first record)."""
        for mapping in self.mappings:
            self._handler(mapping)

    def _handler(self, mapping: StreamMapping) -> Handler:
        if mapping.name not in self._handlers:
            self._handlers[mapping.name] = load_handler(mapping.handler)
        return self._handlers[mapping.name]

    def _invoke(self, shard: _Shard, batch: list[dict[str, Any]], walked: int) -> _Outcome:
        mapping = shard.mapping
        context = LocalLambdaContext(
            function_name=mapping.name, timeout_seconds=mapping.timeout_seconds
        )
        self.invocations += 1
        try:
            response = self._handler(mapping)({"Records": batch}, context)
        except Exception as error:  # noqa: BLE001 - a function error, handled as Lambda does
            return self._function_error(shard, batch, walked, f"{type(error).__name__}: {error}")
        failed_at = self._first_failure(mapping, batch, response)
        if failed_at is None:
            self._settle(shard, batch_done=True)
            self._advance(shard, walked)
            return _Outcome(invoked=len(batch), moved=walked)
        # Records before the first failure are done; the retry starts at the failed record.
        if shard.plan:
            shard.plan[0] = len(batch) - failed_at
        self._advance(shard, _position(shard.buffer, batch[failed_at]))
        reported = _failure_ids(response)
        reason = f"batchItemFailures: {', '.join(reported) or 'invalid response'}"
        return self._retry_or_discard(shard, batch[failed_at:], reason, invoked=len(batch))

    def _first_failure(
        self, mapping: StreamMapping, batch: list[dict[str, Any]], response: Any
    ) -> int | None:
        """Index of the first failed record per the partial batch response, or None. As on
        Lambda, an identifier that is empty or not in the batch fails the whole batch."""
        if not mapping.report_batch_item_failures or not isinstance(response, dict):
            return None
        failures = response.get("batchItemFailures")
        if not failures:
            return None
        positions = {sequence_number(r): i for i, r in enumerate(batch)}
        found = []
        for failure in failures:
            item = failure.get("itemIdentifier") if isinstance(failure, dict) else None
            if not isinstance(item, str) or item not in positions:
                return 0
            found.append(positions[item])
        return min(found)

    def _function_error(
        self, shard: _Shard, batch: list[dict[str, Any]], walked: int, error: str
    ) -> _Outcome:
        log.warning("%s: handler raised on %d record(s): %s", shard.mapping.name, len(batch), error)
        if shard.mapping.bisect_batch_on_error and len(batch) > 1:
            # Split in two and retry each half; splitting does not use the retry budget.
            first = math.ceil(len(batch) / 2)
            shard.plan[:1] = [first, len(batch) - first]
            return _Outcome(invoked=len(batch))
        return self._retry_or_discard(shard, batch, error, invoked=len(batch))

    def _retry_or_discard(
        self, shard: _Shard, batch: list[dict[str, Any]], error: str, *, invoked: int
    ) -> _Outcome:
        head = sequence_number(batch[0])
        if shard.retry_head != head:
            shard.retry_head, shard.failures = head, 0
        shard.failures += 1
        retries_left = shard.mapping.max_retry_attempts < 0 or (
            shard.failures <= shard.mapping.max_retry_attempts
        )
        if retries_left:
            delay = min(self._backoff * 2 ** (shard.failures - 1), self._max_backoff)
            shard.not_before = self._clock() + delay
            return _Outcome(invoked=invoked)
        self._discard(shard, batch, error)
        through = _position(shard.buffer, batch[-1]) + 1
        self._settle(shard, batch_done=True)
        self._advance(shard, through)
        return _Outcome(invoked=invoked, moved=through)

    def _settle(self, shard: _Shard, *, batch_done: bool) -> None:
        shard.retry_head, shard.failures, shard.not_before = None, 0, 0.0
        if batch_done and shard.plan:
            shard.plan.pop(0)

    def _discard(self, shard: _Shard, batch: list[dict[str, Any]], error: str) -> None:
        """Send the batch's description to the dead-letter file."""
        entry = dead_letter_entry(
            mapping=shard.mapping.name,
            shard_id=shard.shard_id,
            stream_arn=shard.stream_arn,
            batch=batch,
            attempts=shard.failures,
            error=error,
        )
        self.dead_letters.write(entry)
        log.warning(
            "%s: %d record(s) from %s sent to %s after %d attempt(s): %s",
            shard.mapping.name,
            len(batch),
            sequence_number(batch[0]),
            self.dead_letters.path,
            shard.failures,
            error,
        )


def _position(buffer: list[dict[str, Any]], record: dict[str, Any]) -> int:
    return next(i for i, r in enumerate(buffer) if r is record)


def _failure_ids(response: Any) -> list[str]:
    failures = response.get("batchItemFailures") if isinstance(response, dict) else None
    return [str(f.get("itemIdentifier")) for f in failures or [] if isinstance(f, dict)]


def default_poller(
    settings: Any, *, checkpoint_path: Path | str, dead_letter_path: Path | str, **options: Any
) -> StreamPoller:
    """The poller of every mapping in schema.STREAM_TRIGGERS, on the tables named by Settings."""
    from chatmemory import wiring
    from local.dynamodb_local import table_names

    endpoint = settings.dynamodb_endpoint
    return StreamPoller(
        wiring.aws_client("dynamodb", endpoint),
        wiring.aws_client("dynamodbstreams", endpoint),
        checkpoint_path=checkpoint_path,
        dead_letter_path=dead_letter_path,
        table_names=table_names(settings),
        **options,
    )
