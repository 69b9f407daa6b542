"""services/conversation/checkpoints.py on the in-memory fakes: limits refused before anything is
stored, listing pages and filters, who may read a thread, and a thread continued under its client
id."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory.domain import Blob, ChannelBlob, CheckpointRef, ListPosition, PendingWrite
from chatmemory.errors import BadRequest, CheckpointNotFound, PayloadTooLarge, SessionNotFound
from chatmemory.limits import Room
from chatmemory.schema import MAX_CHECKPOINT_BYTES, MAX_CHECKPOINT_WRITES_BYTES
from chatmemory.services.conversation import checkpoints, sessions
from chatmemory.services.conversation.checkpoints import Thread
from tests.checkpoints_fake import InMemoryCheckpointStore
from tests.memory_fake import InMemoryShortTermMemory

MiB = 1024 * 1024


@pytest.fixture
def memory() -> InMemoryShortTermMemory:
    return InMemoryShortTermMemory()


@pytest.fixture
def store() -> InMemoryCheckpointStore:
    return InMemoryCheckpointStore()


def _put(
    memory: Any, store: Any, sid: str, cid: str, values: dict[str, bytes],
    versions: dict[str, str], *, user: str = "alice", parent: str | None = None, **meta: Any,
) -> Any:  # fmt: skip
    return checkpoints.put_checkpoint(
        Thread(memory, store, user, sid),
        checkpoint_ns="",
        checkpoint_id=cid,
        parent_checkpoint_id=parent,
        checkpoint=Blob("msgpack", cid.encode()),
        metadata=Blob("msgpack", b"m"),
        metadata_json=meta,
        channel_versions=versions,
        blobs=[ChannelBlob(c, versions[c], Blob("bytes", v)) for c, v in values.items()],
    )


def _get(memory: Any, store: Any, sid: str, cid: str | None, user: str = "alice") -> Any:
    return checkpoints.get_checkpoint(
        Thread(memory, store, user, sid), checkpoint_ns="", checkpoint_id=cid
    )


def test_a_checkpoint_over_the_limit_with_its_carried_values_is_refused_and_not_stored(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore
) -> None:
    sid = sessions.create_session(memory, "alice").session_id
    _put(memory, store, sid, "1", {"a": b"x" * (3 * MiB // 2)}, {"a": "1"})
    with pytest.raises(PayloadTooLarge, match=f"at most {MAX_CHECKPOINT_BYTES}"):
        # Only b is sent, but a (carried over at version 1) counts too.
        _put(memory, store, sid, "2", {"b": b"y" * (MiB * 6 // 10)}, {"a": "1", "b": "1"})
    with pytest.raises(CheckpointNotFound):
        _get(memory, store, sid, "2")
    assert _get(memory, store, sid, None).checkpoint.checkpoint_id == "1"


def test_pending_writes_over_the_limit_are_refused(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore
) -> None:
    sid = sessions.create_session(memory, "alice").session_id
    _put(memory, store, sid, "1", {}, {})

    def write(task: str, size: int) -> None:
        checkpoints.put_writes(
            Thread(memory, store, "alice", sid), checkpoint_ns="", checkpoint_id="1",
            writes=[PendingWrite(task, 0, "ch", Blob("bytes", b"w" * size))],
        )  # fmt: skip

    write("t1", 3 * MiB // 2)
    with pytest.raises(PayloadTooLarge, match=str(MAX_CHECKPOINT_WRITES_BYTES)):
        write("t2", MiB * 6 // 10)
    assert len(_get(memory, store, sid, "1").writes) == 1


def test_a_value_of_a_version_the_checkpoint_does_not_name_is_a_bad_request(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore
) -> None:
    sid = sessions.create_session(memory, "alice").session_id

    def put(versions: dict[str, str], *blobs: ChannelBlob) -> None:
        checkpoints.put_checkpoint(
            Thread(memory, store, "alice", sid), checkpoint_ns="", checkpoint_id="1",
            parent_checkpoint_id=None, checkpoint=Blob("m", b""), metadata=Blob("m", b""),
            metadata_json={}, channel_versions=versions, blobs=list(blobs),
        )  # fmt: skip

    with pytest.raises(BadRequest, match="not a version"):
        put({"a": "2"}, ChannelBlob("a", "1", Blob("b", b"1")))
    with pytest.raises(BadRequest, match="two blobs"):
        put(
            {"a": "1"},
            ChannelBlob("a", "1", Blob("b", b"1")),
            ChannelBlob("a", "1", Blob("b", b"2")),
        )
    assert store.get_checkpoint(sid, "", None) is None


def test_a_listing_filters_by_metadata_and_pages_by_size(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore
) -> None:
    sid = sessions.create_session(memory, "alice").session_id
    for n in range(1, 7):
        source = "input" if n % 2 else "loop"
        _put(
            memory, store, sid, f"{n:02d}", {"c": b"z" * 100}, {"c": str(n)}, source=source, step=n
        )

    def listed(**kw: Any) -> tuple[list[str], str | None]:
        found, nxt = checkpoints.list_checkpoints(
            Thread(memory, store, "alice", sid), checkpoint_ns="",
            **{"before": None, "limit": 10, "filter": {}, **kw},
        )  # fmt: skip
        return [t.checkpoint.checkpoint_id for t in found], nxt

    assert listed() == (["06", "05", "04", "03", "02", "01"], None)
    assert listed(filter={"source": "loop"})[0] == ["06", "04", "02"]
    assert listed(filter={"source": "loop", "step": 4})[0] == ["04"]
    assert listed(filter={"missing": None})[0] == []
    assert listed(before="04", limit=1) == (["03"], ListPosition("03", ""))
    room = Room(checkpoints.stored_size, 250)  # two values of 100 bytes fit
    page, nxt = listed(room=room)
    assert (page, nxt) == (["06", "05"], ListPosition("05", ""))
    assert listed(after=nxt, room=room)[0] == ["04", "03"]


def test_only_the_caller_reads_a_thread_and_a_deleted_thread_is_gone(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore
) -> None:
    sid = sessions.create_session(memory, "alice").session_id
    _put(memory, store, sid, "1", {"a": b"secret"}, {"a": "1"})
    with pytest.raises(SessionNotFound):
        _get(memory, store, sid, "1", user="mallory")
    with pytest.raises(SessionNotFound):
        _put(memory, store, sid, "2", {}, {}, user="mallory")
    sessions.delete_session(memory, "alice", sid)
    with pytest.raises(SessionNotFound):
        _get(memory, store, sid, None)


def test_a_thread_continued_under_its_client_id_keeps_its_checkpoints(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore
) -> None:
    first, _ = sessions.ensure_session(memory, "alice", "thread-1")
    # The handler resolves the caller's id to the session it names (sessions.resolve).
    _put(
        memory, store, sessions.resolve(memory, "alice", "thread-1"), "1", {"a": b"v1"}, {"a": "1"}
    )
    sessions.end_session(memory, "alice", first.session_id)
    later = sessions.continue_client_session(memory, "alice", "thread-1", ended=first.session_id)
    assert later is not None and later.thread_root == first.session_id
    assert sessions.resolve(memory, "alice", "thread-1") == later.session_id

    _put(memory, store, later.session_id, "2", {}, {"a": "1"}, parent="1")
    found = _get(memory, store, later.session_id, None)
    assert (found.checkpoint.checkpoint_id, found.values["a"].data) == ("2", b"v1")
    assert _get(memory, store, later.session_id, "1").checkpoint.session_id == first.session_id

    # The conversation's first session deleted by its server id takes the checkpoints along.
    sessions.delete_session(memory, "alice", first.session_id)
    with pytest.raises(SessionNotFound):
        _get(memory, store, later.session_id, None)


class _RacedStore(InMemoryCheckpointStore):
    """Runs `before_write` (once) just before its next write: the moment a thread's delete and
    its purge may land between the request's read of the thread and its write."""

    before_write: Any = None

    def put_checkpoint(self, *args: Any, **kwargs: Any) -> None:
        self._race()
        super().put_checkpoint(*args, **kwargs)

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        self._race()
        super().put_writes(*args, **kwargs)

    def _race(self) -> None:
        hook, self.before_write = self.before_write, None
        if hook is not None:
            hook()


