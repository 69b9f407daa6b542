"""LangGraph checkpoints on DynamoDB: the checkpoints table of schema.py, one partition per
session. A value larger than one item can hold is split into chunks (schema.CHECKPOINT_CHUNK_BYTES
each): its first item (the head) carries the type, the size, the number of chunks and the digest
of the value, which names its further chunks (a value of other bytes under the same name never
overwrites them)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from chatmemory import schema
from chatmemory.adapters.dynamodb.client import (
    Guarded,
    batch_write,
    first_keys,
    is_conditional_failure,
)
from chatmemory.domain import (
    Blob,
    ChannelBlob,
    CheckpointEntry,
    CheckpointRange,
    CheckpointRef,
    PendingWrite,
    StoredCheckpoint,
)
from chatmemory.errors import Conflict, ShortTermMemoryUnavailable
from chatmemory.limits import DYNAMODB_BATCH_GET
from chatmemory.schema import CHECKPOINT_KEY, SESSION_ID

_CHUNK = schema.CHECKPOINT_CHUNK_BYTES


def _key(session_id: str, item: str) -> dict[str, Any]:
    return {SESSION_ID: {"S": session_id}, CHECKPOINT_KEY: {"S": item}}


def _chunks(data: bytes) -> list[bytes]:
    """`data` cut into item-sized parts (one empty part for no data)."""
    return [data[i : i + _CHUNK] for i in range(0, len(data), _CHUNK)] or [b""]


# Hex digits of a value's digest in the keys of its further chunks.
_CHUNK_DIGEST = 16


def _digest(value: Blob) -> str:
    """What identifies a value's bytes (with its type): SHA-256, in hex."""
    return hashlib.sha256(value.type.encode() + b"\x00" + value.data).hexdigest()


def _value_items(
    session_id: str, key_of: Any, value: Blob, extra: dict[str, Any]
) -> list[dict[str, Any]]:
    """The items of one value: the head (type, size, chunk count, digest, `extra`, first
    chunk) and one item per further chunk. `key_of(n, digest)` is the sort key of chunk n."""
    parts = _chunks(value.data)
    digest = _digest(value)
    head = {
        **_key(session_id, key_of(0, "")),
        "type": {"S": value.type},
        "size": {"N": str(len(value.data))},
        "chunks": {"N": str(len(parts))},
        "digest": {"S": digest},
        "data": {"B": parts[0]},
        **extra,
    }
    rest = [
        {**_key(session_id, key_of(n, digest[:_CHUNK_DIGEST])), "data": {"B": part}}
        for n, part in enumerate(parts)
    ]
    return [head, *rest[1:]]


def _chunk_keys(head: dict[str, Any], key_of: Any) -> list[str]:
    """The sort keys of a head's further chunks (named by its digest; by number alone for a
    value stored before digests were)."""
    digest = head.get("digest", {}).get("S", "")[:_CHUNK_DIGEST]
    return [key_of(n, digest) for n in range(1, int(head["chunks"]["N"]))]


def _checkpoint_items(checkpoint: StoredCheckpoint) -> tuple[dict[str, Any], dict[str, Any]]:
    """A checkpoint's two items: what a listing reads (keys, parent, metadata as JSON, size)
    and its body, which holds all of it with the checkpoint, its serde metadata and its
    channel versions (what a read of one checkpoint takes, in one item)."""
    ns, cid = checkpoint.checkpoint_ns, checkpoint.checkpoint_id
    entry: dict[str, Any] = {
        **_key(checkpoint.session_id, schema.checkpoint_key(ns, cid)),
        "checkpoint_ns": {"S": ns},
        "checkpoint_id": {"S": cid},
        # JSON text, not a map: any JSON number or nesting, no Decimal conversions.
        "metadata_json": {"S": json.dumps(checkpoint.metadata_json, separators=(",", ":"))},
        "created_at": {"S": checkpoint.created_at},
        "size": {"N": str(checkpoint.size)},
    }
    if checkpoint.parent_checkpoint_id:
        entry["parent_checkpoint_id"] = {"S": checkpoint.parent_checkpoint_id}
    body = {
        **entry,
        **_key(checkpoint.session_id, schema.checkpoint_body_key(ns, cid)),
        "checkpoint_type": {"S": checkpoint.checkpoint.type},
        "checkpoint": {"B": checkpoint.checkpoint.data},
        "metadata_type": {"S": checkpoint.metadata.type},
        "metadata": {"B": checkpoint.metadata.data},
        "channel_versions": {"M": {k: {"S": v} for k, v in checkpoint.channel_versions.items()}},
    }
    return entry, body


