"""Reads bounded by what they answer, as a contract: the items and bytes each read of
checkpoints consumes (tests/contract/reads.py counts them the same way on moto, DynamoDB Local
and the in-memory fake) are held to the page asked: one checkpoint for LangGraph's get_tuple,
`limit` plus a constant for a listing, keys and metadata only for what a filter leaves out."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.adapters.dynamodb.checkpoints import DynamoCheckpointStore
from chatmemory.domain import Blob, ChannelBlob, PendingWrite
from chatmemory.services.conversation import checkpoints, sessions
from chatmemory.services.conversation.checkpoints import CheckpointTuple
from tests.checkpoints_fake import InMemoryCheckpointStore
from tests.contract.conftest import BACKENDS, dynamodb_local_tables
from tests.contract.reads import MeteredClient, ReadMeter
from tests.memory_fake import InMemoryShortTermMemory

# What a read may take besides what it answers: the items of keys and metadata of a page's
# checkpoints and one more (the end of a page), each a few hundred bytes here.
SLACK_ITEMS = 3
SLACK_BYTES = 8 * 1024
VALUE = 120_000  # each checkpoint's own channel value: what a read must not take in vain
STATE = 30_000  # each checkpoint's state without its values


class Thread:
    """A thread of many large checkpoints in one namespace and a few in a subgraph's, on one
    backend, its reads counted."""

    def __init__(self, store: Any, meter: ReadMeter, table: str) -> None:
        self.store, self.meter, self.table = store, meter, table
        self.memory = InMemoryShortTermMemory()
        self.sid = sessions.create_session(self.memory, "alice").session_id
        self.thread = checkpoints.Thread(self.memory, self.store, "alice", self.sid)

    def put(self, n: int, ns: str = "", **metadata: Any) -> None:
        cid = f"1ef-{n:04d}"
        version = str(n)
        checkpoints.put_checkpoint(
            self.thread,
            checkpoint_ns=ns,
            checkpoint_id=cid,
            parent_checkpoint_id=None,
            checkpoint=Blob("msgpack", bytes([n % 256]) * STATE),
            metadata=Blob("msgpack", b"meta"),
            metadata_json={"step": n, **metadata},
            channel_versions={"messages": version},
            blobs=[ChannelBlob("messages", version, Blob("msgpack", bytes([n % 251]) * VALUE))],
        )
        checkpoints.put_writes(
            self.thread,
            checkpoint_ns=ns,
            checkpoint_id=cid,
            writes=[PendingWrite("task", 0, "messages", Blob("msgpack", b"w" * 100))],
        )

    def listing(self, **ask: Any) -> list[CheckpointTuple]:
        self.meter.reset()
        found, _ = checkpoints.list_checkpoints(
            self.thread,
            **{"checkpoint_ns": "", "before": None, "limit": 10, "filter": {}, **ask},
        )
        return found

    def assert_bounded_by(self, answered: list[CheckpointTuple]) -> None:
        """The reads took the answered checkpoints' items and bytes and a constant more."""
        items = sum(2 + len(t.values) + len(t.writes) for t in answered)  # entry, body, ...
        assert self.meter.items(self.table) <= items + SLACK_ITEMS, self.meter.reads
        assert self.meter.bytes(self.table) <= _answered(answered) + SLACK_BYTES, self.meter.reads


@pytest.fixture(params=BACKENDS)
def filled(request: pytest.FixtureRequest) -> Thread:
    """24 checkpoints in the graph's namespace (every other one red), 3 in a subgraph's."""
    meter = ReadMeter()
    if request.param == "in-memory":
        made = Thread(InMemoryCheckpointStore(meter), meter, "checkpoints")
    else:
        if request.param == "dynamodb-local":
            client, names = dynamodb_local_tables(request, schema.CHECKPOINTS)
            table = names[schema.CHECKPOINTS.logical_name]
        else:
            request.getfixturevalue("dynamodb")  # moto tables from schema.py
            client, table = wiring.aws_client("dynamodb"), wiring.settings().checkpoints_table
        made = Thread(DynamoCheckpointStore(MeteredClient(client, meter), table), meter, table)
    for n in range(24):
        made.put(n, color="red" if n % 2 else "blue")
    for n in range(24, 27):
        made.put(n, ns="child:1")
    return made


def test_the_newest_checkpoint_reads_one_checkpoint(filled: Thread) -> None:
    """LangGraph's get_tuple without an id: a listing of limit 1 (the API's), or the newest."""
    (newest,) = filled.listing(limit=1)
    assert newest.checkpoint.checkpoint_id == "1ef-0023"
    filled.assert_bounded_by([newest])

    filled.meter.reset()
    got = checkpoints.get_checkpoint(
        filled.thread,
        checkpoint_ns="",
        checkpoint_id=None,
    )
    assert got.checkpoint.checkpoint_id == "1ef-0023"
    filled.assert_bounded_by([got])


def test_a_listing_reads_its_page_and_a_constant_more(filled: Thread) -> None:
    page = filled.listing(limit=5, before="1ef-0020")
    ids = [t.checkpoint.checkpoint_id for t in page]
    assert ids == [f"1ef-{n:04d}" for n in (19, 18, 17, 16, 15)]
    filled.assert_bounded_by(page)


