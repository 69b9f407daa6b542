"""The long-term index port (re-exported by ports.py): its entries (MemoryDoc), what a search
returns (Candidate), and LongTermIndex, which OpenSearch, S3 Vectors and the embedded index
implement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from chatmemory.schema import MemoryKind


@dataclass
class MemoryDoc:
    """One entry of a long-term index: a session summary, a transcript chunk or a passage.

    `doc_key` is deterministic (session id + part), so re-indexing overwrites."""

    doc_key: str
    user_id: str
    kind: MemoryKind | str
    text: str
    created_at: str
    embedding: list[float] = field(default_factory=list)
    session_id: str | None = None
    title: str = ""
    doc_id: str | None = None
    passage_id: str | None = None
    source: str | None = None
    turn_from: int | None = None
    turn_to: int | None = None
    # A profile record's entry: its id, when a newer record superseded it, and the sessions an
    # extracted record was drawn from (it is recalled only while one of them exists; a record
    # the caller stated or corrected lists none: it is theirs, whatever happens to sessions).
    record_id: str | None = None
    valid_until: str | None = None
    sessions: list[str] = field(default_factory=list)

    def of_live_record(self, live_records: Mapping[str, str]) -> bool:
        """False when this is a record's entry and the record is gone, or is no longer the
        record the entry was written for: `live_records` maps each live record id to its
        generation (ShortTermMemory.live). A key deleted, or expired and removed by DynamoDB's
        TTL before its purge ran, then created again has a new generation; the old entries,
        keyed by the old one (services/profile.doc_key_of), say what the key no longer says."""
        if self.record_id is None:
            return True
        generation = live_records.get(self.record_id)
        if generation is None:
            return False
        return not generation or self.doc_key.endswith(f"#{generation}")


@dataclass
class Candidate:
    """A raw hit of one retrieval method; the shared ranking code fuses them."""

    doc: MemoryDoc
    vector_score: float | None = None  # cosine similarity of unit vectors
    lexical_score: float | None = None  # BM25


@dataclass(frozen=True)
class Search:
    """One search of a long-term index: the `k` best documents of `index` for `vector` and for
    the words of `text`, among `user_id`'s (None: the shared passages); `sessions_only`: only
    documents of a session (not profile records), as /past asks. vector_search reads only its
    vector, lexical_search only its text, hybrid_search both."""

    index: str
    vector: Sequence[float]
    text: str
    k: int
    user_id: str | None
    sessions_only: bool = False


class LongTermIndex(Protocol):
    """What the OpenSearch adapter and the embedded index both do. `user_id=None` searches
    the shared index of verified passages."""

    def ensure_indexes(self) -> None: ...

    def upsert(self, index: str, docs: Sequence[MemoryDoc]) -> None: ...

    def vector_search(self, search: Search) -> list[Candidate]:
        """The `search.k` documents nearest `search.vector` (its text unused)."""
        ...

    def lexical_search(self, search: Search) -> list[Candidate]:
        """BM25 matches of `search.text` (its vector unused). A store without full-text search
        (S3 Vectors) cannot search by words alone and returns none: services search through
        hybrid_search."""
        ...

    def hybrid_search(self, search: Search) -> tuple[list[Candidate], list[Candidate]]:
        """vector_search and lexical_search together, in one request where the store allows
        (a chat turn's recall costs one search). A store without full-text search scores
        words over its vector candidates (services/longterm/lexical.py)."""
        ...

    def delete_session(
        self, user_id: str, session_id: str, *, num_turns: int | None = None
    ) -> None:
        """Forget every memory of one session; searchable no more once this returns.
        `num_turns`: the session's turn count, from which a store that deletes by key (S3
        Vectors, no delete-by-query) derives every key the session can have."""
        ...

    def delete_user(self, user_id: str, *, doc_keys: Sequence[str] = ()) -> None:
        """Forget every memory of one owner key; searchable no more once this returns.
        A store that deletes by key cannot find an owner's entries by itself: it deletes
        `doc_keys` (the owner's entries outside its sessions: its records'), and each session's
        entries go with that session's own purge (delete_session), which purge_user starts for
        every session of the key."""
        ...

    def delete_documents(self, index: str, user_id: str, doc_keys: Sequence[str]) -> None:
        """Forget these entries of one owner key (a record's), searchable no more once this
        returns."""
        ...

    def delete_document(self, doc_id: str, *, keep: Sequence[str] = ()) -> None:
        """Remove the verified passages of `doc_id` except those whose doc_key is in `keep`."""
        ...
