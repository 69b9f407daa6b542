"""Embedded long-term index for local mode, tests and benchmarks: SQLite on disk (FTS5 for BM25)
plus exact cosine search with NumPy. Same port and same ranking code as OpenSearch."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

import numpy as np

from chatmemory.ports import Candidate, MemoryDoc, Search
from chatmemory.schema import PASSAGE_INDEX, SHARED_OWNER, TEXT_STOPWORDS, searched_apart

_TOKEN = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(TEXT_STOPWORDS)
_META_FIELDS = [
    f.name
    for f in fields(MemoryDoc)
    if f.name not in ("doc_key", "user_id", "kind", "text", "created_at", "embedding", "session_id")
]


# Version of the file layout (PRAGMA user_version); older files are migrated when opened.
# 2: the owner column; 3: profile records in a full-text table of their own.
_FORMAT = 3
# The full-text tables: sessions' entries and passages, and profile records (FTS5 computes
# BM25's statistics over a whole table, so records kept apart never change a session's score,
# as their own field does on OpenSearch: schema.RECORD_TEXT_FIELD).
_FTS_TABLES = ("docs_fts", "records_fts")


def owner_token(index: str, user_id: str) -> str:
    """A single full-text token naming (index, user): searches match it first."""
    return "o" + hashlib.sha1(f"{index}\x00{user_id}".encode()).hexdigest()[:20]


def fts_query(text: str) -> str | None:
    """Any of the query's words but stopwords (as OpenSearch's `match` on the `memory_text`
    analyzer does), quoted so FTS5 syntax is inert."""
    tokens = sorted({t.lower() for t in _TOKEN.findall(text)} - _STOPWORDS)
    return " OR ".join(f'"{t}"' for t in tokens) or None


class EmbeddedLongTermIndex:
    """LongTermIndex on one SQLite file. Each user's vectors are cached as one float32 matrix,
    and the full-text index carries an owner token, so a search reads only the caller's rows."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.RLock()
        # (index, user) -> row ids, their unit vectors (one row per document with a vector) and
        # whether each belongs to a session.
        self._matrices: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        # SQLite's data_version changes when another connection (another process of local
        # mode, `make ingest`...) commits: then the cached matrices are stale.
        self._data_version: int | None = None
        self.ensure_indexes()

    def ensure_indexes(self) -> None:
        with self._lock, self._db:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version < _FORMAT:
                # An older file's full-text index is built again: the first format had no owner
                # column, the second kept profile records with the sessions' entries.
                for table in _FTS_TABLES:
                    self._db.execute(f"DROP TABLE IF EXISTS {table}")
            self._db.executescript(
                """
                CREATE TABLE IF NOT EXISTS docs (
                    id INTEGER PRIMARY KEY,
                    idx TEXT NOT NULL, doc_key TEXT NOT NULL, user_id TEXT NOT NULL,
                    session_id TEXT, kind TEXT NOT NULL, text TEXT NOT NULL,
                    created_at TEXT NOT NULL, meta TEXT NOT NULL, embedding BLOB,
                    UNIQUE (idx, doc_key)
                );
                CREATE INDEX IF NOT EXISTS docs_user ON docs (idx, user_id, session_id);
                CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
                    text, owner, tokenize = 'porter unicode61'
                );
                CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
                    text, owner, tokenize = 'porter unicode61'
                );
                """
            )
            if version < _FORMAT:
                rows = self._db.execute(
                    "SELECT id, idx, user_id, text, session_id, json_extract(meta, '$.record_id') "
                    "FROM docs"
                ).fetchall()
                for row_id, index, user_id, text, session_id, record_id in rows:
                    self._index_text(row_id, index, user_id, text, session_id, record_id)
                self._db.execute(f"PRAGMA user_version = {_FORMAT}")

    def _index_text(
        self,
        row_id: int,
        index: str,
        user_id: str,
        text: str,
        session_id: str | None,
        record_id: str | None,
    ) -> None:
        table = _FTS_TABLES[1] if searched_apart(session_id, record_id) else _FTS_TABLES[0]
        self._db.execute(
            f"INSERT INTO {table} (rowid, text, owner) VALUES (?, ?, ?)",
            (row_id, text, owner_token(index, user_id)),
        )

    def upsert(self, index: str, docs: Sequence[MemoryDoc]) -> None:
        if not docs:
            return
        with self._lock, self._db:
            for doc in docs:
                self._delete_where("idx = ? AND doc_key = ?", (index, doc.doc_key))
                meta = json.dumps({k: getattr(doc, k) for k in _META_FIELDS})
                vector = np.asarray(doc.embedding, dtype=np.float32).tobytes()
                cursor = self._db.execute(
                    "INSERT INTO docs (idx, doc_key, user_id, session_id, kind, text, "
                    "created_at, meta, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        index,
                        doc.doc_key,
                        doc.user_id,
                        doc.session_id,
                        doc.kind,
                        doc.text,
                        doc.created_at,
                        meta,
                        vector,
                    ),
                )
                row_id = cursor.lastrowid
                assert row_id is not None  # an INSERT's
                self._index_text(
                    row_id, index, doc.user_id, doc.text, doc.session_id, doc.record_id
                )
            for user in {doc.user_id for doc in docs}:
                self._matrices.pop((index, user), None)

    def vector_search(self, search: Search) -> list[Candidate]:
        user_id, k = search.user_id, search.k
        with self._lock:
            ids, matrix, of_session = self._matrix(
                search.index, SHARED_OWNER if user_id is None else user_id
            )
        if not len(ids):
            return []
        scores = matrix @ np.asarray(search.vector, dtype=np.float32)
        if search.sessions_only:  # masked, not copied: the matrix can be 100,000 rows
            scores[~of_session] = -np.inf
            k = min(k, int(of_session.sum()))
            if not k:
                return []
        top = np.argsort(-scores)[:k] if len(scores) <= k else _top_k(scores, k)
        found = self._docs([int(ids[i]) for i in top])
        return [
            Candidate(doc=found[int(ids[i])], vector_score=float(scores[i]))
            for i in top
            if int(ids[i]) in found
        ]

    def lexical_search(self, search: Search) -> list[Candidate]:
        query = fts_query(search.text)
        if query is None:
            return []
        user_id, k, sessions_only = search.user_id, search.k, search.sessions_only
        owner = owner_token(search.index, SHARED_OWNER if user_id is None else user_id)
        # Sessions' entries, and unless only they are asked for, profile records: each table
        # scores with its own statistics (see _FTS_TABLES), and the best k of both are kept.
        tables = _FTS_TABLES[:1] if sessions_only else _FTS_TABLES
        # A session's documents only: each match is looked up by primary key (an IN subquery
        # made SQLite scan the table for every match: 14 s a query at 100,000 documents).
        only = " JOIN docs ON docs.id = {0}.rowid AND docs.session_id IS NOT NULL"
        rows: list[tuple[int, float]] = []
        with self._lock:
            for table in tables:
                # The owner column narrows the match to the caller's rows before BM25 is
                # computed; its weight 0 keeps it out of the score.
                rows += self._db.execute(
                    f"SELECT {table}.rowid, -bm25({table}, 1.0, 0.0) FROM {table}"
                    f"{only.format(table) if sessions_only else ''} "
                    f"WHERE {table} MATCH ? ORDER BY bm25({table}, 1.0, 0.0) LIMIT ?",
                    (f"owner : {owner} AND text : ({query})", k),
                ).fetchall()
        rows = sorted(rows, key=lambda r: -r[1])[:k]
        found = self._docs([r[0] for r in rows])
        return [
            Candidate(doc=found[r[0]], lexical_score=float(r[1])) for r in rows if r[0] in found
        ]

    def hybrid_search(self, search: Search) -> tuple[list[Candidate], list[Candidate]]:
        return self.vector_search(search), self.lexical_search(search)

    def delete_session(
        self, user_id: str, session_id: str, *, num_turns: int | None = None
    ) -> None:
        with self._lock, self._db:
            self._delete_where("user_id = ? AND session_id = ?", (user_id, session_id))
            self._matrices.clear()

    def delete_user(self, user_id: str, *, doc_keys: Sequence[str] = ()) -> None:
        with self._lock, self._db:
            self._delete_where("user_id = ?", (user_id,))
            self._matrices.clear()

    def delete_documents(self, index: str, user_id: str, doc_keys: Sequence[str]) -> None:
        if not doc_keys:
            return
        marks = ",".join("?" * len(doc_keys))
        with self._lock, self._db:
            self._delete_where(
                f"idx = ? AND user_id = ? AND doc_key IN ({marks})",
                (index, user_id, *doc_keys),
            )
            self._matrices.clear()

    def delete_document(self, doc_id: str, *, keep: Sequence[str] = ()) -> None:
        keys = [f"{PASSAGE_INDEX}", doc_id, *keep]
        marks = ",".join("?" * len(keep))
        where = "idx = ? AND json_extract(meta, '$.doc_id') = ?"
        if keep:
            where += f" AND doc_key NOT IN ({marks})"
        with self._lock, self._db:
            self._delete_where(where, tuple(keys))
            self._matrices.clear()

    def _delete_where(self, where: str, params: tuple[str, ...]) -> None:
        ids = [r[0] for r in self._db.execute(f"SELECT id FROM docs WHERE {where}", params)]
        if ids:
            marks = ",".join("?" * len(ids))
            for table in _FTS_TABLES:
                self._db.execute(f"DELETE FROM {table} WHERE rowid IN ({marks})", ids)
            self._db.execute(f"DELETE FROM docs WHERE id IN ({marks})", ids)

    def _matrix(self, index: str, user_id: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._matrices.clear()
            self._data_version = version
        cached = self._matrices.get((index, user_id))
        if cached is None:
            rows = self._db.execute(
                "SELECT id, embedding, session_id IS NOT NULL FROM docs WHERE idx = ? "
                "AND user_id = ? AND length(embedding) > 0 ORDER BY id",
                (index, user_id),
            ).fetchall()
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            vectors = [np.frombuffer(r[1], dtype=np.float32) for r in rows]
            matrix = np.vstack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
            of_session = np.array([bool(r[2]) for r in rows], dtype=bool)
            cached = self._matrices[(index, user_id)] = (ids, matrix, of_session)
        return cached

    def _docs(self, ids: list[int]) -> dict[int, MemoryDoc]:
        """The documents of these ids that still exist. A search matches, then fetches, in two
        statements; another process (make run's second handler, the consolidation worker) may
        delete or replace a document in between, and a deleted document is no result."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, doc_key, user_id, session_id, kind, text, created_at, meta "
                f"FROM docs WHERE id IN ({marks})",
                ids,
            ).fetchall()
        return {
            r[0]: MemoryDoc(
                doc_key=r[1],
                user_id=r[2],
                session_id=r[3],
                kind=r[4],
                text=r[5],
                created_at=r[6],
                **json.loads(r[7]),
            )
            for r in rows
        }


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part])]
