"""The embedded long-term index seen from several connections (local mode's processes)."""

from __future__ import annotations

from pathlib import Path

from chatmemory.adapters.embedded import _FTS_TABLES, EmbeddedLongTermIndex
from chatmemory.ports import MemoryDoc, Search
from chatmemory.schema import MEMORY_INDEX


def _doc(key: str, vector: list[float]) -> MemoryDoc:
    return MemoryDoc(
        doc_key=key,
        user_id="alice",
        session_id=key,
        kind="summary",
        text=f"about {key}",
        created_at="2026-01-01T00:00:00Z",
        embedding=vector,
    )


def test_a_write_by_another_connection_is_seen_by_vector_search(tmp_path: Path) -> None:
    # make run's gateway keeps one index open while `make ingest` or the consolidation of
    # another process writes to the same file: the cached vectors must not hide their writes.
    path = tmp_path / "memory.sqlite3"
    reader = EmbeddedLongTermIndex(path)
    writer = EmbeddedLongTermIndex(path)
    writer.upsert(MEMORY_INDEX, [_doc("old", [1.0, 0.0])])
    assert [
        c.doc.doc_key
        for c in reader.vector_search(Search(MEMORY_INDEX, [0.0, 1.0], "", 5, "alice"))
    ] == ["old"]
    writer.upsert(MEMORY_INDEX, [_doc("new", [0.0, 1.0])])
    found = reader.vector_search(Search(MEMORY_INDEX, [0.0, 1.0], "", 5, "alice"))
    assert [c.doc.doc_key for c in found] == ["new", "old"]
    writer.delete_session("alice", "new")
    found = reader.vector_search(Search(MEMORY_INDEX, [0.0, 1.0], "", 5, "alice"))
    assert [c.doc.doc_key for c in found] == ["old"]


def test_an_index_file_of_the_first_format_is_migrated_when_opened(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "memory.sqlite3"
    index = EmbeddedLongTermIndex(path)
    index.upsert(MEMORY_INDEX, [_doc("sailing", [1.0, 0.0])])
    del index
    with sqlite3.connect(path) as db:  # the first format: no owner column, user_version 0
        db.execute("DROP TABLE docs_fts")
        db.execute("CREATE VIRTUAL TABLE docs_fts USING fts5(text, tokenize='porter unicode61')")
        db.execute("INSERT INTO docs_fts (rowid, text) SELECT id, text FROM docs")
        db.execute("PRAGMA user_version = 0")
    reopened = EmbeddedLongTermIndex(path)
    [hit] = reopened.lexical_search(Search(MEMORY_INDEX, (), "about sailing", 5, "alice"))
    assert hit.doc.doc_key == "sailing"
    assert reopened.lexical_search(Search(MEMORY_INDEX, (), "about sailing", 5, "bob")) == []


def test_a_file_with_records_among_the_sessions_words_is_migrated_when_opened(
    tmp_path: Path,
) -> None:
    """The second format kept profile records in the sessions' full-text table, where they
    changed the sessions' BM25 statistics; opening it moves them to their own table."""
    import sqlite3
    from dataclasses import replace

    path = tmp_path / "memory.sqlite3"
    index = EmbeddedLongTermIndex(path)
    window = replace(_doc("s1", [1.0, 0.0]), text="our Lisbon trip", kind="chunk")
    fact = replace(window, doc_key="record#r1", session_id=None, kind="fact", record_id="r1")
    index.upsert(MEMORY_INDEX, [window, fact])
    del index
    with sqlite3.connect(path) as db:  # the second format: one full-text table for all
        db.execute(
            "INSERT INTO docs_fts (rowid, text, owner) SELECT rowid, text, owner FROM records_fts"
        )
        db.execute("DROP TABLE records_fts")
        db.execute("PRAGMA user_version = 2")

    reopened = EmbeddedLongTermIndex(path)

    with sqlite3.connect(path) as db:
        counts = [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in _FTS_TABLES]
    assert counts == [1, 1]
    found = reopened.lexical_search(Search(MEMORY_INDEX, (), "Lisbon", 5, "alice"))
    assert sorted(c.doc.doc_key for c in found) == ["record#r1", "s1"]


def test_lexical_search_ignores_stopwords_and_other_users(tmp_path: Path) -> None:
    index = EmbeddedLongTermIndex(tmp_path / "memory.sqlite3")
    bob = _doc("bob-sailing", [1.0, 0.0])
    bob.user_id = "bob"
    index.upsert(MEMORY_INDEX, [_doc("sailing", [1.0, 0.0]), bob])
    assert (
        index.lexical_search(Search(MEMORY_INDEX, (), "what did you say about the", 5, "alice"))
        == []
    )
    found = index.lexical_search(Search(MEMORY_INDEX, (), "what about sailing?", 5, "alice"))
    assert [c.doc.doc_key for c in found] == ["sailing"]


def test_sessions_only_leaves_out_profile_records() -> None:
    """/past ranks sessions: a fact or preference (no session_id) must not take its slots."""
    from dataclasses import replace

    index = EmbeddedLongTermIndex()
    window = replace(_doc("s1", [1.0, 0.0]), text="our Lisbon trip")
    fact = replace(window, doc_key="record#r1", session_id=None, kind="fact")
    index.upsert(MEMORY_INDEX, [window, fact])

    both = index.vector_search(Search(MEMORY_INDEX, [1.0, 0.0], "", 5, "alice"))
    assert {c.doc.doc_key for c in both} == {"s1", "record#r1"}
    only = index.vector_search(Search(MEMORY_INDEX, [1.0, 0.0], "", 5, "alice", sessions_only=True))
    assert [c.doc.doc_key for c in only] == ["s1"]
    words = index.lexical_search(Search(MEMORY_INDEX, (), "Lisbon", 5, "alice", sessions_only=True))
    assert [c.doc.doc_key for c in words] == ["s1"]
    assert len(index.lexical_search(Search(MEMORY_INDEX, (), "Lisbon", 5, "alice"))) == 2


class _DeletedBeforeFetch(EmbeddedLongTermIndex):
    """Another process deletes a session between this search's match and its fetch of the
    matched documents (two statements: make run's second handler process or its consolidation
    worker can write in between)."""

    writer: EmbeddedLongTermIndex

    def _docs(self, ids: list[int]):  # type: ignore[no-untyped-def]
        self.writer.delete_session("alice", "gone")
        return super()._docs(ids)


def test_a_document_deleted_between_match_and_fetch_is_left_out_of_both_searches(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.sqlite3"
    reader = _DeletedBeforeFetch(path)
    reader.writer = EmbeddedLongTermIndex(path)
    for search in (
        lambda: reader.lexical_search(Search(MEMORY_INDEX, (), "gone or kept", 5, "alice")),
        lambda: reader.vector_search(Search(MEMORY_INDEX, [1.0, 0.0], "", 5, "alice")),
    ):
        reader.writer.upsert(MEMORY_INDEX, [_doc("gone", [1.0, 0.0]), _doc("kept", [0.9, 0.1])])

        assert [c.doc.doc_key for c in search()] == ["kept"]
