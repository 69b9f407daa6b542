"""A profile record's ids, keys and index entries, and what of it the caller can see (the
rules every part of the profile shares: services/profile/profile.py)."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple

from chatmemory.clock import iso
from chatmemory.domain import MemoryRecord, Provenance, Session
from chatmemory.ports import Embedder, LongTermIndex, MemoryDoc, RecordStore
from chatmemory.schema import (
    MAX_RECORD_ENTRY_CHARS,
    MEMORY_INDEX,
    MemoryKind,
    RecordOrigin,
    RecordStatus,
    RecordType,
    legacy_record_doc_key,
    record_doc_key,
    summary_doc_key,
)

SPACE = re.compile(r"\W+")
# Records whose index entry belongs to the session they were drawn from.
OF_SESSION = (RecordType.SUMMARY, RecordType.OPEN_QUESTION)
# What can settle an open question: a statement of the user.
ANSWERS = (RecordType.FACT, RecordType.PREFERENCE)


class ProfilePolicy(NamedTuple):
    # Two records without a subject are one when their embeddings are at least this close.
    merge_similarity: float = 0.92
    # Optimistic-concurrency retries when two consolidations of one caller meet.
    attempts: int = 5


@dataclass
class ProfileResult:
    created: int = 0
    merged: int = 0
    superseded: int = 0


# --- ids and index entries ---------------------------------------------------------------------


def _stamp(timestamp: str) -> str:
    """ "2026-11-23T10:07:00.000Z" -> "20261123T100700000": ids sort by time."""
    return re.sub(r"[^0-9T]", "", timestamp)[:18]


def _in_record_id(session_id: str) -> str:
    """A session id as a part of record ids: itself (a UUID), or, when longer than 64
    characters (a client may choose one), 32 hex digits of its SHA-256, so the ids drawn from
    it stay within the rule of identifiers (schema.ID_MAX_LENGTH)."""
    if len(session_id) <= 64:
        return session_id
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


def extracted_record_id(session_id: str, date: str, turn: int, n: int) -> str:
    """Deterministic: a retried consolidation writes the same records."""
    return f"{_stamp(date)}-{_in_record_id(session_id)}-t{turn}-{n}"


def fact_key(turn: int, text: str) -> str:
    """What marks a fact drawn from a session as deleted by the caller (Session.forgotten_facts):
    its turn and its words (case and spacing aside), 12 characters of a SHA-256."""
    words = SPACE.sub(" ", text.lower()).strip()
    return hashlib.sha256(f"{turn}\x00{words}".encode()).hexdigest()[:12]


def _record_key(record_id: str) -> str:
    """The same for the record's id (extracted ids are deterministic): a fact the caller
    corrected and then deleted is found by it, whatever its words have become."""
    return hashlib.sha256(f"id\x00{record_id}".encode()).hexdigest()[:12]


def forgotten_keys(record: MemoryRecord) -> dict[str, list[str]]:
    """The keys a deleted record drawn from sessions leaves on each of them."""
    keys: dict[str, list[str]] = {}
    for p in record.provenance:
        keys.setdefault(p.session_id, []).append(fact_key(p.turn, p.text or record.text))
    if record.provenance:
        keys[record.provenance[0].session_id].append(_record_key(record.record_id))
    return keys


def is_forgotten(record: MemoryRecord, forgotten: frozenset[str]) -> bool:
    """Whether a record just extracted from a session is one the caller deleted."""
    turn = record.provenance[0].turn if record.provenance else 0
    return bool(forgotten) and (
        fact_key(turn, record.text) in forgotten or _record_key(record.record_id) in forgotten
    )


def summary_record_id(session: Session) -> str:
    return f"{_stamp(session.started_at)}-{_in_record_id(session.session_id)}-summary"


def new_record_id(now: datetime) -> str:
    """A fresh id for a record stated without one (ids sort by time)."""
    return stated_record_id(iso(now), lambda: str(uuid.uuid4()))


def stated_record_id(now: str, make_id: Callable[[], str]) -> str:
    return f"{_stamp(now)}-{make_id()}"


def doc_key_of(record: MemoryRecord) -> str:
    """A summary record's entry is its session's summary entry; other records have their own."""
    if record.type == RecordType.SUMMARY and record.provenance:
        return summary_doc_key(record.provenance[0].session_id)
    key = record_doc_key(record.user_id, record.record_id)
    # A key created again after a delete has entries of its own (see MemoryRecord.generation).
    return f"{key}#{record.generation}" if record.generation else key


def entry_keys(record: MemoryRecord) -> list[str]:
    """Every key the record's entry may have in the index (deletions remove them all)."""
    keys = [doc_key_of(record)]
    if not (record.type == RecordType.SUMMARY and record.provenance):
        keys.append(legacy_record_doc_key(record.record_id))
    return keys