@pytest.mark.parametrize("write", ["checkpoint", "writes"])
def test_a_write_racing_the_threads_delete_and_purge_leaves_nothing_behind(
    memory: InMemoryShortTermMemory, write: str
) -> None:
    """Found by an audit: the checkpoint (a LangGraph state, usually the whole conversation)
    written after the thread's purge stayed in the purged partition for good."""
    from chatmemory.services.background.forget import Purging, purge_session

    store = _RacedStore()
    sid = sessions.create_session(memory, "alice").session_id
    _put(memory, store, sid, "1", {"messages": b"hello"}, {"messages": "1"})

    def delete_and_purge() -> None:
        sessions.delete_session(memory, "alice", sid)
        purge = purge_session(sid, Purging(memory, None, checkpoints=store), time_left=lambda: 60)
        assert purge.outcome == "purged"

    store.before_write = delete_and_purge
    with pytest.raises(SessionNotFound):
        if write == "checkpoint":
            _put(memory, store, sid, "2", {"messages": b"my vault pin 88231"}, {"messages": "2"})
        else:
            checkpoints.put_writes(
                Thread(memory, store, "alice", sid), checkpoint_ns="", checkpoint_id="1",
                writes=[PendingWrite("t1", 0, "messages", Blob("bytes", b"my vault pin 88231"))],
            )  # fmt: skip
    assert store.get_checkpoint(sid, "", None) is None
    assert store.get_writes(CheckpointRef(sid, "", "1")) == []
    assert store.delete_checkpoints(sid, 100) == 0  # nothing at all left in the partition


