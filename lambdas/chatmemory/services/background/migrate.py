"""The migration of a deployment's shared memory index to one index per owner (S3 Vectors), or
of a domain's memory indexes to a new generation of them (OpenSearch: more shards, vectors on
disk): page by page, each live entry copied as it is into its owner's index, resumable from the
token of the page it stopped before. An entry read without its vector (an OpenSearch index that
kept no vector in `_source`) is embedded again from its text, as consolidation embedded it.

An entry is copied only while what it belongs to is visible (its owner key still the caller's
current one, its session, its record): what was deleted or forgotten before the migration
reached it is not brought back. A deletion that races the copy is caught as consolidation
catches one (write, then check again and delete what died): the purge marks a session or record
before it deletes, and a forget changes the caller's owner key before its purge erases the old
key's index, so a copy made after the purge ran finds it gone and deletes itself (a forgotten
key's index whole). Copies overwrite (deterministic keys), so a page copied twice, after a
crash or a retried invocation, is copied the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from chatmemory.domain import caller_of
from chatmemory.ports import Embedder, MemoryDoc, UserRecords, UserStore
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.background.consolidation import embed_documents


class SharedEntry(Protocol):
    """An entry of the index migrated from: what it holds, and what put_vectors writes (S3
    Vectors: the vector as listed; OpenSearch: the doc itself, so an embedding filled in on
    `doc` is written)."""

    @property
    def doc(self) -> MemoryDoc: ...

    @property
    def vector(self) -> Any: ...


class SharedIndex(Protocol):
    """What the migration needs of the index (adapters/s3vectors.py, adapters/opensearch.py)."""

    def shared_page(
        self, token: str | None, limit: int = ...
    ) -> tuple[Sequence[SharedEntry], str | None]: ...

    def put_vectors(self, index: str, owner: str, vectors: Sequence[Any]) -> None: ...

    def delete_documents(self, index: str, user_id: str, doc_keys: Sequence[str]) -> None: ...

    def delete_user(self, user_id: str, *, doc_keys: Sequence[str] = ()) -> None: ...


@dataclass
class MigrationProgress:
    """What one run did, and where the next one starts (None: the shared index was read to
    its end)."""

    copied: int = 0
    skipped: int = 0
    pages: int = 0
    next_token: str | None = None

    @property
    def done(self) -> bool:
        return self.next_token is None

    def answer(self) -> dict[str, Any]:
        """What the migration function answers (scripts/migrate_memory.py reads it)."""
        return {
            "copied": self.copied,
            "skipped": self.skipped,
            "pages": self.pages,
            "next_token": self.next_token,
            "done": self.done,
        }


def migrate_shared_index(
    index: SharedIndex,
    memory: UserRecords,
    *,
    token: str | None,
    time_left: Callable[[], float],
    reserve_seconds: float = 30.0,
    page_size: int = 500,
    embedder: Embedder | None = None,
    embed_concurrency: int = 8,
) -> MigrationProgress:
    """Copy the shared index's live entries into their owners' indexes from `token` (None: the
    first page), a page at a time, until the last page or until less than `reserve_seconds`
    are left; the progress says where to continue. With an `embedder`, live entries read
    without a vector are embedded from their text first (`embed_concurrency` requests at
    once)."""
    progress = MigrationProgress(next_token=token)
    while True:
        entries, following = index.shared_page(progress.next_token, page_size)
        by_owner: dict[str, list[SharedEntry]] = {}
        for entry in entries:
            by_owner.setdefault(entry.doc.user_id, []).append(entry)
        for owner, group in by_owner.items():
            kept = [e for e, ok in zip(group, _live(memory, owner, group), strict=True) if ok]
            progress.skipped += len(group) - len(kept)
            if not kept:
                continue
            unembedded = [e.doc for e in kept if not e.doc.embedding]
            if embedder is not None and unembedded:
                embed_documents(embedder, unembedded, concurrency=embed_concurrency)
            index.put_vectors(MEMORY_INDEX, owner, [e.vector for e in kept])
            # Deleted while it was copied: its purge may have run before the copy.
            alive = _live(memory, owner, kept)
            died = [e.doc.doc_key for e, ok in zip(kept, alive, strict=True) if not ok]
            if not any(alive) and not _current(memory, owner):
                index.delete_user(owner, doc_keys=died)  # forgotten: the key's index whole
            elif died:
                index.delete_documents(MEMORY_INDEX, owner, died)
            progress.copied += len(kept) - len(died)
            progress.skipped += len(died)
        progress.pages += 1
        progress.next_token = following
        if following is None or time_left() < reserve_seconds:
            return progress


def _current(memory: UserStore, owner: str) -> bool:
    """Whether `owner` is still its caller's owner key (not one a forget left behind)."""
    return memory.get_user(caller_of(owner)).owner == owner


def _live(memory: UserRecords, owner: str, entries: Sequence[SharedEntry]) -> list[bool]:
    """Whether each entry's session (if it has one) and record (if it has one) are visible to
    the owner key, in one consistent read; none is once the key is forgotten."""
    if not _current(memory, owner):
        return [False] * len(entries)
    docs = [e.doc for e in entries]
    sessions = sorted({d.session_id for d in docs if d.session_id})
    records = sorted({d.record_id for d in docs if d.record_id})
    live_sessions, live_records = memory.live(owner, sessions, records)
    return [
        (d.session_id is None or d.session_id in live_sessions) and d.of_live_record(live_records)
        for d in docs
    ]
