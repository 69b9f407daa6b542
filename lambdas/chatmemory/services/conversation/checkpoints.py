"""A LangGraph checkpointer's storage on the server: a thread is a session of the caller.

Checkpoints, channel values and pending writes live in the session's partition of the
checkpoints table (ports.CheckpointStore), behind the same visibility rule as its turns
(services/access.py): a deleted session's checkpoints are unreachable at once, and its purge
removes them with its turns (services/background/forget.py). The client serializes every value with
LangGraph's serde; the server stores the bytes and reads only the metadata's JSON (list
filters), the channel versions (which values make a checkpoint) and the sizes (the limits in
schema.py: what one checkpoint may hold, so that reading it back fits one Lambda answer).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from chatmemory.clock import iso, utc_now
from chatmemory.domain import (
    Blob,
    ChannelBlob,
    CheckpointRange,
    CheckpointRef,
    ListPosition,
    PendingWrite,
    StoredCheckpoint,
    is_identifier,
)
from chatmemory.errors import BadRequest, CheckpointNotFound, PayloadTooLarge, SessionNotFound
from chatmemory.limits import Room
from chatmemory.ports import CheckpointStore, Clock, SessionStore
from chatmemory.schema import (
    MAX_CHECKPOINT_BYTES,
    MAX_CHECKPOINT_ITEM_BYTES,
    MAX_CHECKPOINT_JSON_DEPTH,
    MAX_CHECKPOINT_WRITES_BYTES,
)
from chatmemory.services.access import owned_session
from chatmemory.services.conversation.sessions import thread_intact

# What one page of a listing may carry of values and writes (a checkpoint at both limits is
# 4 MiB: a page holds at least one checkpoint whatever its size).
LIST_PAGE_BYTES = MAX_CHECKPOINT_BYTES + MAX_CHECKPOINT_WRITES_BYTES
# Checkpoints' keys and metadata read at once while a filtered listing fills a page.
_LIST_READ = 50
# Items deleted a round when a write is taken back (schema.CHECKPOINTS: each a batch write of 25).
_UNDO_BATCH = 100


@dataclass
class CheckpointTuple:
    """A checkpoint with the values of its channels and its pending writes."""

    checkpoint: StoredCheckpoint
    values: dict[str, Blob] = field(default_factory=dict)
    writes: list[PendingWrite] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(b.data) for b in self.values.values()) + sum(
            len(w.value.data) for w in self.writes
        )


def thread_partition(memory: SessionStore, user_id: str, session_id: str) -> str:
    """The partition of the thread a caller's session is part of: the session's own, or, for a
    conversation continued on the server under its client id (26a), its first session's, so a
    thread keeps its checkpoints across idle ends. That first session must still be visible
    (one more read, for continued threads only): deleting any session of the thread deletes
    the thread whole (sessions.delete_session), and its id then starts a new one."""
    session = owned_session(memory, user_id, session_id)
    if not thread_intact(memory, session):
        raise SessionNotFound(f"session {session_id} not found (its thread was deleted)")
    return session.thread_root or session.session_id


class Thread(NamedTuple):
    """A caller's session as a LangGraph thread: what every checkpoint service starts from."""

    memory: SessionStore
    store: CheckpointStore
    user_id: str
    session_id: str

    def partition(self) -> str:
        """Where the thread's checkpoints are (thread_partition)."""
        return thread_partition(self.memory, self.user_id, self.session_id)


