"""A DynamoDB Streams poller with the semantics of Lambda's event source mappings.

For each mapping (table stream -> handler) and each shard, in sequence-number order:
records that do not match the mapping's filter patterns are dropped before invoking (Lambda
event filtering); the rest go to the handler in batches of up to `batch_size`, in the Lambda
DynamoDB event shape. A reply with `batchItemFailures` retries from the first failed record;
a raised exception bisects the batch (without using the retry budget); a record still failing
after `max_retry_attempts` retries is written, with its batch, to a dead-letter file, and the
shard moves on. The last processed sequence number of every shard is checkpointed atomically, so
a restart neither reprocesses nor skips records. Closed shards are read to their end before their
children start (shard rollover).

`StreamPoller.poll_once()` does one step per shard; `drain()` steps until there is nothing left;
`start()` runs it in a thread, as `make run` does.
"""

from __future__ import annotations

import base64
import importlib
import json
import logging
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chatmemory import schema
from chatmemory.streams import matches
from local.lambda_context import LocalLambdaContext

log = logging.getLogger("local.poller")

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass(frozen=True)
class StreamMapping:
    """One event source mapping: which table's stream feeds which handler, and how."""

    name: str
    table: str  # logical table name (schema.TableSpec.logical_name)
    handler: str  # "package.module.function"
    filters: tuple[dict[str, Any], ...] = ()  # any pattern matching lets a record through
    batch_size: int = 10
    max_retry_attempts: int = 2  # retries after the first attempt; -1 retries forever
    bisect_batch_on_error: bool = True
    report_batch_item_failures: bool = True


# The two mappings of the system, exactly as CDK deploys them: chatmemory.schema's triggers
# (handler, filter pattern, batch size, retries), bisection and item failure reports. (A session
# whose consolidation keeps failing is marked FAILED by its third attempt, ConsolidationPolicy's
# max_attempts, before the retries run out: such records do not reach the dead letters.)
# Not emulated: MaximumRecordAge (a laptop that slept should still consolidate its sessions).
MAPPINGS: tuple[StreamMapping, ...] = tuple(
    StreamMapping(
        name=trigger.name,
        table=trigger.table.logical_name,
        handler=trigger.handler,
        filters=(trigger.filter,),
        batch_size=trigger.batch_size,
        max_retry_attempts=trigger.retry_attempts,
    )
    for trigger in schema.STREAM_TRIGGERS
)


def load_handler(dotted: str) -> Handler:
    """Import `package.module.function` (the Lambda handler string)."""
    module, _, function = dotted.rpartition(".")
    return getattr(importlib.import_module(module), function)


# --- checkpoints and dead letters -----------------------------------------------------------


