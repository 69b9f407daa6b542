"""Purges of the profile (services/background/forget.py's): a deleted record's entries and item,
an expired record's entries, and the records a deleted session takes along
(services/profile/profile.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from chatmemory.domain import MemoryRecord
from chatmemory.errors import Conflict
from chatmemory.ports import Embedder, LongTermIndex, RecordStore
from chatmemory.schema import (
    MEMORY_INDEX,
    RecordStatus,
    summary_doc_key,
)
from chatmemory.services.profile.entries import (
    ProfilePolicy,
    drawn_from_sessions,
    entry_keys,
    index_documents,
    record_document,
    trim_provenance,
)

# --- purges (services/background/forget.py's) -----------------------------------------------------


def purge_record(
    owner: str, record_id: str, *, memory: RecordStore, index: LongTermIndex | None
) -> bool:
    """Remove a DELETING record's entries, then its item while it is still that tombstone
    (what it had superseded stays history). A record created under the same id meanwhile is
    kept, and so are its entries: they are keyed by its own generation."""
    record = memory.get_record(owner, record_id)
    if record is None:
        return False
    if record.status != RecordStatus.DELETING:
        return False
    if index is not None:
        index.delete_documents(MEMORY_INDEX, owner, entry_keys(record))
    return memory.remove_deleted_record(owner, record_id)


def purge_expired_record(record: MemoryRecord, *, index: LongTermIndex | None) -> None:
    """Remove the index entries of a record DynamoDB's TTL deleted (the stream's old image).
    They are keyed by its generation: a record created under its key since keeps its own."""
    if index is not None:
        index.delete_documents(MEMORY_INDEX, record.user_id, entry_keys(record))


def drop_session_records(
    owner: str,
    session_id: str,
    *,
    memory: RecordStore,
    index: LongTermIndex | None,
    policy: ProfilePolicy = ProfilePolicy(),
    embedder: Callable[[], Embedder] | None = None,
) -> int:
    """A deleted session takes along the records drawn only from it, its summary among them
    (what the caller stated or corrected is theirs: it only loses that provenance). Returns
    records removed. A record saved concurrently is read again and trimmed again: one that kept
    the deleted session would outlive its last session. The session's own entries (its
    summary's among them) go with the session's (index.delete_session): only the records' own
    entries are deleted here.

    Nothing of the session stays in the records that do: one that held its words takes the
    words of a session that stays (a near-duplicate merged into it) and its date, and history
    that a removed record ended is current again (one that a record with a new date ended is
    history until that date). Their entries are written again with `embedder` (made only when
    one is needed); without one they are deleted, so that recall cannot quote what was
    deleted."""
    records = list(memory.records_of_owner(owner, include_expired=True))
    doomed: list[MemoryRecord] = []
    changed: list[MemoryRecord] = []
    for record in records:
        for _ in range(policy.attempts):
            if session_id not in record.sessions:
                break
            rest = [p for p in record.provenance if p.session_id != session_id]
            if not rest and drawn_from_sessions(record):
                doomed.append(record)
                break
            before = record_document(record)
            trim_provenance(record, rest)
            if memory.save_record(record):
                if record_document(record) != before:
                    changed.append(record)
                break
            current = memory.get_record(owner, record.record_id)
            if current is None or current.status == RecordStatus.DELETING:
                break  # gone, or its own purge removes it
            record = current
        else:
            raise Conflict("the caller's records kept changing; the purge will be retried")
    changed += _rehistory(records, doomed, changed, memory=memory)
    _drop(doomed, memory=memory, index=index, session_id=session_id)
    if index is not None and changed:
        docs = [record_document(r) for r in changed]
        if embedder is None:
            index.delete_documents(MEMORY_INDEX, owner, [d.doc_key for d in docs])
        else:
            index_documents(index, embedder(), memory, docs)
    return len(doomed)


def _rehistory(
    records: Sequence[MemoryRecord],
    doomed: Sequence[MemoryRecord],
    changed: Sequence[MemoryRecord],
    *,
    memory: RecordStore,
) -> list[MemoryRecord]:
    """History that a record of the deleted session ended: current again when that record is
    removed, history until its new date when it stays with another. Returns the records saved
    (best effort: one saved concurrently keeps what its writer made of it)."""
    removed = {r.record_id for r in doomed}
    dated = {r.record_id: r.created_at for r in changed}
    saved = []
    for record in records:
        ended_by = record.superseded_by
        if record.status != RecordStatus.SUPERSEDED or ended_by is None:
            continue
        if ended_by in removed:
            record.status, record.superseded_by, record.valid_until = (
                RecordStatus.ACTIVE,
                None,
                None,
            )
        elif ended_by in dated and record.valid_until != dated[ended_by]:
            record.valid_until = dated[ended_by]
        else:
            continue
        if memory.save_record(record):
            saved.append(record)
    return saved


def _drop(
    records: Sequence[MemoryRecord],
    *,
    memory: RecordStore,
    index: LongTermIndex | None,
    session_id: str | None = None,
) -> None:
    if not records:
        return
    owner = records[0].user_id
    keys = [key for r in records for key in entry_keys(r)]
    if session_id is not None:
        keys = [k for k in keys if k != summary_doc_key(session_id)]
    if index is not None and keys:
        index.delete_documents(MEMORY_INDEX, owner, keys)
    memory.remove_records(owner, [r.record_id for r in records])