def put_checkpoint(
    thread: Thread,
    *,
    checkpoint_ns: str,
    checkpoint_id: str,
    parent_checkpoint_id: str | None,
    checkpoint: Blob,
    metadata: Blob,
    metadata_json: dict[str, Any],
    channel_versions: Mapping[str, str],
    blobs: Sequence[ChannelBlob],
    clock: Clock = utc_now,
) -> StoredCheckpoint:
    """Store a checkpoint and the values of its channels that changed (`blobs`); the others
    are the values stored with earlier checkpoints at the versions `channel_versions` names.
    PayloadTooLarge when all its values together exceed MAX_CHECKPOINT_BYTES."""
    partition = thread.partition()
    new = _new_values(blobs, channel_versions)
    _shallow(metadata_json, "metadata_json")
    _check_own_size(checkpoint, metadata, metadata_json, channel_versions)
    carried = {c: v for c, v in channel_versions.items() if c not in new}
    sizes = thread.store.blob_sizes(partition, checkpoint_ns, carried) if carried else {}
    total = sum(new.values()) + sum(sizes.values())
    if total > MAX_CHECKPOINT_BYTES:
        raise PayloadTooLarge(
            f"the checkpoint's channel values are {total} bytes serialized; at most "
            f"{MAX_CHECKPOINT_BYTES} are accepted per checkpoint"
        )
    stored = StoredCheckpoint(
        session_id=partition,
        checkpoint_ns=checkpoint_ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=parent_checkpoint_id,
        checkpoint=checkpoint,
        metadata=metadata,
        metadata_json=metadata_json,
        channel_versions=dict(channel_versions),
        created_at=iso(clock()),
        size=total,
    )
    thread.store.put_checkpoint(stored, blobs)
    _still_there(thread, partition)
    return stored


def _new_values(
    blobs: Sequence[ChannelBlob], channel_versions: Mapping[str, str]
) -> dict[str, int]:
    """The size of each channel value stored with a checkpoint (one a channel, at the version
    its channel_versions names)."""
    new: dict[str, int] = {}
    for blob in blobs:
        if channel_versions.get(blob.channel) != blob.version:
            raise BadRequest(
                f"blob of channel {blob.channel!r} at version {blob.version!r} is not a version "
                "of the checkpoint's channel_versions"
            )
        if blob.channel in new:
            raise BadRequest(f"two blobs of channel {blob.channel!r}")
        new[blob.channel] = len(blob.value.data)
    return new


def _check_own_size(
    checkpoint: Blob,
    metadata: Blob,
    metadata_json: dict[str, Any],
    channel_versions: Mapping[str, str],
) -> None:
    """PayloadTooLarge when the checkpoint's own item (without its channel values) is over
    MAX_CHECKPOINT_ITEM_BYTES."""
    own = (
        len(checkpoint.data)
        + len(metadata.data)
        + len(json.dumps(metadata_json))
        # As DynamoDB counts a map: each name and value, and a few bytes of each entry.
        + sum(len(c.encode()) + len(v.encode()) + 4 for c, v in channel_versions.items())
    )
    if own > MAX_CHECKPOINT_ITEM_BYTES:
        raise PayloadTooLarge(
            "the checkpoint without its channel values, with its metadata and its "
            f"channel_versions, is {own} bytes; at most {MAX_CHECKPOINT_ITEM_BYTES} are accepted"
        )


def _still_there(thread: Thread, partition: str) -> None:
    """After a write: the thread read again. Deleted meanwhile (its delete and its purge ran
    between the first read and the write), what was written is deleted here, with whatever
    else the partition still holds, and the request answers as for a deleted thread: no
    checkpoint outlives the thread's purge."""
    try:
        thread.partition()
    except SessionNotFound:
        while thread.store.delete_checkpoints(partition, _UNDO_BATCH):
            pass
        raise


def get_checkpoint(
    thread: Thread,
    *,
    checkpoint_ns: str,
    checkpoint_id: str | None,
) -> CheckpointTuple:
    """The checkpoint of that id (None: the newest of the namespace) with its values and
    writes; CheckpointNotFound when there is none."""
    partition = thread.partition()
    found = thread.store.get_checkpoint(partition, checkpoint_ns, checkpoint_id)
    if found is None:
        raise CheckpointNotFound(
            f"no checkpoint {checkpoint_id or '(latest)'} in namespace {checkpoint_ns!r} of "
            f"session {thread.session_id}"
        )
    return _tuple(thread.store, found)