class CheckpointStore:
    """Last processed sequence number per mapping and shard, in one JSON file replaced
    atomically (write a temporary file, fsync, rename), so a crash never leaves half a file."""

    VERSION = 1

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._shards: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            self._shards = dict(data.get("shards", {}))

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self._shards.get(key)
            return dict(entry) if entry else None

    def shard_keys(self) -> list[str]:
        with self._lock:
            return list(self._shards)

    def set(self, key: str, **entry: Any) -> None:
        with self._lock:
            self._shards[key] = {**self._shards.get(key, {}), **entry}
            self._write()

    def forget(self, keys: Iterable[str]) -> None:
        with self._lock:
            gone = [k for k in keys if self._shards.pop(k, None) is not None]
            if gone:
                self._write()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"version": self.VERSION, "shards": self._shards}, indent=1)
        fd, tmp = tempfile.mkstemp(prefix=".checkpoints-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(body)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class DeadLetterFile:
    """The on-failure destination: one JSON line per discarded batch (AWS's record of the
    batch, plus the records' identifiers and the error), appended and fsynced."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def write(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(json.dumps(entry, sort_keys=True) + "\n")
                out.flush()
                os.fsync(out.fileno())

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]


# --- records in the Lambda event shape ------------------------------------------------------


def lambda_record(raw: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as Lambda delivers it: creation time in epoch seconds, binary values
    base64-encoded, and the stream ARN."""
    dynamodb = dict(raw.get("dynamodb", {}))
    created = dynamodb.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        dynamodb["ApproximateCreationDateTime"] = created.timestamp()
    record: dict[str, Any] = {
        "eventID": raw.get("eventID"),
        "eventName": raw.get("eventName"),
        "eventVersion": raw.get("eventVersion", "1.1"),
        "eventSource": raw.get("eventSource", "aws:dynamodb"),
        "awsRegion": raw.get("awsRegion"),
        "dynamodb": _jsonable(dynamodb),
        "eventSourceARN": stream_arn,
    }
    if "userIdentity" in raw:
        record["userIdentity"] = _jsonable(raw["userIdentity"])
    return record


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    return value


def sequence_number(record: Mapping[str, Any]) -> str:
    return str(record["dynamodb"]["SequenceNumber"])


def _seq_key(sequence: str) -> int:
    return int(sequence)


# --- the poller ------------------------------------------------------------------------------


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
        self._shards: dict[str, dict[str, _Shard]] = {m.name: {} for m in self.mappings}
        self._refreshed_at: dict[str, float] = {}
        self._missing_tables: set[str] = set()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.invocations = 0

    # --- public stepping API -----------------------------------------------------------------

    def poll_once(self) -> int:
        """One step per ready shard of every mapping: read, filter, invoke one batch, checkpoint.
        Returns how many records were invoked or checkpointed (0: nothing to do right now)."""
        progress = 0
        for mapping in self.mappings:
            now = time.monotonic()
            if now - self._refreshed_at.get(mapping.name, -math.inf) >= self._refresh_every:
                self._refresh_shards(mapping)
            for shard in self._ready_shards(mapping):
                outcome = self._step(shard)
                progress += outcome.invoked + outcome.moved
        return progress

    def drain(self, timeout: float = 60.0) -> None:
        """Step until every shard is caught up and no retry is pending (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        self._refreshed_at.clear()
        idle = 0
        while idle < 2:
            if time.monotonic() > deadline:
                raise TimeoutError(f"stream poller not drained within {timeout} s")
            if self.poll_once():
                idle = 0
                continue
            waiting = [s.not_before for s in self._all_shards() if s.buffer and not s.finished]
            if waiting:
                time.sleep(max(min(waiting) - time.monotonic(), 0.0) + 0.001)
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
                    self._stop.wait(interval)

        self._thread = threading.Thread(target=loop, name="stream-poller", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the batch in progress (its checkpoint is written before the thread ends)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    # --- shards ----------------------------------------------------------------------------

    def _all_shards(self) -> list[_Shard]:
        return [s for shards in self._shards.values() for s in shards.values()]

    def _refresh_shards(self, mapping: StreamMapping) -> None:
        self._refreshed_at[mapping.name] = time.monotonic()
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
        if time.monotonic() < shard.not_before:
            return _Outcome()
        if not self._has_full_batch(shard):
            self._read(shard)
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
            if seen and _seq_key(sequence_number(record)) <= _seq_key(seen):
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
        return self._streams.get_shard_iterator(**kwargs)["ShardIterator"]

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
        context = LocalLambdaContext(function_name=mapping.name)
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
        error = f"batchItemFailures: {', '.join(reported) or 'invalid response'}"
        return self._retry_or_discard(shard, batch[failed_at:], error, invoked=len(batch))

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
            shard.not_before = time.monotonic() + delay
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
        """Send the batch's description to the dead-letter file, as Lambda's on-failure
        destination receives it, with each record's identifiers and the error."""
        created = [r["dynamodb"].get("ApproximateCreationDateTime") for r in batch]
        entry = {
            "version": "1.0",
            "timestamp": datetime.now(UTC).isoformat(),
            "requestContext": {
                "functionArn": LocalLambdaContext(shard.mapping.name).invoked_function_arn,
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": shard.failures,
            },
            "responseContext": {"functionError": error},
            "DDBStreamBatchInfo": {
                "shardId": shard.shard_id,
                "startSequenceNumber": sequence_number(batch[0]),
                "endSequenceNumber": sequence_number(batch[-1]),
                "approximateArrivalOfFirstRecord": _iso(created[0]),
                "approximateArrivalOfLastRecord": _iso(created[-1]),
                "batchSize": len(batch),
                "streamArn": shard.stream_arn,
            },
            "mapping": shard.mapping.name,
            "error": error,
            "records": [
                {
                    "eventID": r.get("eventID"),
                    "eventName": r.get("eventName"),
                    "sequenceNumber": sequence_number(r),
                    "keys": r["dynamodb"].get("Keys"),
                }
                for r in batch
            ],
        }
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


def _iso(epoch: Any) -> str | None:
    if isinstance(epoch, int | float):
        return datetime.fromtimestamp(epoch, UTC).isoformat()
    return None


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