def test_pages_of_every_namespace_skip_no_checkpoint_whose_id_another_namespace_uses(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore
) -> None:
    """Subgraphs' checkpoints may share an id with the graph's: a listing of every namespace,
    paged one at a time, answers each of them once."""
    sid = sessions.create_session(memory, "alice").session_id
    for ns in ("", "child:1", "child:2"):
        for cid in ("01", "02", "03"):
            checkpoints.put_checkpoint(
                Thread(memory, store, "alice", sid), checkpoint_ns=ns, checkpoint_id=cid,
                parent_checkpoint_id=None, checkpoint=Blob("msgpack", b"c"),
                metadata=Blob("msgpack", b"m"), metadata_json={}, channel_versions={}, blobs=[],
            )  # fmt: skip
    seen: list[tuple[str, str]] = []
    position = None
    while True:
        found, position = checkpoints.list_checkpoints(
            Thread(memory, store, "alice", sid), checkpoint_ns=None, before=None, limit=2, filter={},
            after=position,
        )  # fmt: skip
        seen += [(t.checkpoint.checkpoint_id, t.checkpoint.checkpoint_ns) for t in found]
        if position is None:
            break
    assert seen == sorted(
        ((cid, ns) for ns in ("", "child:1", "child:2") for cid in ("01", "02", "03")),
        reverse=True,
    )
    # LangGraph's before: below that id, in every namespace.
    found, _ = checkpoints.list_checkpoints(
        Thread(memory, store, "alice", sid), checkpoint_ns=None, before="02", limit=10, filter={}
    )
    assert {t.checkpoint.checkpoint_id for t in found} == {"01"} and len(found) == 3


def _continued_thread(memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore) -> list[str]:
    """A thread under client id "thread-1" in three sessions (the first two ended and
    continued), a checkpoint in it: its sessions' ids, first to last."""
    first, _ = sessions.ensure_session(memory, "alice", "thread-1")
    _put(memory, store, first.session_id, "1", {"a": b"secret"}, {"a": "1"})
    chain = [first.session_id]
    for _ in range(2):
        sessions.end_session(memory, "alice", chain[-1])
        later = sessions.continue_client_session(memory, "alice", "thread-1", ended=chain[-1])
        assert later is not None
        chain.append(later.session_id)
    return chain


@pytest.mark.parametrize("which", [0, 1, 2], ids=["first", "middle", "last"])
def test_deleting_one_session_of_a_thread_by_its_server_id_deletes_the_thread_whole(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore, which: int
) -> None:
    """Every session of a thread shares its checkpoints (kept in its first session's partition,
    each holding the conversation so far), so deleting one of them deletes the thread: its
    sessions and checkpoints are gone, and its id starts a new, empty, usable thread. (Deleting
    the first left a thread whose id named a live session and whose every checkpoint read or
    write answered 404, for good.)"""
    chain = _continued_thread(memory, store)
    sessions.delete_session(memory, "alice", chain[which])

    for sid in chain:
        with pytest.raises(SessionNotFound):
            sessions.get_session(memory, "alice", sid)
    again, created = sessions.ensure_session(memory, "alice", "thread-1")
    assert created and again.session_id not in chain
    with pytest.raises(CheckpointNotFound):
        _get(memory, store, again.session_id, None)
    _put(memory, store, again.session_id, "2", {"a": b"new"}, {"a": "2"})
    assert _get(memory, store, again.session_id, None).values["a"].data == b"new"


def test_a_thread_whose_first_session_is_gone_is_deleted_whole_when_its_id_is_put_again(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore
) -> None:
    """A thread's delete marks its sessions first to last: one that stopped after the first
    leaves the rest to the next PUT of its id, which finishes it and starts anew."""
    chain = _continued_thread(memory, store)
    memory.mark_deleting(chain[0], "2026-11-27T10:00:00.000Z")  # the delete stopped here

    again, created = sessions.ensure_session(memory, "alice", "thread-1")
    assert created and again.session_id not in chain
    for sid in chain:
        with pytest.raises(SessionNotFound):
            sessions.get_session(memory, "alice", sid)
    _put(memory, store, again.session_id, "2", {"a": b"new"}, {"a": "2"})


def test_a_special_channel_written_twice_in_one_call_keeps_the_later_write(
    memory: InMemoryShortTermMemory, store: InMemoryCheckpointStore
) -> None:
    """Found by the differential test: two __error__ writes in one put_writes answered 400;
    InMemorySaver keeps the later (both have LangGraph's index -1 for that channel)."""
    sid = sessions.create_session(memory, "alice").session_id
    _put(memory, store, sid, "1", {}, {})
    checkpoints.put_writes(
        Thread(memory, store, "alice", sid), checkpoint_ns="", checkpoint_id="1",
        writes=[
            PendingWrite("t", 0, "messages", Blob("json", b"0")),
            PendingWrite("t", -1, "__error__", Blob("json", b"first")),
            PendingWrite("t", -1, "__error__", Blob("json", b"second")),
        ],
    )  # fmt: skip
    found = _get(memory, store, sid, "1")
    assert [(w.idx, w.value.data) for w in found.writes] == [(-1, b"second"), (0, b"0")]
    with pytest.raises(BadRequest, match="two writes"):
        checkpoints.put_writes(
            Thread(memory, store, "alice", sid), checkpoint_ns="", checkpoint_id="1",
            writes=[PendingWrite("t", 3, "a", Blob("json", b"1"))] * 2,
        )  # fmt: skip
