"""The caller's own edits of their profile (the records API, /remember): a record stated, keyed,
corrected or deleted (services/profile/profile.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from chatmemory.clock import iso
from chatmemory.domain import MemoryRecord, is_identifier
from chatmemory.errors import Conflict, PayloadTooLarge, RecordNotFound
from chatmemory.ports import Embedder, LongTermIndex, RecordStore, ShortTermMemory, UserRecords
from chatmemory.schema import (
    MAX_RECORD_CHARS,
    MAX_RECORD_ENTRY_CHARS,
    MEMORY_INDEX,
    RecordOrigin,
    RecordStatus,
    RecordType,
)
from chatmemory.services.access import owner_of
from chatmemory.services.profile.entries import (
    ProfilePolicy,
    categorize,
    entry_keys,
    forgotten_keys,
    record_document,
    stated_record_id,
    visible_records,
)
from chatmemory.services.profile.placing import place, rewrite_entries
from chatmemory.services.profile.purge import purge_record


@dataclass(frozen=True)
class Editing:
    """What an edit of a caller's profile needs: the store of its records, the embedder and the
    long-term index their entries go to, and the time of the edit."""

    memory: ShortTermMemory
    embedder: Embedder
    index: LongTermIndex
    now: datetime


def owned_record(memory: UserRecords, user_id: str, record_id: str) -> MemoryRecord:
    """The caller's record (not being deleted), or RecordNotFound: another caller's record, or
    one of a forgotten generation, looks like no record."""
    if not is_identifier(record_id):
        raise RecordNotFound("record not found")
    owner = owner_of(memory, user_id)
    record = memory.get_record(owner, record_id)
    visible = visible_records(memory, owner, [record]) if record is not None else []
    if not visible:
        raise RecordNotFound(f"record {record_id} not found")
    return visible[0]


def state_record(
    owner: str,
    text: str,
    edit: Editing,
    *,
    record_type: RecordType | None,
    make_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    policy: ProfilePolicy = ProfilePolicy(),
    record_id: str | None = None,
    expires_at: int | None = None,
) -> MemoryRecord:
    """A record the caller states (POST /memories/records, "/remember ..."): placed like an
    extracted one, so it supersedes what it replaces ("I moved to Porto"). `owner` is the key
    the caller's data lives under (owner_of, or the session's user_id). Stating what is already
    remembered answers that record (made the caller's own), not a second one."""
    record = _stated(
        owner,
        text,
        record_type,
        now=edit.now,
        make_id=make_id,
        record_id=record_id,
        expires_at=expires_at,
    )
    merge = record_id is None and expires_at is None
    return _placed(record, edit, policy=policy, merge=merge)[1]


def _stated(
    owner: str,
    text: str,
    record_type: RecordType | None,
    *,
    now: datetime,
    make_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    record_id: str | None,
    namespace: tuple[str, ...] = (),
    generation: str = "",
    expires_at: int | None = None,
    indexed: bool = True,
) -> MemoryRecord:
    """The record the caller states, classified, before it is placed."""
    from chatmemory.services.profile.extract import classify  # its patterns: not at cold start

    if len(text.strip()) > MAX_RECORD_CHARS:
        # The limit of POST /memories/records, for /remember too (it stored 4,000 before).
        raise PayloadTooLarge(f"a record is at most {MAX_RECORD_CHARS} characters")

    kind, subject = classify(text)
    at = iso(now)
    return MemoryRecord(
        record_id=record_id or stated_record_id(at, make_id),
        user_id=owner,
        type=record_type or kind,
        text=text.strip(),
        created_at=at,
        updated_at=at,
        origin=RecordOrigin.STATED,
        subject=subject if (record_type or kind) == kind else "",
        namespace=tuple(namespace),
        generation=generation,
        expires_at=expires_at,
        indexed=indexed,
    )


def _placed(
    record: MemoryRecord, edit: Editing, *, policy: ProfilePolicy = ProfilePolicy(), merge: bool
) -> tuple[str, MemoryRecord]:
    """A stated record placed (merged into what it repeats only with `merge`), with how. A
    record kept out of the index is not embedded."""
    memory, embedder, index = edit.memory, edit.embedder, edit.index
    vector = embedder.embed([record.text[:MAX_RECORD_ENTRY_CHARS]])[0] if record.indexed else []
    return place(
        record, vector, memory=memory, embedder=embedder, index=index, policy=policy, merge=merge
    )


def put_keyed_record(
    user_id: str,
    record_id: str,
    text: str,
    edit: Editing,
    *,
    record_type: RecordType | None,
    namespace: tuple[str, ...] = (),
    expires_at: int | None = None,
    indexed: bool = True,
) -> tuple[MemoryRecord, bool]:
    """A record under the client's own id (an agent's store keys its memories): created, or,
    when the caller has a record with that id, its text replaced (a correction). Such a record
    never merges into another one (the key is its identity); in the profile's namespace it
    supersedes and is superseded like any other, in a client's namespace it is an item of its
    own (see place). Returns the record and whether it was created: of concurrent upserts of
    one id, one creates it and the others replace its text, as one after another would.
    A key whose record is being deleted or expired is free at once (_freed_key). `expires_at`
    (epoch seconds, None: never) is the record's expiry from now on, as a put replaces an item;
    `indexed` False keeps it out of the index from now on (its entry removed), as a put with
    LangGraph's index=False does."""
    memory = edit.memory
    owner = owner_of(memory, user_id)
    existing = _freed_key(owner, record_id, memory=memory, index=edit.index)
    if existing is not None and existing.namespace != tuple(namespace):
        raise Conflict(f"record {record_id} belongs to another namespace")
    if existing is None:
        record = _stated(
            owner,
            text,
            record_type,
            now=edit.now,
            record_id=record_id,
            namespace=tuple(namespace),
            generation=uuid.uuid4().hex[:16],
            expires_at=expires_at,
            indexed=indexed,
        )
        outcome, record = _placed(record, edit, merge=False)
        if outcome != "exists":
            return record, True
        existing = record  # a concurrent upsert of this id created it first
    if existing.status == RecordStatus.DELETING:
        raise Conflict(f"record {record_id} was deleted meanwhile; retry")
    if existing.text == text.strip() and existing.indexed == indexed:
        _entries_again(existing, edit)
        return _expiring(existing, expires_at, memory), False
    return correct_record(
        user_id, record_id, text, edit, expires_at=expires_at, indexed=indexed
    ), False


def _freed_key(
    owner: str, record_id: str, *, memory: RecordStore, index: LongTermIndex
) -> MemoryRecord | None:
    """The caller's record under `record_id`, once the key is free. A key whose record is being
    deleted is free at once: that record's purge is done here first (its entries, then its
    item, only while it is still the tombstone), and the new record has entries of its own (a
    new generation), which the late purge never touches. So is the key of an expired record:
    its entries, then its item (while it is still that expired item) are removed here, before
    DynamoDB's TTL would."""
    expired = memory.expired_record(owner, record_id)
    if expired is not None:
        index.delete_documents(MEMORY_INDEX, owner, entry_keys(expired))
        memory.remove_expired_record(owner, record_id, expired.version)
    existing = memory.get_record(owner, record_id)
    if existing is not None and existing.status == RecordStatus.DELETING:
        purge_record(owner, record_id, memory=memory, index=index)
        existing = memory.get_record(owner, record_id)
    return existing


def _expiring(existing: MemoryRecord, expires_at: int | None, memory: RecordStore) -> MemoryRecord:
    """A keyed record put again with the same text: its expiry set (only the item changes:
    entries do not carry it)."""
    if existing.expires_at == expires_at:
        return existing
    existing.expires_at = expires_at
    if not memory.save_record(existing):
        raise Conflict(f"record {existing.record_id} changed meanwhile; retry")
    return existing


# correct_record's default: the record keeps the expiry it has.
KEEP_EXPIRY = object()


def correct_record(
    user_id: str,
    record_id: str,
    text: str,
    edit: Editing,
    *,
    expires_at: int | None | object = KEEP_EXPIRY,
    indexed: bool | None = None,
) -> MemoryRecord:
    """The caller corrects a record's text: saved (conditional on its version), embedded again
    and indexed again; if it was deleted meanwhile, the entry just written is removed.
    `expires_at`: the record's new expiry (epoch seconds or None); by default it keeps its own.
    `indexed`: whether it has an index entry from now on (False removes it); by default, as
    it was."""
    memory, index, now = edit.memory, edit.index, edit.now
    record = owned_record(memory, user_id, record_id)
    record.text, record.origin, record.updated_at = text.strip(), RecordOrigin.CORRECTED, iso(now)
    if expires_at is not KEEP_EXPIRY:
        record.expires_at = expires_at if isinstance(expires_at, int) else None
    if indexed is not None:
        record.indexed = indexed
    _classify_again(record)
    if not memory.save_record(record):
        current = memory.get_record(record.user_id, record.record_id)
        if current is None or current.status == RecordStatus.DELETING:
            raise RecordNotFound(f"record {record_id} not found")
        raise Conflict("the record changed meanwhile; read it again and retry")
    if not record.indexed:
        index.delete_documents(MEMORY_INDEX, record.user_id, entry_keys(record))
        return record
    _index_again(record, edit)
    current = _still_there(record, edit)
    if current is None:
        raise RecordNotFound(f"record {record_id} not found")
    return current


def _still_there(record: MemoryRecord, edit: Editing) -> MemoryRecord | None:
    """The record as saved, read after its entry was written; None if it was deleted
    meanwhile (its purge may have run before the write), and then the entry is removed."""
    current = edit.memory.get_record(record.user_id, record.record_id)
    if (
        current is None
        or current.status == RecordStatus.DELETING
        or current.generation != record.generation  # deleted, and its key created again
    ):
        edit.index.delete_documents(MEMORY_INDEX, record.user_id, entry_keys(record))
        return None
    return current


def _index_again(record: MemoryRecord, edit: Editing) -> None:
    """The entry of a record whose words changed, written with its words (embedded again)."""
    memory, index = edit.memory, edit.index
    doc = record_document(record)
    if record.type == RecordType.SUMMARY and record.provenance:
        # The session's summary entry: keep what consolidation wrote of the session.
        session = memory.get_session(record.provenance[0].session_id)
        if session is not None:
            doc = replace(
                record_document(record, title=session.name), turn_to=session.num_turns or None
            )
    [doc.embedding] = edit.embedder.embed([doc.text])
    index.upsert(MEMORY_INDEX, [doc])
    # An entry under the key of before client-chosen ids holds the old words: recall would show
    # them for good (a merge or a supersession keeps the words; a correction changes them).
    index.delete_documents(
        MEMORY_INDEX, record.user_id, [k for k in entry_keys(record) if k != doc.doc_key]
    )


def _entries_again(record: MemoryRecord, edit: Editing) -> None:
    """A keyed record put again as it is: its entries written again as the record says (or
    removed, for one kept out of the index). The put may be a retry of one that saved the
    record and then failed to write or remove its entry (the index unreachable): returning at
    once, it left a new record unfound by meaning, or a replaced one found by its old words,
    for good. This costs one embedding and one write a repeated put; LangGraph's own stores
    embed every put as well."""
    if not record.indexed:
        edit.index.delete_documents(MEMORY_INDEX, record.user_id, entry_keys(record))
    elif record.type == RecordType.SUMMARY:
        _index_again(record, edit)
        _still_there(record, edit)  # deleted meanwhile: what was just written goes
    else:
        # As a retried placement: its entry, and those of the records it superseded (a put
        # that stopped before writing them left them without their end date).
        vector = edit.embedder.embed([record.text[:MAX_RECORD_ENTRY_CHARS]])[0]
        rewrite_entries(
            record, vector, memory=edit.memory, embedder=edit.embedder, index=edit.index
        )


def _classify_again(record: MemoryRecord) -> None:
    """A corrected record's subject and category, from its new text (a summary keeps none)."""
    if record.type == RecordType.OPEN_QUESTION:
        from chatmemory.services.profile.extract import open_subject

        record.subject = open_subject(record.text) or record.subject
    elif record.type != RecordType.SUMMARY:
        from chatmemory.services.profile.extract import classify

        record.subject = classify(record.text)[1] or record.subject
    categorize(record)


def delete_record(memory: ShortTermMemory, user_id: str, record_id: str) -> None:
    """Unreachable at once (the tombstone); the purge removes its entry and item. A session's
    summary is marked forgotten on its session first, for good: a consolidation retried after
    the purge would otherwise write it again (see remember_summary)."""
    record = owned_record(memory, user_id, record_id)
    if record.type == RecordType.SUMMARY and record.provenance:
        memory.forget_summary(record.provenance[0].session_id)
    elif record.provenance and not record.namespace:
        # Each session it was drawn from learns it, for good: a consolidation of one of them
        # retried or redriven after the purge would otherwise extract and write it again.
        for session_id, keys in forgotten_keys(record).items():
            memory.forget_facts(session_id, keys)
    memory.mark_record_deleting(record.user_id, record.record_id)


def delete_record_now(
    memory: ShortTermMemory, user_id: str, record_id: str, *, index: LongTermIndex | None
) -> None:
    """DELETE /memories/records/{id}: the tombstone (delete_record), then its purge here (its
    entries in `index`, the deployment's long-term index if it has one, then its item), so the
    key is free when the delete answers (an agent's store puts it again at once). The records
    stream's purge then finds nothing left, or finishes what failed here."""
    delete_record(memory, user_id, record_id)
    purge_record(owner_of(memory, user_id), record_id, memory=memory, index=index)