def test_a_filter_reads_values_only_of_what_it_answers(filled: Thread) -> None:
    page = filled.listing(limit=3, filter={"color": "red"})
    assert [t.checkpoint.metadata_json["step"] for t in page] == [23, 21, 19]
    # The keys and metadata of the checkpoints it looked at (a page of them), values of three.
    assert filled.meter.bytes(filled.table) <= _answered(page) + 27 * 300 + SLACK_BYTES

    none = filled.listing(limit=3, filter={"color": "green"})
    assert none == []
    assert filled.meter.bytes(filled.table) < VALUE  # keys and metadata of each, no value


def test_a_listing_of_every_namespace_reads_values_only_of_its_page(filled: Thread) -> None:
    page = filled.listing(limit=2, checkpoint_ns=None)
    assert [(t.checkpoint.checkpoint_ns, t.checkpoint.checkpoint_id) for t in page] == [
        ("child:1", "1ef-0026"),
        ("child:1", "1ef-0025"),
    ]
    # Every checkpoint's keys and metadata (a listing of every namespace orders them all),
    # the values of the page only.
    assert filled.meter.bytes(filled.table) <= _answered(page) + 27 * 300 + SLACK_BYTES


def _answered(page: list[CheckpointTuple]) -> int:
    return sum(
        t.size + len(t.checkpoint.checkpoint.data) + len(t.checkpoint.metadata.data) for t in page
    )


# --- records ----------------------------------------------------------------------------------

RECORD_TEXT = 60_000  # an agent's memory of nearly the 64 KiB a record may hold


class Records:
    """A caller with 30 large records in three namespaces and a few profile facts, on one
    backend, its reads of the records table counted."""

    def __init__(self, memory: Any, meter: ReadMeter, table: str) -> None:
        from chatmemory.adapters.embedded import EmbeddedLongTermIndex
        from tests.fakes import FakeEmbedder

        self.memory, self.meter, self.table = memory, meter, table
        self.embedder, self.index = FakeEmbedder(), EmbeddedLongTermIndex()

    def put(self, record_id: str, text: str, namespace: tuple[str, ...]) -> Any:
        from chatmemory.clock import utc_now
        from chatmemory.services.profile import profile

        return profile.put_keyed_record(
            "alice",
            record_id,
            text,
            profile.Editing(self.memory, self.embedder, self.index, utc_now()),
            record_type=None,
            namespace=namespace,
        )


@pytest.fixture(params=BACKENDS)
def records(request: pytest.FixtureRequest) -> Records:
    from chatmemory.adapters.dynamodb import DynamoShortTermMemory

    meter = ReadMeter()
    tables = (schema.SESSIONS, schema.CONVERSATIONS, schema.USERS, schema.RECORDS)
    if request.param == "in-memory":
        made = Records(InMemoryShortTermMemory(meter=meter), meter, "records")
    else:
        if request.param == "dynamodb-local":
            client, names = dynamodb_local_tables(request, *tables)
            physical = [names[spec.logical_name] for spec in tables]
        else:
            request.getfixturevalue("dynamodb")  # moto tables from schema.py
            cfg = wiring.settings()
            client = wiring.aws_client("dynamodb")
            physical = [
                cfg.sessions_table,
                cfg.conversations_table,
                cfg.users_table,
                cfg.records_table,
            ]
        memory = DynamoShortTermMemory(MeteredClient(client, meter), *physical)
        made = Records(memory, meter, physical[-1])
    for n in range(30):
        text = f"note {n} " + "x" * RECORD_TEXT
        made.put(f"n{n:02d}", text, ("agent", "notes", str(n % 3)))
    for n in range(3):
        made.put(f"fact-{n}", f"I like tea number {n}.", ())
    return made


def _ids(records: Records) -> set[str]:
    return {key[-1] for key in records.meter.read_keys(records.table)}


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_a_keyed_put_reads_its_own_record_only(records: Records, existing: bool) -> None:
    """A keyed POST /memories/records in a namespace read the caller's whole partition (30
    records of 60 KB here) to look for duplicates its namespace never merges with."""
    if existing:
        records.put("m1", "The meeting is on Monday.", ("memories",))
    records.meter.reset()
    records.put("m1", "The meeting moved to Tuesday.", ("memories",))
    assert _ids(records) <= {"m1"}, records.meter.reads
    assert records.meter.bytes(records.table) < 8 * 1024


def test_the_namespaces_are_read_without_the_records_text(records: Records) -> None:
    from chatmemory.services.profile import profile

    records.meter.reset()
    found = profile.list_namespaces(records.memory, "alice")
    assert found == [("agent", "notes", "0"), ("agent", "notes", "1"), ("agent", "notes", "2"),
                     ("profile",)]  # fmt: skip
    # Keys and namespaces of the 33 records, and the one profile fact that shows the profile.
    assert records.meter.bytes(records.table) < 16 * 1024, records.meter.reads
    assert (
        _ids(records) - {f"n{n:02d}" for n in range(30)} - {"fact-0", "fact-1", "fact-2"} == set()
    )
