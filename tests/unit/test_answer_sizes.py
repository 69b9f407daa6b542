"""Every answer of the chat API fits a synchronous Lambda answer: at most 6 MiB as Lambda's
runtime sends it (the body's JSON, non-ASCII escaped, inside the proxy answer's JSON, which
escapes its quotes and backslashes again); API Gateway answers 502 to a larger one. The
routes whose answers grow with stored text cut their pages by bytes (with a token or an offset
for the rest) or clip what they quote - through the chat Lambda on moto."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import limits
from chatmemory.schema import MAX_RECORD_CHARS
from tests.records_helpers import World, chat_world

LIMIT = limits.LAMBDA_PAYLOAD_BYTES
# Texts as long as a record may be: ASCII (the audit's case), a script JSON escapes (6 bytes a
# character, 7 in the proxy answer), and quotes (escaped twice: 4 bytes each).
TEXTS = {
    "ascii": lambda n: f"Record {n:03d} " + "x" * (MAX_RECORD_CHARS - 11),
    "cyrillic": lambda n: f"Запись {n:03d} " + "я" * (MAX_RECORD_CHARS - 11),
    "quotes": lambda n: f"Record {n:03d} " + '"' * (MAX_RECORD_CHARS - 11),
}


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context)


def _call(world: World, method: str, path: str, body: Any = None, **query: str) -> Any:
    status, data = world.api.call(method, path, body, query=query or None)
    assert status == 200, data
    assert world.api.answer_bytes <= LIMIT, f"{method} {path}: {world.api.answer_bytes} bytes"
    return data


def _records(world: World, kind: str, count: int) -> list[str]:
    for n in range(count):
        world.state(TEXTS[kind](n), record_id=f"r{n:03d}")
    return [f"r{n:03d}" for n in range(count)]


# Records of each kind that make more than 6 MiB (100 ASCII ones are 6.5 MB).
COUNTS = {"ascii": 100, "cyrillic": 16, "quotes": 30}


@pytest.mark.parametrize("kind", ["cyrillic", "quotes"])
def test_a_record_search_of_long_records_pages_by_offset_within_the_limit(
    world: World, kind: str
) -> None:
    """Before the fix, limit=100 over 100 records of 65,536 ASCII characters answered
    6,589,943 bytes (Lambda fails it: API Gateway answers 502); 16 in Cyrillic are 7.3 MB."""
    stored = _records(world, kind, COUNTS[kind])
    found: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = _call(world, "POST", "/memories/records/search", {"limit": 100, "offset": offset})
        assert page["records"], "a page always carries a record"
        found += [r["record_id"] for r in page["records"]]
        offset = page["next_offset"]
        if offset is not None:
            assert offset == len(found)
    assert sorted(found) == stored  # every record once, none skipped by the cut


def test_a_record_query_of_long_records_pages_by_token_within_the_limit(world: World) -> None:
    stored = _records(world, "cyrillic", COUNTS["cyrillic"])
    found: list[str] = []
    token: str | None = None
    for _ in range(20):
        query = {"q": "Запись", "limit": "100", **({"next_token": token} if token else {})}
        page = _call(world, "GET", "/memories/records", **query)
        found += [r["record_id"] for r in page["records"]]
        token = page["next_token"]
        if token is None:
            break
    assert sorted(found) == stored


def test_recalled_sessions_with_long_windows_come_with_clipped_snippets(world: World) -> None:
    """GET /memories?k=50 answers 3 texts per session: 50 sessions of Russian windows were
    18.5 MB before the fix. Every session is still there, its snippets clipped in their
    order, the short ones whole."""
    from chatmemory.ports import MemoryDoc
    from chatmemory.schema import MEMORY_INDEX, chunk_doc_key
    from chatmemory.services.conversation import sessions
    from tests.fakes import FakeEmbedder

    window = "Мы обсуждали поездку в Лиссабон и что взять с собой. " * 400  # 21,200 characters
    docs: list[MemoryDoc] = []
    for n in range(50):
        sid = sessions.create_session(world.memory, "alice").session_id
        for first in (1, 3, 5):
            text = "Лиссабон коротко." if (n, first) == (0, 5) else f"{n} {first} {window}"
            docs.append(
                MemoryDoc(
                    doc_key=chunk_doc_key(sid, first),
                    user_id="alice",
                    kind="chunk",
                    text=text,
                    created_at="2026-01-01T10:00:00.000Z",
                    embedding=FakeEmbedder().embed([text])[0],
                    session_id=sid,
                    turn_from=first,
                    turn_to=first + 1,
                )
            )
    world.index.upsert(MEMORY_INDEX, docs)

    memories = _call(world, "GET", "/memories", q="поездку в Лиссабон", k="50")["memories"]

    assert len(memories) == 50
    snippets = [s for m in memories for s in m["snippets"]]
    assert len(snippets) == 150
    assert "Лиссабон коротко." in snippets  # a short one stays whole
    clipped = [s[:-1] for s in snippets if s.endswith("…")]
    texts = [doc.text for doc in docs]
    assert clipped and all(any(t.startswith(s) for t in texts) for s in clipped)


def test_checkpoints_with_large_states_are_listed_in_pages_within_the_limit(world: World) -> None:
    """A page counted its checkpoints' channel values and writes only: 20 checkpoints of
    290,000 bytes each (their own state, 387 KB in base64) answered 7.7 MB before the fix."""
    import base64

    sid = world.api.new_session()
    state = base64.b64encode(b"\x00" * 290_000).decode()
    for n in range(20):
        body = {
            "checkpoint": {"type": "bytes", "data": state},
            "metadata": {"type": "json", "data": base64.b64encode(b"{}").decode()},
            "channel_versions": {},
        }
        status, data = world.api.call("PUT", f"/sessions/{sid}/checkpoints/c{n:02d}", body)
        assert status == 200, data
    found: list[str] = []
    before: str | None = None
    for _ in range(20):
        query = {"limit": "100", **({"before": before} if before else {})}
        page = _call(world, "GET", f"/sessions/{sid}/checkpoints", **query)
        found += [c["checkpoint_id"] for c in page["checkpoints"]]
        before = page["next_before"]
        if before is None:
            break
    assert found == [f"c{n:02d}" for n in reversed(range(20))]


def test_an_export_of_quoted_text_pages_within_the_limit(world: World) -> None:
    """An export page was measured with the body's escaping only: a quote took 2 bytes there
    and 4 in the answer Lambda sends, so a page of 4 MiB was 8 MB (45 messages of 50,000
    quotes: one page of 8.4 MB before the fix)."""
    quoted = {"input": '"' * 30_000, "response": '"' * 20_000}
    document = {"session": {"name": "quotes"}, "messages": [quoted] * 45}
    status, data = world.api.call("POST", "/sessions/import", document)
    assert status == 201, data
    sid = data["session"]["session_id"]
    exported: list[int] = []
    token: str | None = None
    for _ in range(20):
        page = _call(
            world, "GET", f"/sessions/{sid}/export", **({"next_token": token} if token else {})
        )
        exported += [m["turn"] for m in page["messages"]]
        token = page["next_token"]
        if token is None:
            break
    assert exported == list(range(1, 46))


# A control character is 1 byte in DynamoDB and 7 in the answer ("\u0001", its backslash
# escaped again): a 1 MB page of a Query is 7 MB of answer.
CONTROL = "\x01"


def _imported(world: World, count: int, text: str) -> str:
    message = {"input": text * 30_000, "response": text * 20_000}
    document = {"session": {"name": "long"}, "messages": [message] * count}
    status, data = world.api.call("POST", "/sessions/import", document)
    assert status == 201, data
    return data["session"]["session_id"]


def _pages(world: World, path: str, key: str, **query: str) -> list[Any]:
    found: list[Any] = []
    token: str | None = None
    for _ in range(40):
        page = _call(world, "GET", path, **query, **({"next_token": token} if token else {}))
        found += page[key]
        token = page["next_token"]
        if token is None:
            return found
    raise AssertionError("pages without end")


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_messages_of_control_characters_are_listed_in_pages_within_the_limit(
    world: World, order: str
) -> None:
    """One DynamoDB page (1 MB at most) bounded the answer only for ordinary text: 45 messages
    of control characters answered 7 MB and more before the fix."""
    sid = _imported(world, 45, CONTROL)
    turns = [
        m["turn"]
        for m in _pages(world, f"/sessions/{sid}/messages", "messages", limit="100", order=order)
    ]
    assert turns == sorted(range(1, 46), reverse=order == "desc")


def test_records_of_control_characters_are_listed_in_pages_within_the_limit(
    world: World,
) -> None:
    stored = [
        world.state("Record " + CONTROL * 65_000, record_id=f"r{n:02d}")["record_id"]
        for n in range(16)
    ]
    listed = [r["record_id"] for r in _pages(world, "/memories/records", "records", limit="100")]
    assert listed == sorted(stored, reverse=True)


def test_long_namespaces_are_listed_in_pages_within_the_limit(world: World) -> None:
    """A namespace is up to 16 labels of 128 characters, and a page up to 1,000 of them:
    250 namespaces of emoji labels (27 KB each in the answer) were 6.7 MB before the fix."""
    from chatmemory.domain import MemoryRecord
    from chatmemory.schema import RecordOrigin, RecordType

    labels = ["\U0001f600" * 127 + chr(0x41 + n) for n in range(15)]
    for n in range(250):
        namespace = (f"ns{n:03d}", *labels)
        record = MemoryRecord(
            f"r{n:03d}", "alice", RecordType.FACT, "{}", "2026-01-01T10:00:00.000Z",
            "2026-01-01T10:00:00.000Z", RecordOrigin.STATED, namespace=namespace,
        )  # fmt: skip
        assert world.memory.put_record(record)
    found: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = _call(world, "POST", "/memories/namespaces", {"limit": 1000, "offset": offset})
        found += [ns[0] for ns in page["namespaces"]]
        offset = page["next_offset"]
    assert found == [f"ns{n:03d}" for n in range(250)]
