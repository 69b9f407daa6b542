"""One contract for every CheckpointStore: the DynamoDB adapter (on moto and on DynamoDB Local)
and the in-memory fake
that service tests use keep the same promises, values past one item's size included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.adapters.dynamodb.checkpoints import DynamoCheckpointStore
from chatmemory.domain import (
    Blob,
    ChannelBlob,
    CheckpointRange,
    CheckpointRef,
    ListPosition,
    PendingWrite,
    StoredCheckpoint,
)
from chatmemory.errors import Conflict
from chatmemory.ports import CheckpointStore
from tests.checkpoints_fake import InMemoryCheckpointStore
from tests.contract.conftest import BACKENDS, dynamodb_local_tables

T0 = "2026-11-27T10:00:00.000Z"


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[CheckpointStore]:
    if request.param == "in-memory":
        yield InMemoryCheckpointStore()
        return
    if request.param == "dynamodb-local":
        client, names = dynamodb_local_tables(request, schema.CHECKPOINTS)
        yield DynamoCheckpointStore(client, names[schema.CHECKPOINTS.logical_name])
        return
    request.getfixturevalue("dynamodb")  # moto tables from schema.py
    yield wiring.checkpoint_store()


def _checkpoint(
    cid: str, *, ns: str = "", parent: str | None = None, versions: dict[str, str] | None = None,
    sid: str = "s1", **metadata: object,
) -> StoredCheckpoint:  # fmt: skip
    return StoredCheckpoint(
        session_id=sid,
        checkpoint_ns=ns,
        checkpoint_id=cid,
        parent_checkpoint_id=parent,
        checkpoint=Blob("msgpack", f"checkpoint {cid}".encode()),
        metadata=Blob("msgpack", b"meta"),
        metadata_json=dict(metadata),
        channel_versions=versions or {},
        created_at=T0,
    )


def _write(task: str, idx: int, channel: str, data: bytes, path: str = "") -> PendingWrite:
    return PendingWrite(task, idx, channel, Blob("msgpack", data), path)


def test_a_checkpoint_reads_back_with_its_values_at_their_versions(store: CheckpointStore) -> None:
    first = _checkpoint("1", versions={"a": "1", "b": "1"}, source="input", step=-1)
    store.put_checkpoint(
        first,
        [ChannelBlob("a", "1", Blob("json", b"A1")), ChannelBlob("b", "1", Blob("json", b"B1"))],
    )
    second = _checkpoint("2", parent="1", versions={"a": "2", "b": "1"})
    store.put_checkpoint(second, [ChannelBlob("a", "2", Blob("json", b"A2"))])

    got = store.get_checkpoint("s1", "", "1")
    assert got is not None and got.metadata_json == {"source": "input", "step": -1}
    assert (got.checkpoint, got.parent_checkpoint_id) == (first.checkpoint, None)
    latest = store.get_checkpoint("s1", "", None)
    assert latest is not None and (latest.checkpoint_id, latest.parent_checkpoint_id) == ("2", "1")
    assert store.get_blobs("s1", "", latest.channel_versions) == {
        "a": Blob("json", b"A2"),
        "b": Blob("json", b"B1"),
    }
    assert store.get_blobs("s1", "", {"a": "1"}) == {"a": Blob("json", b"A1")}
    assert store.blob_sizes("s1", "", {"a": "2", "b": "1", "gone": "9"}) == {"a": 2, "b": 2}
    assert store.get_checkpoint("s1", "", "3") is None
    assert store.get_checkpoint("other", "", None) is None


def test_a_value_larger_than_an_item_is_stored_whole(store: CheckpointStore) -> None:
    big = bytes(range(256)) * (3 * schema.CHECKPOINT_CHUNK_BYTES // 256 + 7)
    store.put_checkpoint(
        _checkpoint("1", versions={"messages": "1", "empty": "1"}),
        [
            ChannelBlob("messages", "1", Blob("msgpack", big)),
            ChannelBlob("empty", "1", Blob("empty", b"")),
        ],
    )
    store.put_writes(CheckpointRef("s1", "", "1"), [_write("t", 0, "messages", big)])

    values = store.get_blobs("s1", "", {"messages": "1", "empty": "1"})
    assert values["messages"] == Blob("msgpack", big)
    assert values["empty"] == Blob("empty", b"")
    assert store.blob_sizes("s1", "", {"messages": "1"}) == {"messages": len(big)}
    (write,) = store.get_writes(CheckpointRef("s1", "", "1"))
    assert write.value.data == big
    assert store.writes_size(CheckpointRef("s1", "", "1")) == len(big)


def test_namespaces_keep_their_own_checkpoints_and_values(store: CheckpointStore) -> None:
    for ns in ("", "child:1", "weird#ns%|x"):
        store.put_checkpoint(
            _checkpoint(f"id-{ns or 'root'}", ns=ns, versions={"a": "1"}),
            [ChannelBlob("a", "1", Blob("json", ns.encode()))],
        )
    for ns in ("", "child:1", "weird#ns%|x"):
        (only,) = store.list_checkpoints("s1", CheckpointRange(ns), 10)
        assert only.checkpoint_ns == ns
        assert store.get_blobs("s1", ns, {"a": "1"})["a"].data == ns.encode()
    assert len(store.list_checkpoints("s1", CheckpointRange(None), 10)) == 3


def test_a_listing_is_newest_first_below_before_and_limited(store: CheckpointStore) -> None:
    ids = [f"1ef-{n:04d}" for n in range(12)]
    for cid in ids:
        store.put_checkpoint(_checkpoint(cid), [])
    store.put_checkpoint(_checkpoint("1ef-9999", ns="child"), [])

    listed = [c.checkpoint_id for c in store.list_checkpoints("s1", CheckpointRange(""), 100)]
    assert listed == ids[::-1]
    assert [
        c.checkpoint_id for c in store.list_checkpoints("s1", CheckpointRange("", ids[5]), 3)
    ] == [
        ids[4],
        ids[3],
        ids[2],
    ]
    assert store.list_checkpoints("s1", CheckpointRange("", ids[0]), 10) == []
    every = [c.checkpoint_id for c in store.list_checkpoints("s1", CheckpointRange(None), 2)]
    assert every == ["1ef-9999", ids[-1]]


def test_a_write_stored_again_is_kept_as_first_stored_unless_special(
    store: CheckpointStore,
) -> None:
    store.put_writes(
        CheckpointRef("s1", "", "1"),
        [_write("t1", 0, "ch", b"first"), _write("t1", -1, "__error__", b"e1")],
    )
    store.put_writes(
        CheckpointRef("s1", "", "1"),
        [_write("t1", 0, "ch", b"again"), _write("t1", -1, "__error__", b"e2")],
    )
    store.put_writes(CheckpointRef("s1", "", "1"), [_write("t0", 1, "ch", b"other", path="a")])
    store.put_writes(CheckpointRef("s1", "child", "1"), [_write("t1", 0, "ch", b"child")])

    writes = store.get_writes(CheckpointRef("s1", "", "1"))
    assert [(w.task_id, w.idx, w.value.data) for w in writes] == [
        ("t1", -1, b"e2"),
        ("t1", 0, b"first"),
        ("t0", 1, b"other"),
    ]
    assert [w.value.data for w in store.get_writes(CheckpointRef("s1", "child", "1"))] == [b"child"]
    assert store.get_writes(CheckpointRef("s1", "", "2")) == []


def test_deleting_a_sessions_checkpoints_removes_every_item(store: CheckpointStore) -> None:
    big = b"x" * (schema.CHECKPOINT_CHUNK_BYTES + 1)
    store.put_checkpoint(
        _checkpoint("1", versions={"a": "1"}), [ChannelBlob("a", "1", Blob("b", big))]
    )
    store.put_writes(CheckpointRef("s1", "", "1"), [_write("t", 0, "ch", big)])
    store.put_checkpoint(_checkpoint("1", sid="s2"), [])

    while store.delete_checkpoints("s1", 2):
        pass
    assert store.get_checkpoint("s1", "", None) is None
    assert store.get_blobs("s1", "", {"a": "1"}) == {}
    assert store.get_writes(CheckpointRef("s1", "", "1")) == []
    assert store.get_checkpoint("s2", "", "1") is not None


def test_names_of_any_length_fit_a_sort_key(store: CheckpointStore) -> None:
    """A namespace of 1,024 characters (4 bytes each in UTF-8), long channels, versions and
    task ids: each stays within DynamoDB's 1,024 bytes of a sort key, and two long names that
    differ only at their end stay apart."""
    ns = "\U0001f600" * 1023 + "a"
    other_ns = "\U0001f600" * 1023 + "b"
    channel, version, task = "c" * 256, "9" * 128, "t" * 256
    for n, space in enumerate((ns, other_ns)):
        store.put_checkpoint(
            _checkpoint(f"id-{n}", ns=space, versions={channel: version}),
            [ChannelBlob(channel, version, Blob("json", space[-1].encode()))],
        )
        store.put_writes(
            CheckpointRef("s1", space, f"id-{n}"), [_write(task, 0, channel, space[-1].encode())]
        )
    for n, space in enumerate((ns, other_ns)):
        (found,) = store.list_checkpoints("s1", CheckpointRange(space), 10)
        assert (found.checkpoint_id, found.checkpoint_ns) == (f"id-{n}", space)
        assert store.get_blobs("s1", space, {channel: version})[channel].data == space[-1].encode()
        (write,) = store.get_writes(CheckpointRef("s1", space, f"id-{n}"))
        assert (write.task_id, write.channel) == (task, channel)
        assert store.list_checkpoints("s1", CheckpointRange(space, f"id-{n}"), 10) == []


def test_a_write_retried_with_other_data_over_several_chunks_leaves_the_first_whole(
    store: CheckpointStore,
) -> None:
    """A retry of (task_id, idx) with another value longer than one chunk: the first stored
    write reads back byte for byte (its further chunks are not overwritten by the retry's)."""
    size = 2 * schema.CHECKPOINT_CHUNK_BYTES + 10
    first, other = b"a" * size, b"b" * (size + 5)
    store.put_writes(CheckpointRef("s1", "", "1"), [_write("t", 0, "ch", first)])
    store.put_writes(CheckpointRef("s1", "", "1"), [_write("t", 0, "ch", other)])

    (write,) = store.get_writes(CheckpointRef("s1", "", "1"))
    assert write.value.data == first
    assert store.writes_size(CheckpointRef("s1", "", "1")) == len(first)


def test_a_special_write_replaced_by_a_shorter_one_reads_back_as_the_new_one(
    store: CheckpointStore,
) -> None:
    long, short = b"x" * (2 * schema.CHECKPOINT_CHUNK_BYTES + 1), b"short"
    store.put_writes(CheckpointRef("s1", "", "1"), [_write("t", -1, "__error__", long)])
    store.put_writes(CheckpointRef("s1", "", "1"), [_write("t", -1, "__error__", short)])
    (write,) = store.get_writes(CheckpointRef("s1", "", "1"))
    assert write.value.data == short
    assert store.writes_size(CheckpointRef("s1", "", "1")) == len(short)


def test_a_stored_version_keeps_its_bytes_and_a_refused_put_stores_nothing(
    store: CheckpointStore,
) -> None:
    big = b"v" * (schema.CHECKPOINT_CHUNK_BYTES + 3)
    store.put_checkpoint(
        _checkpoint("1", versions={"a": "1", "b": "1"}),
        [ChannelBlob("a", "1", Blob("json", big)), ChannelBlob("b", "1", Blob("json", b"B1"))],
    )
    # The same bytes again: a retry.
    store.put_checkpoint(
        _checkpoint("1", versions={"a": "1", "b": "1"}),
        [ChannelBlob("a", "1", Blob("json", big)), ChannelBlob("b", "1", Blob("json", b"B1"))],
    )
    # A new value, then other bytes at a stored version: refused, and nothing of it stays.
    with pytest.raises(Conflict):
        store.put_checkpoint(
            _checkpoint("2", versions={"a": "1", "b": "2", "c": "1"}),
            [
                ChannelBlob("c", "1", Blob("json", b"C" * (schema.CHECKPOINT_CHUNK_BYTES + 1))),
                ChannelBlob("a", "1", Blob("json", b"w" * (schema.CHECKPOINT_CHUNK_BYTES + 3))),
            ],
        )
    with pytest.raises(Conflict):
        store.put_checkpoint(
            _checkpoint("2", versions={"b": "1"}), [ChannelBlob("b", "1", Blob("msgpack", b"B1"))]
        )
    assert store.get_blobs("s1", "", {"a": "1", "b": "1", "c": "1"}) == {
        "a": Blob("json", big),
        "b": Blob("json", b"B1"),
    }
    assert store.get_checkpoint("s1", "", "2") is None
    # The version refused is free of the refused value: a put of new bytes at it succeeds.
    store.put_checkpoint(
        _checkpoint("3", versions={"c": "1"}), [ChannelBlob("c", "1", Blob("json", b"C"))]
    )
    assert store.get_blobs("s1", "", {"c": "1"}) == {"c": Blob("json", b"C")}


def test_a_checkpoint_stored_as_one_item_before_reads_as_before(dynamodb: object) -> None:
    """Checkpoints stored before a checkpoint had two items (its listed item held it all)
    still list and read whole."""
    store = wiring.checkpoint_store()
    client, table = wiring.aws_client("dynamodb"), wiring.settings().checkpoints_table
    client.put_item(
        TableName=table,
        Item={
            schema.SESSION_ID: {"S": "s1"},
            schema.CHECKPOINT_KEY: {"S": schema.checkpoint_key("", "1ef-1")},
            "checkpoint_ns": {"S": ""},
            "checkpoint_id": {"S": "1ef-1"},
            "checkpoint_type": {"S": "msgpack"},
            "checkpoint": {"B": b"state"},
            "metadata_type": {"S": "msgpack"},
            "metadata": {"B": b"meta"},
            "metadata_json": {"S": '{"step":1}'},
            "channel_versions": {"M": {"a": {"S": "1"}}},
            "created_at": {"S": T0},
            "size": {"N": "0"},
        },
    )
    store.put_checkpoint(_checkpoint("1ef-2", versions={"a": "1"}, step=2), [])
    assert [
        (c.checkpoint_id, c.metadata_json)
        for c in store.list_checkpoints("s1", CheckpointRange(""), 9)
    ] == [
        ("1ef-2", {"step": 2}),
        ("1ef-1", {"step": 1}),
    ]
    old = store.get_checkpoint("s1", "", "1ef-1")
    assert old is not None and (old.checkpoint, old.channel_versions) == (
        Blob("msgpack", b"state"),
        {"a": "1"},
    )


def test_a_listing_of_every_namespace_goes_on_after_a_position(store: CheckpointStore) -> None:
    for ns in ("", "a", "b"):
        for cid in ("1", "2"):
            store.put_checkpoint(_checkpoint(cid, ns=ns), [])

    def listed(limit: int = 10, **kw: Any) -> list[tuple[str, str]]:
        which = CheckpointRange(None, **kw)
        return [
            (c.checkpoint_id, c.checkpoint_ns) for c in store.list_checkpoints("s1", which, limit)
        ]

    assert listed() == [("2", "b"), ("2", "a"), ("2", ""), ("1", "b"), ("1", "a"), ("1", "")]
    assert listed(after=ListPosition("2", "a"), limit=2) == [("2", ""), ("1", "b")]
    assert listed(before="2", after=ListPosition("1", "b")) == [("1", "a"), ("1", "")]
    assert [
        c.checkpoint_id
        for c in store.list_checkpoints("s1", CheckpointRange("a", after=ListPosition("2", "a")), 5)
    ] == ["1"]