def record_document(record: MemoryRecord, title: str = "") -> MemoryDoc:
    """The index entry of a record. A summary's entry belongs to its session (deleted with it,
    ranked with it by /past). A fact's or a preference's entry lists the sessions it was drawn
    from when it was extracted: recall checks that one of them still exists, so deleting the
    last of them hides it at once, before the purge removes it. What the caller stated or
    corrected lists none: it stays theirs whatever happens to sessions."""
    first = record.provenance[0] if record.provenance else None
    kind = {
        RecordType.FACT: MemoryKind.FACT,
        RecordType.PREFERENCE: MemoryKind.PREFERENCE,
        RecordType.SUMMARY: MemoryKind.SUMMARY,
        RecordType.OPEN_QUESTION: MemoryKind.OPEN_QUESTION,
    }[record.type]
    # A summary's and an open question's entries are their session's (/past finds them).
    of_session = record.type in OF_SESSION
    return MemoryDoc(
        doc_key=doc_key_of(record),
        user_id=record.user_id,
        kind=kind,
        # A long record (an agent's memory of up to 64 KiB) is indexed and embedded from its
        # beginning; the record itself keeps the whole text.
        text=record.text[:MAX_RECORD_ENTRY_CHARS],
        created_at=first.date if first else record.created_at,
        session_id=first.session_id if first and of_session else None,
        title=title,
        turn_from=first.turn if first else None,
        record_id=record.record_id,
        valid_until=record.valid_until,
        # The sessions that said its words: when the last of them is deleted, those words go
        # at once, even if another session said something close (see drop_session_records).
        sessions=(
            record.wording_sessions
            if record.origin == RecordOrigin.EXTRACTED and not of_session
            else []
        ),
    )


def index_documents(
    index: LongTermIndex, embedder: Embedder, memory: RecordStore, docs: Sequence[MemoryDoc]
) -> None:
    if not docs:
        return
    for doc, vector in zip(docs, embedder.embed([d.text for d in docs]), strict=True):
        doc.embedding = vector
    write_record_entries(index, memory, docs)


def write_record_entries(
    index: LongTermIndex, memory: RecordStore, docs: Sequence[MemoryDoc]
) -> None:
    """Write records' entries, then delete those whose record was deleted meanwhile: its purge
    may have run before this write, and nothing else would ever remove them."""
    if not docs:
        return
    index.upsert(MEMORY_INDEX, docs)
    owner = docs[0].user_id
    _, live = memory.live(owner, [], [d.record_id for d in docs if d.record_id])
    dead = [d.doc_key for d in docs if not d.of_live_record(live)]
    if dead:
        index.delete_documents(MEMORY_INDEX, owner, dead)


def drawn_from_sessions(record: MemoryRecord) -> bool:
    """A record that lives only as long as one of the sessions it was drawn from: an extracted
    fact or preference, and a session's summary or open question (corrected or not: its entry
    is its session's). What the caller stated or corrected is theirs."""
    return bool(record.provenance) and (
        record.type in OF_SESSION or record.origin == RecordOrigin.EXTRACTED
    )


def visible_records(
    memory: RecordStore, owner: str, records: Sequence[MemoryRecord]
) -> list[MemoryRecord]:
    """The records a caller may see: not being deleted and, when drawn from sessions, with one
    of the sessions that said its words still visible (one consistent read, only when some
    record needs it). A session's records disappear with its tombstone, before its purge
    removes them; so does a record whose words only deleted sessions said (its purge gives it
    the words of a session that stays); and a record that stays is shown without the deleted
    sessions in its provenance (a copy: the stored record keeps them until the purge)."""
    alive = [r for r in records if r.status != RecordStatus.DELETING]
    needed = sorted({s for r in alive for s in r.sessions})
    sessions = memory.live(owner, needed, [])[0] if needed else set()
    return [
        r if all(s in sessions for s in r.sessions) else _without_hidden(r, sessions)
        for r in alive
        if not drawn_from_sessions(r) or any(s in sessions for s in r.wording_sessions)
    ]


def with_words(provenance: Sequence[Provenance], said: str, text: str) -> list[Provenance]:
    """`provenance` whose sessions said `said` (those without words of their own), for a record
    whose text is `text`: each carries its words where they are not `text`."""
    out = []
    for p in provenance:
        words = p.text if p.text is not None else said
        out.append(replace(p, text=None if same_words(words, text) else words))
    return out


def _without_hidden(record: MemoryRecord, sessions: set[str]) -> MemoryRecord:
    """A copy of `record` as its purges will leave it (trim_provenance): without the provenance
    of the sessions not in `sessions`, nor their date."""
    shown = replace(record)
    trim_provenance(shown, [p for p in record.provenance if p.session_id in sessions])
    return shown


def categorize(record: MemoryRecord) -> MemoryRecord:
    """Give a fact or a preference of the profile's own namespace its category from its words
    (categories.category: its place in the profile block); others have none. Called wherever a
    record's words are set."""
    if record.type in ANSWERS and not record.namespace:
        from chatmemory.services.profile.categories import (
            category,  # its patterns: not at cold start
        )

        record.category = category(record.text, record.type, record.subject)
    else:
        record.category = ""
    return record


def same_words(a: str, b: str) -> bool:
    return SPACE.sub(" ", a.lower()).strip() == SPACE.sub(" ", b.lower()).strip()


# --- from sessions (consolidation) --------------------------------------------------------------


def trim_provenance(record: MemoryRecord, rest: list[Provenance]) -> None:
    """`record` without a deleted session's provenance: `rest`. A record drawn from sessions
    whose words only that session said takes the words of the first session that stays; its
    date is then the first date of those that stay."""
    if drawn_from_sessions(record) and record.type not in OF_SESSION and rest:
        if all(p.text is not None for p in rest):
            words = rest[0].text or record.text
            rest = with_words(rest, words, words)
            record.text = words
        dates = [p.date for p in rest]
        if record.created_at not in dates:
            record.created_at = min(dates)
        categorize(record)
    record.provenance = rest


def statement_key(record_type: str, text: str) -> str:
    """What claims a statement (ports.RecordStore.statement_holder): its type and its words,
    case and spacing aside (same_words), 32 hex digits of their SHA-256."""
    words = SPACE.sub(" ", text.lower()).strip()
    return hashlib.sha256(f"{record_type}\x00{words}".encode()).hexdigest()[:32]
