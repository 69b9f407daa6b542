"""InMemoryCheckpointStore: the CheckpointStore port in plain Python, for fast service tests.

It keeps the DynamoDB adapter's promises (tests/contract checks both): values keyed by
(namespace, channel, version) that never change their bytes (Conflict), checkpoints by
(namespace, id), pending writes by (task_id, idx) with the first write kept unless idx is
negative, copies handed out."""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence

from chatmemory.domain import Blob, ChannelBlob, PendingWrite, StoredCheckpoint
from chatmemory.errors import Conflict


class InMemoryCheckpointStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
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
            found = self.list_checkpoints(session_id, checkpoint_ns, None, 1)
            return found[0] if found else None
        with self._lock:
            checkpoint = self._checkpoints.get(session_id, {}).get((checkpoint_ns, checkpoint_id))
            return copy.deepcopy(checkpoint)

    def list_checkpoints(
        self, session_id: str, checkpoint_ns: str | None, before: str | None, limit: int
    ) -> list[StoredCheckpoint]:
        with self._lock:
            every = [
                c
                for (ns, cid), c in self._checkpoints.get(session_id, {}).items()
                if (checkpoint_ns is None or ns == checkpoint_ns)
                and (before is None or cid < before)
            ]
            every.sort(key=lambda c: c.checkpoint_id, reverse=True)
            return copy.deepcopy(every[:limit])

    def blob_sizes(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str]
    ) -> dict[str, int]:
        return {
            c: len(b.data) for c, b in self.get_blobs(session_id, checkpoint_ns, versions).items()
        }

    def get_blobs(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str]
    ) -> dict[str, Blob]:
        with self._lock:
            stored = self._blobs.get(session_id, {})
            return {
                channel: stored[(checkpoint_ns, channel, version)]
                for channel, version in versions.items()
                if (checkpoint_ns, channel, version) in stored
            }

    def put_writes(
        self,
        session_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
    ) -> None:
        with self._lock:
            stored = self._writes.setdefault(session_id, {}).setdefault(
                (checkpoint_ns, checkpoint_id), {}
            )
            for write in writes:
                if write.idx >= 0 and (write.task_id, write.idx) in stored:
                    continue
                stored[(write.task_id, write.idx)] = write

    def get_writes(
        self, session_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[PendingWrite]:
        with self._lock:
            stored = self._writes.get(session_id, {}).get((checkpoint_ns, checkpoint_id), {})
            return sorted(stored.values(), key=lambda w: (w.task_path, w.task_id, w.idx))

    def writes_size(self, session_id: str, checkpoint_ns: str, checkpoint_id: str) -> int:
        return sum(
            len(w.value.data) for w in self.get_writes(session_id, checkpoint_ns, checkpoint_id)
        )

    def delete_checkpoints(self, session_id: str, limit: int) -> int:
        with self._lock:
            count = (
                len(self._checkpoints.pop(session_id, {}))
                + len(self._blobs.pop(session_id, {}))
                + sum(len(w) for w in self._writes.pop(session_id, {}).values())
            )
            return count
