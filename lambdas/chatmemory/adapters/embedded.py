"""Embedded long-term index for local mode, tests and benchmarks: SQLite on disk (FTS5 for BM25)
plus exact cosine search with NumPy. Same port and same ranking code as OpenSearch."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

import numpy as np

from chatmemory.ports import Candidate, MemoryDoc

_TOKEN = re.compile(r"\w+", re.UNICODE)
_META_FIELDS = [f.name for f in fields(MemoryDoc) if f.name not in (
    "doc_key", "user_id", "kind", "text", "created_at", "embedding", "session_id"
)]
# The passage index is shared: its documents carry this user id (see services.ingest).
SHARED = ""


def fts_query(text: str) -> str | None:
    """Any of the query's words (as OpenSearch's `match` does), quoted so FTS5 syntax is inert."""
    tokens = sorted({t.lower() for t in _TOKEN.findall(text)})
    return " OR ".join(f'"{t}"' for t in tokens) or None


class EmbeddedLongTermIndex:
    """LongTermIndex on one SQLite file. Vectors are cached per index as one float32 matrix."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.RLock()
        self._matrices: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.ensure_indexes()

    def ensure_indexes(self) -> None:
        with self._lock, self._db:
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
                    text, tokenize = 'porter unicode61'
                );
                """
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
                    (index, doc.doc_key, doc.user_id, doc.session_id, doc.kind, doc.text,
                     doc.created_at, meta, vector),
                )
                self._db.execute(
                    "INSERT INTO docs_fts (rowid, text) VALUES (?, ?)", (cursor.lastrowid, doc.text)
                )
            self._matrices.pop(index, None)

    def vector_search(
        self, index: str, vector: Sequence[float], k: int, user_id: str | None
    ) -> list[Candidate]:
        with self._lock:
            ids, users, matrix = self._matrix(index)
        if not len(ids):
            return []
        query = np.asarray(vector, dtype=np.float32)
        mask = users == (SHARED if user_id is None else user_id)
        if not mask.any():
            return []
        scores = matrix[mask] @ query
        own = ids[mask]
        top = np.argsort(-scores)[:k] if len(scores) <= k else _top_k(scores, k)
        found = self._docs([int(own[i]) for i in top])
        return [Candidate(doc=found[int(own[i])], vector_score=float(scores[i])) for i in top]

    def lexical_search(
        self, index: str, text: str, k: int, user_id: str | None
    ) -> list[Candidate]:
        query = fts_query(text)
        if query is None:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT docs.id, -bm25(docs_fts) FROM docs_fts JOIN docs ON docs.id = docs_fts.rowid "
                "WHERE docs_fts MATCH ? AND docs.idx = ? AND docs.user_id = ? "
                "ORDER BY bm25(docs_fts) LIMIT ?",
                (query, index, SHARED if user_id is None else user_id, k),
            ).fetchall()
        found = self._docs([r[0] for r in rows])
        return [Candidate(doc=found[r[0]], lexical_score=float(r[1])) for r in rows]

    def delete_session(self, user_id: str, session_id: str) -> None:
        with self._lock, self._db:
            self._delete_where("user_id = ? AND session_id = ?", (user_id, session_id))
            self._matrices.clear()

    def delete_user(self, user_id: str) -> None:
        with self._lock, self._db:
            self._delete_where("user_id = ?", (user_id,))
            self._matrices.clear()

    def count(self, index: str) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM docs WHERE idx = ?", (index,)).fetchone()[0]

    def _delete_where(self, where: str, params: tuple[str, ...]) -> None:
        ids = [r[0] for r in self._db.execute(f"SELECT id FROM docs WHERE {where}", params)]
        if ids:
            marks = ",".join("?" * len(ids))
            self._db.execute(f"DELETE FROM docs_fts WHERE rowid IN ({marks})", ids)
            self._db.execute(f"DELETE FROM docs WHERE id IN ({marks})", ids)

    def _matrix(self, index: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cached = self._matrices.get(index)
        if cached is None:
            rows = self._db.execute(
                "SELECT id, user_id, embedding FROM docs WHERE idx = ? ORDER BY id", (index,)
            ).fetchall()
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            users = np.array([r[1] for r in rows], dtype=object)
            vectors = [np.frombuffer(r[2], dtype=np.float32) for r in rows]
            matrix = np.vstack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
            cached = self._matrices[index] = (ids, users, matrix)
        return cached

    def _docs(self, ids: list[int]) -> dict[int, MemoryDoc]:
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
                doc_key=r[1], user_id=r[2], session_id=r[3], kind=r[4], text=r[5],
                created_at=r[6], **json.loads(r[7]),
            )
            for r in rows
        }


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part])]