def _entry_of(item: dict[str, Any]) -> CheckpointEntry:
    return CheckpointEntry(
        session_id=item[SESSION_ID]["S"],
        checkpoint_ns=item["checkpoint_ns"]["S"],
        checkpoint_id=item["checkpoint_id"]["S"],
        parent_checkpoint_id=item.get("parent_checkpoint_id", {}).get("S"),
        metadata_json=json.loads(item["metadata_json"]["S"]),
        created_at=item["created_at"]["S"],
        size=int(item["size"]["N"]),
    )


def _checkpoint_of(body: dict[str, Any]) -> StoredCheckpoint:
    """A checkpoint from its body (or from its one item, stored before checkpoints had two)."""
    entry = _entry_of(body)
    return StoredCheckpoint(
        *entry[:4],
        checkpoint=Blob(body["checkpoint_type"]["S"], bytes(body["checkpoint"]["B"])),
        metadata=Blob(body["metadata_type"]["S"], bytes(body["metadata"]["B"])),
        metadata_json=entry.metadata_json,
        channel_versions={k: v["S"] for k, v in body["channel_versions"]["M"].items()},
        created_at=entry.created_at,
        size=entry.size,
    )


class DynamoCheckpointStore:
    """CheckpointStore on the checkpoints table (physical name from the deployment)."""

    def __init__(self, client: Any, table: str) -> None:
        self._db = Guarded(client)
        self._table = table

    # --- checkpoints --------------------------------------------------------------------------

    def put_checkpoint(self, checkpoint: StoredCheckpoint, blobs: Sequence[ChannelBlob]) -> None:
        sid, ns = checkpoint.session_id, checkpoint.checkpoint_ns
        created: list[list[str]] = []
        try:
            for blob in blobs:
                items = _value_items(
                    sid,
                    lambda n, d, b=blob: schema.blob_key(ns, b.channel, b.version, n, d),
                    blob.value,
                    {},
                )
                if self._put_value(sid, ns, blob, items):
                    created.append([item[CHECKPOINT_KEY]["S"] for item in items])
        except Conflict:
            # Nothing of a refused put stays: the values it created are taken back.
            for keys in created:
                self._delete_keys(sid, keys)
            raise
        # Values first, then the body, the listed item last: a checkpoint is never found
        # without its body and values.
        entry, body = _checkpoint_items(checkpoint)
        self._db.put_item(TableName=self._table, Item=body)
        self._db.put_item(TableName=self._table, Item=entry)

    def _put_value(
        self, session_id: str, checkpoint_ns: str, blob: ChannelBlob, items: list[dict[str, Any]]
    ) -> bool:
        """Store a channel's value at its version unless stored already: True when this put
        created it; False when the same bytes were stored (a retry); Conflict when other bytes
        were (a stored version never changes, whoever writes it)."""
        head, rest = items[0], items[1:]
        self._batch_write({"PutRequest": {"Item": item}} for item in rest)
        try:
            self._db.put_item(
                TableName=self._table,
                Item=head,
                ConditionExpression=f"attribute_not_exists({SESSION_ID})",
            )
            return True
        except ClientError as error:
            if not is_conditional_failure(error):
                raise
        stored = self.get_blobs(session_id, checkpoint_ns, {blob.channel: blob.version})
        if stored.get(blob.channel) == blob.value:
            return False
        # The stored value's chunks are named by its own digest (or, stored before digests,
        # by number): the ones written here are this value's, and deleted.
        self._delete_keys(session_id, [item[CHECKPOINT_KEY]["S"] for item in rest])
        raise Conflict(
            f"channel {blob.channel!r} of namespace {checkpoint_ns!r} is stored at version "
            f"{blob.version!r} with other bytes: a stored version never changes (give a "
            "changed value a new version)"
        )

    def get_checkpoint(
        self, session_id: str, checkpoint_ns: str, checkpoint_id: str | None
    ) -> StoredCheckpoint | None:
        if checkpoint_id is None:
            newest = self.list_checkpoints(session_id, CheckpointRange(checkpoint_ns), 1)
            if not newest:
                return None
            checkpoint_id = newest[0].checkpoint_id
        # Its body; a checkpoint stored before checkpoints had two items is its listed item.
        for key in (
            schema.checkpoint_body_key(checkpoint_ns, checkpoint_id),
            schema.checkpoint_key(checkpoint_ns, checkpoint_id),
        ):
            item = self._db.get_item(
                TableName=self._table, Key=_key(session_id, key), ConsistentRead=True
            ).get("Item")
            if item is not None and "checkpoint" in item:
                return _checkpoint_of(item)
        return None

    def list_checkpoints(
        self, session_id: str, which: CheckpointRange, limit: int
    ) -> list[CheckpointEntry]:
        """One namespace: a Query of its listed items below `before` (or below `after`, where
        that is lower); every namespace: all the session's listed items, ordered here."""
        if which.checkpoint_ns is None:
            # A listing across namespaces is rare: LangGraph lists one.
            every = [
                _entry_of(item)
                for item in self._query(session_id, "c#", newest_first=True, limit=None)
            ]
            return which.select(every)[:limit]
        before, after = which.before, which.after
        if after is not None and (before is None or after.checkpoint_id < before):
            before = after.checkpoint_id
        prefix = schema.checkpoint_prefix(which.checkpoint_ns)
        names = {"#k": CHECKPOINT_KEY}
        values: dict[str, Any] = {":s": {"S": session_id}, ":p": {"S": prefix}}
        if before is None:
            condition = f"{SESSION_ID} = :s AND begins_with(#k, :p)"
        else:
            condition = f"{SESSION_ID} = :s AND #k BETWEEN :p AND :b"
            # BETWEEN is inclusive: the greatest key below `before` is before itself less one
            # step; ids are compared as strings, so "below" is taken from the key's last char.
            values[":b"] = {"S": prefix + _just_below(before)}
        found: list[CheckpointEntry] = []
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "ConsistentRead": True,
            "Limit": limit,
        }
        while len(found) < limit:
            answer = self._db.query(**kwargs)
            found += [_entry_of(item) for item in answer.get("Items", [])]
            if "LastEvaluatedKey" not in answer:
                break
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return found[:limit]

    # --- channel values -----------------------------------------------------------------------

    def blob_sizes(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str]
    ) -> dict[str, int]:
        heads = self._heads(session_id, checkpoint_ns, versions, projection=True)
        return {channel: int(item["size"]["N"]) for channel, item in heads.items()}

    def get_blobs(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str]
    ) -> dict[str, Blob]:
        heads = self._heads(session_id, checkpoint_ns, versions, projection=False)
        further = {
            channel: _chunk_keys(
                head,
                lambda n, d, c=channel: schema.blob_key(checkpoint_ns, c, versions[c], n, d),
            )
            for channel, head in heads.items()
        }
        rest = [_key(session_id, k) for keys in further.values() for k in keys]
        parts = {item[CHECKPOINT_KEY]["S"]: bytes(item["data"]["B"]) for item in self._get(rest)}
        return {
            channel: Blob(
                head["type"]["S"],
                bytes(head["data"]["B"]) + b"".join(parts[k] for k in further[channel]),
            )
            for channel, head in heads.items()
        }

    def _heads(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str], *, projection: bool
    ) -> dict[str, dict[str, Any]]:
        by_key = {schema.blob_key(checkpoint_ns, c, v): c for c, v in versions.items()}
        keys = [_key(session_id, k) for k in by_key]
        items = self._get(keys, projection="#k, #z" if projection else None)
        return {by_key[item[CHECKPOINT_KEY]["S"]]: item for item in items}

    # --- pending writes -----------------------------------------------------------------------

    def put_writes(self, checkpoint: CheckpointRef, writes: Sequence[PendingWrite]) -> None:
        session_id, checkpoint_ns, checkpoint_id = checkpoint
        for write in writes:

            def key_of(n: int, digest: str, w: PendingWrite = write) -> str:
                return schema.write_key(checkpoint_ns, checkpoint_id, w.task_id, w.idx, n, digest)

            items = _value_items(
                session_id,
                key_of,
                write.value,
                {
                    "task_id": {"S": write.task_id},
                    "idx": {"N": str(write.idx)},
                    "channel": {"S": write.channel},
                    "task_path": {"S": write.task_path},
                },
            )
            head, rest = items[0], items[1:]
            # A special channel's write (negative idx) replaces the stored one: its chunks
            # (named by its own digest) are deleted once the new head stands.
            before = None if write.idx >= 0 else self._head_of(head)
            # Further chunks before the head that makes them readable; they are named by the
            # value's digest, so a retry with other bytes never touches the stored write's.
            self._batch_write({"PutRequest": {"Item": item}} for item in rest)
            put: dict[str, Any] = {"TableName": self._table, "Item": head}
            if write.idx >= 0:
                put["ConditionExpression"] = f"attribute_not_exists({SESSION_ID})"
            try:
                self._db.put_item(**put)
            except ClientError as error:
                if not is_conditional_failure(error):
                    raise
                # Stored already: the first write stands; this one's chunks, if they are not
                # the stored ones (other bytes), are taken back.
                stored = self._head_of(head)
                if stored is not None and stored.get("digest") != head["digest"]:
                    self._delete_keys(session_id, [i[CHECKPOINT_KEY]["S"] for i in items[1:]])
                continue
            if before is not None and before.get("digest") != head["digest"]:
                self._delete_keys(session_id, _chunk_keys(before, key_of))

    def _head_of(self, head: dict[str, Any]) -> dict[str, Any] | None:
        """The stored head of a value under `head`'s key: its key, digest and chunk count."""
        answer = self._db.get_item(
            TableName=self._table,
            Key={SESSION_ID: head[SESSION_ID], CHECKPOINT_KEY: head[CHECKPOINT_KEY]},
            ProjectionExpression="#k, digest, chunks",
            ExpressionAttributeNames={"#k": CHECKPOINT_KEY},
            ConsistentRead=True,
        )
        found: dict[str, Any] | None = answer.get("Item")
        return found

    def _delete_keys(self, session_id: str, keys: Sequence[str]) -> None:
        self._batch_write({"DeleteRequest": {"Key": _key(session_id, k)}} for k in keys)

    def get_writes(self, checkpoint: CheckpointRef) -> list[PendingWrite]:
        session_id, checkpoint_ns, checkpoint_id = checkpoint
        items = self._query(
            session_id, schema.writes_prefix(checkpoint_ns, checkpoint_id), limit=None
        )
        by_key = {item[CHECKPOINT_KEY]["S"]: item for item in items}
        writes: list[PendingWrite] = []
        for head in by_key.values():
            if "chunks" not in head:
                continue  # a further chunk: read with its head
            task_id, idx = head["task_id"]["S"], int(head["idx"]["N"])
            keys = _chunk_keys(
                head,
                lambda n, d, t=task_id, i=idx: schema.write_key(
                    checkpoint_ns, checkpoint_id, t, i, n, d
                ),
            )
            if not all(k in by_key for k in keys):
                continue  # being replaced (a special channel's): its chunks are gone
            data = bytes(head["data"]["B"]) + b"".join(bytes(by_key[k]["data"]["B"]) for k in keys)
            writes.append(
                PendingWrite(
                    task_id=task_id,
                    idx=idx,
                    channel=head["channel"]["S"],
                    value=Blob(head["type"]["S"], data),
                    task_path=head["task_path"]["S"],
                )
            )
        writes.sort(key=lambda w: (w.task_path, w.task_id, w.idx))
        return writes

    def writes_size(self, checkpoint: CheckpointRef) -> int:
        session_id, checkpoint_ns, checkpoint_id = checkpoint
        items = self._query(
            session_id,
            schema.writes_prefix(checkpoint_ns, checkpoint_id),
            limit=None,
            projection="#z",
        )
        return sum(int(item["size"]["N"]) for item in items if "size" in item)

    # --- purge --------------------------------------------------------------------------------

    def delete_checkpoints(self, session_id: str, limit: int) -> int:
        keys = first_keys(self._db, self._table, (SESSION_ID, session_id), CHECKPOINT_KEY, limit)
        self._batch_write({"DeleteRequest": {"Key": key}} for key in keys)
        return len(keys)

    # --- requests -----------------------------------------------------------------------------

    def _query(
        self,
        session_id: str,
        prefix: str,
        *,
        newest_first: bool = False,
        limit: int | None,
        projection: str | None = None,
    ) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": f"{SESSION_ID} = :s AND begins_with(#k, :p)",
            "ExpressionAttributeNames": {"#k": CHECKPOINT_KEY},
            "ExpressionAttributeValues": {":s": {"S": session_id}, ":p": {"S": prefix}},
            "ScanIndexForward": not newest_first,
            "ConsistentRead": True,
        }
        if projection:
            kwargs["ProjectionExpression"] = f"#k, {projection}"
            kwargs["ExpressionAttributeNames"]["#z"] = "size"
        if limit is not None:
            kwargs["Limit"] = limit
        items: list[dict[str, Any]] = []
        for page in self._db.get_paginator("query").paginate(**kwargs):
            items += page.get("Items", [])
        return items

    def _get(
        self, keys: list[dict[str, Any]], *, projection: str | None = None
    ) -> list[dict[str, Any]]:
        """BatchGetItem, strongly consistent, 100 keys a request, unprocessed keys again."""
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), DYNAMODB_BATCH_GET.count):
            spec: dict[str, Any] = {
                "Keys": keys[start : start + DYNAMODB_BATCH_GET.count],
                "ConsistentRead": True,
            }
            if projection:
                spec["ProjectionExpression"] = projection
                # size is a reserved word of DynamoDB's expressions.
                spec["ExpressionAttributeNames"] = {"#k": CHECKPOINT_KEY, "#z": "size"}
            request: dict[str, Any] = {self._table: spec}
            for attempt in range(8):
                answer = self._db.batch_get_item(RequestItems=request)
                found += answer.get("Responses", {}).get(self._table, [])
                request = answer.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(min(0.05 * 2**attempt, 1.0))
            else:
                raise ShortTermMemoryUnavailable("DynamoDB kept keys unprocessed; retry")
        return found

    def _batch_write(self, requests: Iterable[dict[str, Any]]) -> None:
        """BatchWriteItem in batches of 25 (at most 25 x 350 KB: within its 16 MB)."""
        batch_write(self._db, self._table, requests)


def _just_below(checkpoint_id: str) -> str:
    """The greatest string sorting below `checkpoint_id` among ids of its alphabet: its last
    character one step down, then the highest character, so BETWEEN (inclusive) excludes it."""
    if not checkpoint_id:
        return ""
    last = checkpoint_id[-1]
    return checkpoint_id[:-1] + chr(ord(last) - 1) + "\U0010ffff"
