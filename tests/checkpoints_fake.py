"""InMemoryCheckpointStore: the CheckpointStore port in plain Python, for fast service tests.

It keeps the DynamoDB adapter's promises (tests/contract checks both): values keyed by
(namespace, channel, version) that never change their bytes (Conflict), checkpoints by
(namespace, id), pending writes by (task_id, idx) with the first write kept unless idx is
negative, copies handed out."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Mapping, Sequence

from chatmemory.domain import (
    Blob,
    ChannelBlob,
    CheckpointEntry,
    CheckpointRange,
    CheckpointRef,
    PendingWrite,
    StoredCheckpoint,
)
from chatmemory.errors import Conflict
from chatmemory.schema import CHECKPOINT_CHUNK_BYTES
from tests.contract.reads import ReadMeter

# The table name the fake's reads are counted under (tests/contract/reads.py).
TABLE = "checkpoints"


class InMemoryCheckpointStore:
    def __init__(self, meter: ReadMeter | None = None) -> None:
        self._lock = threading.Lock()
        # What each read hands out, counted as the DynamoDB adapter's items would be.
        self.meter = meter or ReadMeter()
        # session -> (namespace, id) -> checkpoint
        self._checkpoints: dict[str, dict[tuple[str, str], StoredCheckpoint]] = {}
        # session -> (namespace, channel, version) -> value
        self._blobs: dict[str, dict[tuple[str, str, str], Blob]] = {}
        # session -> (namespace, checkpoint id) -> (task_id, idx) -> write
        self._writes: dict[str, dict[tuple[str, str], dict[tuple[str, int], PendingWrite]]] = {}

    def put_checkpoint(self, checkpoint: StoredCheckpoint, blobs: Sequence[ChannelBlob]) -> None:
        with self._lock:
            sid, ns = checkpoint.session_id, checkpoint.checkpoint_ns
            stored = self._blobs.setdefault(sid, {})
            for blob in blobs:
                standing = stored.get((ns, blob.channel, blob.version))
                if standing is not None and standing != blob.value:
                    raise Conflict(f"channel {blob.channel!r} is stored at {blob.version!r}")
            for blob in blobs:
                stored[(ns, blob.channel, blob.version)] = blob.value
            self._checkpoints.setdefault(sid, {})[(ns, checkpoint.checkpoint_id)] = copy.deepcopy(
                checkpoint
            )

    def get_checkpoint(
        self, session_id: str, checkpoint_ns: str, checkpoint_id: str | None
    ) -> StoredCheckpoint | None:
        if checkpoint_id is None:
            newest = self.list_checkpoints(session_id, CheckpointRange(checkpoint_ns), 1)
            if not newest:
                return None
            checkpoint_id = newest[0].checkpoint_id
        with self._lock:
            checkpoint = self._checkpoints.get(session_id, {}).get((checkpoint_ns, checkpoint_id))
            if checkpoint is not None:
                own = len(checkpoint.checkpoint.data) + len(checkpoint.metadata.data)
                self.meter.record(
                    TABLE, 1, _ENTRY_BYTES + len(json.dumps(checkpoint.metadata_json)) + own
                )
            return copy.deepcopy(checkpoint)

    def list_checkpoints(
        self, session_id: str, which: CheckpointRange, limit: int
    ) -> list[CheckpointEntry]:
        with self._lock:
            every = [
                CheckpointEntry(
                    c.session_id,
                    c.checkpoint_ns,
                    c.checkpoint_id,
                    c.parent_checkpoint_id,
                    copy.deepcopy(c.metadata_json),
                    c.created_at,
                    c.size,
                )
                for c in self._checkpoints.get(session_id, {}).values()
            ]
            found = which.select(every)[:limit]
            for c in found:
                self.meter.record(TABLE, 1, _ENTRY_BYTES + len(json.dumps(c.metadata_json)))
            return found

    def blob_sizes(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str]
    ) -> dict[str, int]:
        found = self._stored_blobs(session_id, checkpoint_ns, versions)
        for blob in found.values():  # their first chunks
            self.meter.record(TABLE, 1, _ENTRY_BYTES + min(len(blob.data), CHUNK))
        return {c: len(b.data) for c, b in found.items()}

    def get_blobs(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str]
    ) -> dict[str, Blob]:
        found = self._stored_blobs(session_id, checkpoint_ns, versions)
        for blob in found.values():
            self.meter.record(TABLE, _chunks(blob), _ENTRY_BYTES + len(blob.data))
        return found

    def _stored_blobs(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str]
    ) -> dict[str, Blob]:
        with self._lock:
            stored = self._blobs.get(session_id, {})
            return {
                channel: stored[(checkpoint_ns, channel, version)]
                for channel, version in versions.items()
                if (checkpoint_ns, channel, version) in stored
            }

    def put_writes(self, checkpoint: CheckpointRef, writes: Sequence[PendingWrite]) -> None:
        session_id, checkpoint_ns, checkpoint_id = checkpoint
        with self._lock:
            stored = self._writes.setdefault(session_id, {}).setdefault(
                (checkpoint_ns, checkpoint_id), {}
            )
            for write in writes:
                if write.idx >= 0 and (write.task_id, write.idx) in stored:
                    continue
                stored[(write.task_id, write.idx)] = write

    def get_writes(self, checkpoint: CheckpointRef) -> list[PendingWrite]:
        session_id, checkpoint_ns, checkpoint_id = checkpoint
        with self._lock:
            stored = self._writes.get(session_id, {}).get((checkpoint_ns, checkpoint_id), {})
            for write in stored.values():
                self.meter.record(TABLE, _chunks(write.value), _ENTRY_BYTES + len(write.value.data))
            return sorted(stored.values(), key=lambda w: (w.task_path, w.task_id, w.idx))

    def writes_size(self, checkpoint: CheckpointRef) -> int:
        return sum(len(w.value.data) for w in self.get_writes(checkpoint))

    def delete_checkpoints(self, session_id: str, limit: int) -> int:
        with self._lock:
            count = (
                len(self._checkpoints.pop(session_id, {}))
                + len(self._blobs.pop(session_id, {}))
                + sum(len(w) for w in self._writes.pop(session_id, {}).values())
            )
            return count


# What an item carries besides its value (keys, type, sizes), as counted by the meter.
_ENTRY_BYTES = 100
CHUNK = CHECKPOINT_CHUNK_BYTES


def _chunks(value: Blob) -> int:
    return max(1, -(-len(value.data) // CHUNK))