def list_checkpoints(
    thread: Thread,
    *,
    checkpoint_ns: str | None,
    before: str | None,
    limit: int,
    filter: Mapping[str, Any],  # noqa: A002 - LangGraph's name
    after: ListPosition | None = None,
    room: Room[CheckpointTuple] | None = None,
) -> tuple[list[CheckpointTuple], ListPosition | None]:
    """Up to `limit` checkpoints newest first (by id, then namespace), below `before` if
    given, after `after` (where an earlier page ended) if given, whose metadata has every key
    of `filter` with that value; as many as fit `room` (by default their stored values and
    writes, LIST_PAGE_BYTES of them; at least one). The second value is where the next page
    starts, None when none can follow."""
    room = room or Room(stored_size, LIST_PAGE_BYTES)
    if before is not None and not is_identifier(before):
        raise BadRequest("before must be a checkpoint id")
    _shallow(filter, "filter")
    partition, store = thread.partition(), thread.store
    found: list[CheckpointTuple] = []
    used = 0
    position = after
    while True:
        # Keys and metadata to filter and page; a checkpoint and its values only for what the
        # page answers. Without a filter every one read is answered: read no more than asked.
        wanted = _LIST_READ if filter else limit - len(found)
        read = store.list_checkpoints(
            partition, CheckpointRange(checkpoint_ns, before, position), wanted
        )
        for listed in read:
            position = ListPosition(listed.checkpoint_id, listed.checkpoint_ns)
            if not _matches(listed.metadata_json, filter):
                continue
            checkpoint = store.get_checkpoint(partition, listed.checkpoint_ns, listed.checkpoint_id)
            if checkpoint is None:
                continue
            entry = _tuple(store, checkpoint)
            size = room.size_of(entry)
            if found and used + size > room.bytes:
                last = found[-1].checkpoint
                return found, ListPosition(last.checkpoint_id, last.checkpoint_ns)
            found.append(entry)
            used += size
            if len(found) == limit:
                return found, position
        if len(read) < wanted:
            return found, None


def stored_size(found: CheckpointTuple) -> int:
    """The bytes of a checkpoint's values and writes as stored."""
    return found.size


def put_writes(
    thread: Thread,
    *,
    checkpoint_ns: str,
    checkpoint_id: str,
    writes: Sequence[PendingWrite],
) -> None:
    """Store a task's pending writes for a checkpoint (idempotent by (task_id, idx)).
    PayloadTooLarge when the checkpoint's writes would exceed MAX_CHECKPOINT_WRITES_BYTES."""
    partition = thread.partition()
    kept: dict[tuple[str, int], PendingWrite] = {}
    for write in writes:
        key = (write.task_id, write.idx)
        if key in kept and write.idx >= 0:
            raise BadRequest(f"two writes of task {write.task_id} with index {write.idx}")
        # A special channel written twice in one call (two __error__ writes: the same
        # negative index) is replaced by the later, as a later call would replace it.
        kept.pop(key, None)
        kept[key] = write
    writes = list(kept.values())
    adding = sum(len(w.value.data) for w in writes)
    checkpoint = CheckpointRef(partition, checkpoint_ns, checkpoint_id)
    if adding > MAX_CHECKPOINT_WRITES_BYTES or (
        adding + thread.store.writes_size(checkpoint) > MAX_CHECKPOINT_WRITES_BYTES
    ):
        raise PayloadTooLarge(
            f"a checkpoint's pending writes may hold at most {MAX_CHECKPOINT_WRITES_BYTES} "
            "bytes serialized"
        )
    thread.store.put_writes(checkpoint, writes)
    _still_there(thread, partition)


def _tuple(store: CheckpointStore, checkpoint: StoredCheckpoint) -> CheckpointTuple:
    sid, ns = checkpoint.session_id, checkpoint.checkpoint_ns
    values = store.get_blobs(sid, ns, checkpoint.channel_versions)
    writes = store.get_writes(CheckpointRef(sid, ns, checkpoint.checkpoint_id))
    return CheckpointTuple(checkpoint, values, writes)


def _shallow(value: Any, name: str) -> None:
    """BadRequest when `value` (parsed JSON) nests deeper than MAX_CHECKPOINT_JSON_DEPTH."""
    level = [value]
    for _ in range(MAX_CHECKPOINT_JSON_DEPTH):
        level = [
            inner
            for outer in level
            if isinstance(outer, dict | list)
            for inner in (outer.values() if isinstance(outer, dict) else outer)
        ]
        if not level:
            return
    raise BadRequest(f"{name} nests deeper than {MAX_CHECKPOINT_JSON_DEPTH} levels")


def _matches(metadata: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """LangGraph's list filter: every key of `wanted` in the metadata with an equal value."""
    return all(key in metadata and metadata[key] == value for key, value in wanted.items())
