"""The caller's profile: records of facts, preferences and session summaries that stay current
and that the caller can see, correct and delete.

Records live in DynamoDB (the source of truth: listed, corrected, deleted there) and each has
one entry in the long-term index, so auto-recall and /past find them by meaning.

"The same thing": two records of one type are about the same thing when they share a subject
("residence", "job", "partner", "name", "likes:coffee"): then the newer one supersedes the
older, which stays as history with the date it stopped being true (`valid_until`), so "where
did I live before?" still has an answer. Records without a subject never supersede: they merge
with a duplicate instead (same type, and the same words or an embedding at least
`merge_similarity` close), adding their provenance to it.

Open questions (what a session left unsettled, services/profile/extract.open_questions) are closed
by a later answer: a later fact or preference on their subject (a named one, or one holding every
word of their topic: extract.settles) supersedes them, so recall stops bringing them up. They
belong to their session like its summary: their entry carries its id (/past ranks them with
it) and they never merge (a later session leaving the same thing open supersedes them).

Deleting follows the rules of services/background/forget.py: a record deleted through the API is a
tombstone first (unreachable at once; the purge removes its entry and item); a session's purge
removes the records drawn only from it; a forget takes every record of the old owner key along.
What a removed record had superseded stays history: a deleted claim does not make an older one
true again.

Why nothing of a deleted record or session is seen again, whatever runs at the same time:

* Every read checks liveness in one consistent read: a record being deleted is never listed,
  searched, corrected or recalled, and neither is a record drawn from sessions (an extracted
  fact or preference, a session's summary) once none of those sessions is visible - from the
  moment the session's tombstone is written, not when its purge gets to the record.
* Whatever writes a record's index entry checks afterwards, in one consistent read, that the
  record is still live, and deletes the entry it wrote if not. A delete whose tombstone comes
  after that check has a purge that comes after the write too, so one of the two removes it.
* A session's purge (or consolidation's compensation) retries a record whose save lost a race,
  so no record keeps a deleted session in its provenance (and outlives its last session).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple

from chatmemory.clock import iso
from chatmemory.domain import MemoryRecord, Provenance, Session, Turn, is_identifier
from chatmemory.errors import BadRequest, Conflict, PayloadTooLarge, RecordNotFound
from chatmemory.ports import (
    Embedder,
    ExtractedFact,
    LongTermIndex,
    MemoryDoc,
    ShortTermMemory,
    embed_queries,
)
from chatmemory.schema import (
    AGENT_LABEL,
    MAX_NAMESPACE_DEPTH,
    MAX_RECORD_CHARS,
    MAX_RECORD_ENTRY_CHARS,
    MEMORY_INDEX,
    PROFILE_NAMESPACE,
    RUN_LABEL,
    MemoryKind,
    RecordOrigin,
    RecordStatus,
    RecordType,
    legacy_record_doc_key,
    record_doc_key,
    summary_doc_key,
)
from chatmemory.services.access import owner_of
from chatmemory.services.pages import fitted_page

_SPACE = re.compile(r"\W+")
# Records whose index entry belongs to the session they were drawn from.
_OF_SESSION = (RecordType.SUMMARY, RecordType.OPEN_QUESTION)
# What can settle an open question: a statement of the user.
_ANSWERS = (RecordType.FACT, RecordType.PREFERENCE)


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
    words = _SPACE.sub(" ", text.lower()).strip()
    return hashlib.sha256(f"{turn}\x00{words}".encode()).hexdigest()[:12]


def _record_key(record_id: str) -> str:
    """The same for the record's id (extracted ids are deterministic): a fact the caller
    corrected and then deleted is found by it, whatever its words have become."""
    return hashlib.sha256(f"id\x00{record_id}".encode()).hexdigest()[:12]


def _forgotten_keys(record: MemoryRecord) -> dict[str, list[str]]:
    """The keys a deleted record drawn from sessions leaves on each of them."""
    keys: dict[str, list[str]] = {}
    for p in record.provenance:
        keys.setdefault(p.session_id, []).append(fact_key(p.turn, p.text or record.text))
    if record.provenance:
        keys[record.provenance[0].session_id].append(_record_key(record.record_id))
    return keys


def _is_forgotten(record: MemoryRecord, forgotten: frozenset[str]) -> bool:
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
    of_session = record.type in _OF_SESSION
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


def _index(
    index: LongTermIndex, embedder: Embedder, memory: ShortTermMemory, docs: Sequence[MemoryDoc]
) -> None:
    if not docs:
        return
    for doc, vector in zip(docs, embedder.embed([d.text for d in docs]), strict=True):
        doc.embedding = vector
    write_record_entries(index, memory, docs)


def write_record_entries(
    index: LongTermIndex, memory: ShortTermMemory, docs: Sequence[MemoryDoc]
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


def _drawn_from_sessions(record: MemoryRecord) -> bool:
    """A record that lives only as long as one of the sessions it was drawn from: an extracted
    fact or preference, and a session's summary or open question (corrected or not: its entry
    is its session's). What the caller stated or corrected is theirs."""
    return bool(record.provenance) and (
        record.type in _OF_SESSION or record.origin == RecordOrigin.EXTRACTED
    )


def visible_records(
    memory: ShortTermMemory, owner: str, records: Sequence[MemoryRecord]
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
        if not _drawn_from_sessions(r) or any(s in sessions for s in r.wording_sessions)
    ]


def _with_words(provenance: Sequence[Provenance], said: str, text: str) -> list[Provenance]:
    """`provenance` whose sessions said `said` (those without words of their own), for a record
    whose text is `text`: each carries its words where they are not `text`."""
    out = []
    for p in provenance:
        words = p.text if p.text is not None else said
        out.append(replace(p, text=None if _same_words(words, text) else words))
    return out


def _without_hidden(record: MemoryRecord, sessions: set[str]) -> MemoryRecord:
    """A copy of `record` as its purges will leave it (_trim): without the provenance of the
    sessions not in `sessions`, nor their date."""
    shown = replace(record)
    _trim(shown, [p for p in record.provenance if p.session_id in sessions])
    return shown


def categorize(record: MemoryRecord) -> MemoryRecord:
    """Give a fact or a preference of the profile's own namespace its category from its words
    (traits.category: its place in the profile block); others have none. Called wherever a
    record's words are set."""
    if record.type in _ANSWERS and not record.namespace:
        from chatmemory.services.profile.traits import category  # its patterns: not at cold start

        record.category = category(record.text, record.type, record.subject)
    else:
        record.category = ""
    return record


def _same_words(a: str, b: str) -> bool:
    return _SPACE.sub(" ", a.lower()).strip() == _SPACE.sub(" ", b.lower()).strip()


# --- from sessions (consolidation) --------------------------------------------------------------


def remember_summary(
    session: Session,
    summary: str,
    *,
    memory: ShortTermMemory,
    now: datetime,
) -> MemoryRecord | None:
    """The session's summary as a record of the profile (its index entry is the session's
    summary entry, which consolidation writes with this record's id). A summary record being
    deleted is returned as it is: the entry consolidation writes then carries its id, so recall
    does not use it and it is deleted right after its write (write_record_entries).

    None when the caller deleted this summary before (the session is marked: delete_record).
    That mark is read again after the record is written: a delete that ran between the first
    read and the write (its purge finding nothing yet) has its record marked deleting here."""
    if not summary or session.summary_forgotten:
        return None
    at = iso(now)
    record = MemoryRecord(
        record_id=summary_record_id(session),
        user_id=session.user_id,
        type=RecordType.SUMMARY,
        text=summary,
        created_at=session.started_at,
        updated_at=at,
        origin=RecordOrigin.EXTRACTED,
        provenance=[Provenance(session.session_id, 1, session.started_at)],
    )
    if memory.put_record(record):
        now_session = memory.get_session(session.session_id)
        if now_session is not None and now_session.summary_forgotten:
            memory.mark_record_deleting(record.user_id, record.record_id)
            record.status = RecordStatus.DELETING
        return record
    current = memory.get_record(session.user_id, record.record_id)
    if current is None or current.status == RecordStatus.DELETING:
        return current
    if current.origin == RecordOrigin.EXTRACTED and current.text != summary:
        current.text, current.updated_at = summary, at  # a redrive summarized again
        memory.save_record(current)
    return current


def remember_facts(
    session: Session,
    facts: Sequence[ExtractedFact],
    turns: Sequence[Turn],
    *,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
    now: datetime,
    policy: ProfilePolicy = ProfilePolicy(),
) -> ProfileResult:
    """Turn what the extractor found into records: new ones, merged into a duplicate, or
    superseding an older record about the same thing. Idempotent: a retried consolidation
    finds its records already written, and writes none the caller deleted since (the
    session's forgotten facts, read again after the writes: a delete that ran meanwhile has
    what it deleted marked deleting here, as remember_summary does)."""
    dates = {t.turn: t.created_at or session.started_at for t in turns}
    result = ProfileResult()
    records = [
        MemoryRecord(
            record_id=extracted_record_id(
                session.session_id, dates.get(f.turn, session.started_at), f.turn, n
            ),
            user_id=session.user_id,
            type=f.type,
            text=f.text,
            created_at=dates.get(f.turn, session.started_at),
            updated_at=iso(now),
            origin=RecordOrigin.EXTRACTED,
            subject=f.subject,
            provenance=[
                Provenance(session.session_id, f.turn, dates.get(f.turn, session.started_at))
            ],
        )
        for n, f in enumerate(facts)
    ]
    # Numbered before the deleted ones are left out: the others keep their ids.
    records = [r for r in records if not _is_forgotten(r, session.forgotten_facts)]
    if not records:
        return result
    vectors = embedder.embed([r.text for r in records])
    # The caller's records, read once for the whole batch (each placement keeps it current; a
    # conflict reads it again): one Query per session, not one per fact.
    known = visible_records(memory, session.user_id, list(memory.records_of_owner(session.user_id)))
    written: list[MemoryRecord] = []
    for record, vector in zip(records, vectors, strict=True):
        outcome, placed = _place(
            record,
            vector,
            memory=memory,
            embedder=embedder,
            index=index,
            policy=policy,
            known=known,
        )
        if outcome in ("created", "superseding"):
            known.append(placed)
            written.append(placed)
        if outcome == "merged":
            result.merged += 1
        elif outcome != "exists":
            result.created += 1
            result.superseded += outcome == "superseding"
    _forgotten_meanwhile(session.session_id, written, memory=memory)
    return result


def _forgotten_meanwhile(
    session_id: str, written: Sequence[MemoryRecord], *, memory: ShortTermMemory
) -> None:
    """Records just written that the caller deleted while they were being written (their key
    marked on the session after this consolidation read it, their purge finding nothing yet):
    deleting again, so the records stream's purge removes them and their entries."""
    now_session = memory.get_session(session_id) if written else None
    if now_session is None:
        return
    for record in written:
        if _is_forgotten(record, now_session.forgotten_facts):
            memory.mark_record_deleting(record.user_id, record.record_id)


def _place(
    record: MemoryRecord,
    vector: list[float],
    *,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
    policy: ProfilePolicy,
    known: list[MemoryRecord] | None = None,
    merge: bool = True,
) -> tuple[str, MemoryRecord]:
    """Write one new record where it belongs (retried when a concurrent writer moved first).
    Returns how ("created", "superseding", "merged", "exists") and the record that holds it
    now (the duplicate it merged into, for a merge). `known`: the caller's records as read
    for this batch (updated in place here); read again after a conflict. Without `merge`, a
    duplicate is written as a record of its own (its id is the client's key)."""
    categorize(record)
    existing = memory.get_record(record.user_id, record.record_id)
    if existing is not None:
        # A retry: the earlier attempt may have stopped between the record and its entries.
        if existing.status != RecordStatus.DELETING and existing.text == record.text:
            _rewrite_entries(
                existing, vector, memory=memory, embedder=embedder, index=index, known=known
            )
        return "exists", existing
    # A statement of the caller's own (not keyed, lasting, the profile's) is claimed by its
    # words: of concurrent identical statements one writes its record, the others find it.
    # The claim is read before the records: a statement written after this read fails the
    # write below, one written before it is among the records read.
    statement = _claimed_statement(record, merge)
    for attempt in range(policy.attempts):
        holder = memory.statement_holder(record.user_id, statement) if statement else None
        if record.namespace or record.expires_at is not None:
            mine = []  # an item of its own (keyed_item below): no other record is read
        elif known is None or attempt > 0:
            # What the caller can see only: a record of a deleted session (hidden until its
            # purge) is not merged into, does not supersede and is not settled, so nothing of
            # that session survives in a record drawn from another one.
            fresh = visible_records(
                memory, record.user_id, list(memory.records_of_owner(record.user_id))
            )
            if known is not None:
                known[:] = fresh
            mine = fresh
        else:
            mine = known
        # Merging, supersession and settling stay inside the record's namespace; in a client's
        # namespace (not the profile's) an item is its key, as in LangGraph's stores: it never
        # merges, supersedes or settles anything, and nothing supersedes it.
        # A record that expires is an item of its own too: what it superseded or merged into
        # would otherwise outlive it as history, or it would take a lasting record along. And
        # a lasting record leaves the expiring ones alone: merged into one, it would expire
        # with it; history of one (newer, or an answer to it), nothing current would be left.
        keyed_item = bool(record.namespace) or record.expires_at is not None
        mine = [] if keyed_item else [r for r in mine if not r.namespace and r.expires_at is None]
        active = {
            r.record_id: r
            for r in mine
            if r.status == RecordStatus.ACTIVE and r.type == record.type
        }
        # An open question never merges: its entry is its session's (record_document).
        merging = merge and record.type != RecordType.OPEN_QUESTION
        duplicate = _duplicate(record, vector, active, index, policy) if merging else None
        if duplicate is not None:
            if record.origin == RecordOrigin.STATED and duplicate.origin == RecordOrigin.EXTRACTED:
                # The caller says it themselves now: theirs, whatever becomes of the sessions,
                # and in their words (a session's words, kept, would outlive its deletion).
                duplicate.provenance = _with_words(
                    duplicate.provenance, duplicate.text, record.text
                )
                duplicate.origin = RecordOrigin.STATED
                duplicate.text = record.text
            seen = {(p.session_id, p.turn) for p in duplicate.provenance}
            # Each session keeps its own words where they are not the record's.
            duplicate.provenance += _with_words(
                [p for p in record.provenance if (p.session_id, p.turn) not in seen],
                record.text,
                duplicate.text,
            )
            duplicate.updated_at = record.updated_at
            duplicate.subject = duplicate.subject or record.subject
            categorize(duplicate)
            if memory.save_record(duplicate):
                # Its entry now lists the new session too (see record_document).
                _index(index, embedder, memory, [record_document(duplicate)])
                _adopt(record, duplicate, mine, memory=memory, embedder=embedder, index=index)
                return "merged", duplicate
            if statement and not record.provenance:
                # Stated again while a concurrent statement of the same words saved it: that
                # one's save is this one's (nothing of a statement is kept beside its words).
                current = memory.get_record(duplicate.user_id, duplicate.record_id)
                if (
                    current is not None
                    and current.status == RecordStatus.ACTIVE
                    and _same_words(current.text, record.text)
                ):
                    _adopt(record, current, mine, memory=memory, embedder=embedder, index=index)
                    return "merged", current
            continue
        same = [r for r in active.values() if record.subject and r.subject == record.subject]
        # An answer settles the open questions asked before it; a question answered later (its
        # session consolidated late) is history from the start.
        settled, answers = _settling(record, mine)
        older = [r for r in same if r.created_at <= record.created_at] + settled
        newer = [r for r in same if r.created_at > record.created_at] + answers
        if newer:  # an older session consolidated late: it is history from the start
            record.status = RecordStatus.SUPERSEDED
            record.superseded_by = min(newer, key=lambda r: r.created_at).record_id
            record.valid_until = min(r.created_at for r in newer)
        # History an earlier attempt marked superseded by this record before it stopped (the
        # id is deterministic): its entry may still lack its end date.
        superseded = [
            r
            for r in mine
            if r.status == RecordStatus.SUPERSEDED and r.superseded_by == record.record_id
        ]
        lost = False
        for old in older:
            old.status = RecordStatus.SUPERSEDED
            old.superseded_by = record.record_id
            old.valid_until = record.created_at
            lost = not memory.save_record(old)
            if lost:  # a concurrent writer moved first: read the records again
                break
            superseded.append(old)
        if lost:
            continue
        if statement:
            if not memory.put_stated_record(record, statement=statement, holder=holder):
                continue  # the same words stated meanwhile: read again, find them, merge
        elif not memory.put_record(record):
            return "exists", memory.get_record(record.user_id, record.record_id) or record
        # The superseded records' entries learn their end date (they are embedded again).
        _index(index, embedder, memory, [record_document(r) for r in superseded])
        write_record_entries(index, memory, [replace(record_document(record), embedding=vector)])
        return ("superseding" if older else "created"), record
    raise Conflict("the caller's records kept changing; the consolidation will be retried")


def statement_key(record_type: str, text: str) -> str:
    """What claims a statement (ports.RecordStore.statement_holder): its type and its words,
    case and spacing aside (_same_words), 32 hex digits of their SHA-256."""
    words = _SPACE.sub(" ", text.lower()).strip()
    return hashlib.sha256(f"{record_type}\x00{words}".encode()).hexdigest()[:32]


def _claimed_statement(record: MemoryRecord, merge: bool) -> str:
    """The statement key of a record the caller states in the profile to be merged with its
    duplicates ("" for any other: extracted records, keyed, expiring or namespaced items)."""
    claimed = (
        merge
        and record.origin == RecordOrigin.STATED
        and not record.namespace
        and record.expires_at is None
    )
    return statement_key(record.type, record.text) if claimed else ""


def _adopt(
    record: MemoryRecord,
    holder: MemoryRecord,
    mine: Sequence[MemoryRecord],
    *,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
) -> None:
    """What an earlier attempt of `record` superseded before a duplicate was written first (a
    concurrent statement of the same words), so that `record` never was: superseded by the
    duplicate instead, which says the same, and its entry given its end date as the write of
    `record` would have (best effort: a record changed meanwhile keeps what its writer made)."""
    adopted = []
    for old in mine:
        if old.status == RecordStatus.SUPERSEDED and old.superseded_by == record.record_id:
            old.superseded_by = holder.record_id
            if memory.save_record(old):
                adopted.append(old)
    _index(index, embedder, memory, [record_document(r) for r in adopted])


def _settling(
    record: MemoryRecord, mine: Sequence[MemoryRecord]
) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """The open questions `record` settles (asked before it), and, for an open question, the
    statements that settled it already (made after it; history ones too: they answered)."""
    from chatmemory.services.profile.extract import settles  # its patterns: not at cold start

    if record.type in _ANSWERS:
        return [
            q
            for q in mine
            if q.type == RecordType.OPEN_QUESTION
            and q.status == RecordStatus.ACTIVE
            and q.created_at < record.created_at
            and settles(record.text, record.subject, q.subject)
        ], []
    if record.type == RecordType.OPEN_QUESTION:
        return [], [
            r
            for r in mine
            if r.type in _ANSWERS
            and r.status != RecordStatus.DELETING
            and r.created_at > record.created_at
            and settles(r.text, r.subject, record.subject)
        ]
    return [], []


def _rewrite_entries(
    record: MemoryRecord,
    vector: list[float],
    *,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
    known: Sequence[MemoryRecord] | None = None,
) -> None:
    """A retried placement: the record's entry, and the entries of the records it superseded
    (an attempt that stopped before writing them left them without their end date, and recall
    would present them as still true): same-subject ones, and open questions it settled."""
    superseded = []
    if record.subject or record.type in _ANSWERS:
        mine = known if known is not None else memory.records_of_owner(record.user_id)
        superseded = [
            r
            for r in mine
            if r.status == RecordStatus.SUPERSEDED and r.superseded_by == record.record_id
        ]
    _index(index, embedder, memory, [record_document(r) for r in superseded])
    write_record_entries(index, memory, [replace(record_document(record), embedding=vector)])


def _duplicate(
    record: MemoryRecord,
    vector: list[float],
    active: dict[str, MemoryRecord],
    index: LongTermIndex,
    policy: ProfilePolicy,
) -> MemoryRecord | None:
    for other in active.values():
        if _same_words(other.text, record.text):
            return other
    if record.subject:
        return None  # about a named thing: the same subject supersedes instead
    hits = index.vector_search(MEMORY_INDEX, vector, 8, record.user_id)
    for hit in hits:
        similar = active.get(hit.doc.record_id or "")
        if (
            similar is not None
            and not similar.subject
            and (hit.vector_score or 0.0) >= policy.merge_similarity
        ):
            return similar
    return None


# --- the caller's own edits (the records API, /remember) ---------------------------------------


def owned_record(memory: ShortTermMemory, user_id: str, record_id: str) -> MemoryRecord:
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
    *,
    record_type: RecordType | None,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
    now: datetime,
    make_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    policy: ProfilePolicy = ProfilePolicy(),
    record_id: str | None = None,
    expires_at: int | None = None,
) -> MemoryRecord:
    """A record the caller states (POST /memories/records, "/remember ..."): placed like an
    extracted one, so it supersedes what it replaces ("I moved to Porto"). `owner` is the key
    the caller's data lives under (owner_of, or the session's user_id). Stating what is already
    remembered answers that record (made the caller's own), not a second one."""
    return _stated(
        owner,
        text,
        record_type=record_type,
        memory=memory,
        embedder=embedder,
        index=index,
        now=now,
        make_id=make_id,
        policy=policy,
        record_id=record_id,
        expires_at=expires_at,
    )[1]


def _stated(
    owner: str,
    text: str,
    *,
    record_type: RecordType | None,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
    now: datetime,
    make_id: Callable[[], str],
    policy: ProfilePolicy,
    record_id: str | None,
    namespace: tuple[str, ...] = (),
    generation: str = "",
    expires_at: int | None = None,
) -> tuple[str, MemoryRecord]:
    """state_record, with how the record was placed (_place's outcome)."""
    from chatmemory.services.profile.extract import classify  # its patterns: not at cold start

    if len(text.strip()) > MAX_RECORD_CHARS:
        # The limit of POST /memories/records, for /remember too (it stored 4,000 before).
        raise PayloadTooLarge(f"a record is at most {MAX_RECORD_CHARS} characters")

    kind, subject = classify(text)
    at = iso(now)
    record = MemoryRecord(
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
    )
    [vector] = embedder.embed([record.text[:MAX_RECORD_ENTRY_CHARS]])
    return _place(
        record,
        vector,
        memory=memory,
        embedder=embedder,
        index=index,
        policy=policy,
        merge=record_id is None and expires_at is None,
    )


def put_keyed_record(
    user_id: str,
    record_id: str,
    text: str,
    *,
    record_type: RecordType | None,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
    now: datetime,
    namespace: tuple[str, ...] = (),
    expires_at: int | None = None,
) -> tuple[MemoryRecord, bool]:
    """A record under the client's own id (an agent's store keys its memories): created, or,
    when the caller has a record with that id, its text replaced (a correction). Such a record
    never merges into another one (the key is its identity); in the profile's namespace it
    supersedes and is superseded like any other, in a client's namespace it is an item of its
    own (see _place). Returns the record and whether it was created: of concurrent upserts of
    one id, one creates it and the others replace its text, as one after another would.

    A key whose record is being deleted is free at once: that record's purge is done here
    first (its entries, then its item, only while it is still the tombstone), and the new
    record has entries of its own (a new generation), which the late purge never touches.
    So is the key of an expired record: its entries, then its item (while it is still that
    expired item) are removed here, before DynamoDB's TTL would. `expires_at` (epoch seconds,
    None: never) is the record's expiry from now on, as a put replaces an item."""
    owner = owner_of(memory, user_id)
    expired = memory.expired_record(owner, record_id)
    if expired is not None:
        index.delete_documents(MEMORY_INDEX, owner, entry_keys(expired))
        memory.remove_expired_record(owner, record_id, expired.version)
    existing = memory.get_record(owner, record_id)
    if existing is not None and existing.status == RecordStatus.DELETING:
        purge_record(owner, record_id, memory=memory, index=index)
        existing = memory.get_record(owner, record_id)
    if existing is not None and existing.namespace != tuple(namespace):
        raise Conflict(f"record {record_id} belongs to another namespace")
    if existing is None:
        outcome, record = _stated(
            owner,
            text,
            record_type=record_type,
            memory=memory,
            embedder=embedder,
            index=index,
            now=now,
            make_id=lambda: str(uuid.uuid4()),
            policy=ProfilePolicy(),
            record_id=record_id,
            namespace=tuple(namespace),
            generation=uuid.uuid4().hex[:16],
            expires_at=expires_at,
        )
        if outcome != "exists":
            return record, True
        existing = record  # a concurrent upsert of this id created it first
    if existing.status == RecordStatus.DELETING:
        raise Conflict(f"record {record_id} was deleted meanwhile; retry")
    if existing.text == text.strip():
        if existing.expires_at == expires_at:
            return existing, False
        # The same text with another expiry: only the item changes (entries do not carry it).
        existing.expires_at = expires_at
        if not memory.save_record(existing):
            raise Conflict(f"record {record_id} changed meanwhile; retry")
        return existing, False
    corrected = correct_record(
        user_id,
        record_id,
        text,
        memory=memory,
        embedder=embedder,
        index=index,
        now=now,
        expires_at=expires_at,
    )
    return corrected, False


# correct_record's default: the record keeps the expiry it has.
KEEP_EXPIRY = object()


def correct_record(
    user_id: str,
    record_id: str,
    text: str,
    *,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
    now: datetime,
    expires_at: int | None | object = KEEP_EXPIRY,
) -> MemoryRecord:
    """The caller corrects a record's text: saved (conditional on its version), embedded again
    and indexed again; if it was deleted meanwhile, the entry just written is removed.
    `expires_at`: the record's new expiry (epoch seconds or None); by default it keeps its own."""
    record = owned_record(memory, user_id, record_id)
    record.text, record.origin, record.updated_at = text.strip(), RecordOrigin.CORRECTED, iso(now)
    if expires_at is not KEEP_EXPIRY:
        record.expires_at = expires_at if isinstance(expires_at, int) else None
    if record.type == RecordType.OPEN_QUESTION:
        from chatmemory.services.profile.extract import open_subject

        record.subject = open_subject(record.text) or record.subject
    elif record.type != RecordType.SUMMARY:
        from chatmemory.services.profile.extract import classify

        record.subject = classify(record.text)[1] or record.subject
    categorize(record)
    if not memory.save_record(record):
        current = memory.get_record(record.user_id, record.record_id)
        if current is None or current.status == RecordStatus.DELETING:
            raise RecordNotFound(f"record {record_id} not found")
        raise Conflict("the record changed meanwhile; read it again and retry")
    doc = record_document(record)
    if record.type == RecordType.SUMMARY and record.provenance:
        # The session's summary entry: keep what consolidation wrote of the session.
        session = memory.get_session(record.provenance[0].session_id)
        if session is not None:
            doc = replace(
                record_document(record, title=session.name), turn_to=session.num_turns or None
            )
    [doc.embedding] = embedder.embed([doc.text])
    index.upsert(MEMORY_INDEX, [doc])
    current = memory.get_record(record.user_id, record.record_id)
    if (
        current is None
        or current.status == RecordStatus.DELETING
        or current.generation != record.generation  # deleted, and its key created again
    ):
        index.delete_documents(MEMORY_INDEX, record.user_id, entry_keys(record))
        raise RecordNotFound(f"record {record_id} not found")
    return current


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
        for session_id, keys in _forgotten_keys(record).items():
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


def stored_namespace(namespace: Sequence[str] | None) -> tuple[str, ...]:
    """A namespace as records keep it: the profile's (schema.PROFILE_NAMESPACE) is none."""
    labels = tuple(namespace or ())
    return () if labels in ((), PROFILE_NAMESPACE) else labels


def scoped_namespace(
    agent_id: str | None, run_id: str | None, namespace: Sequence[str] | None
) -> tuple[str, ...] | None:
    """The namespace of an agent's (and a run's) record: ("agent", agent_id, "run", run_id)
    before the client's own labels. None when none of them is given (the profile's)."""
    scope = ((AGENT_LABEL, agent_id) if agent_id else ()) + ((RUN_LABEL, run_id) if run_id else ())
    if not scope:
        return tuple(namespace) if namespace is not None else None
    labels = scope + tuple(namespace or ())
    if len(labels) > MAX_NAMESPACE_DEPTH:
        raise BadRequest(
            f"agent_id and run_id take {len(scope)} of a namespace's {MAX_NAMESPACE_DEPTH} labels"
        )
    return labels


def shown_namespace(record: MemoryRecord) -> tuple[str, ...]:
    """The namespace a record is in, as the API shows it."""
    return record.namespace or PROFILE_NAMESPACE


def list_records(
    memory: ShortTermMemory,
    user_id: str,
    *,
    record_type: RecordType | None,
    limit: int,
    next_token: str | None,
    namespace_prefix: tuple[str, ...] | None = None,
    size_of: Callable[[MemoryRecord], int] | None = None,
    page_bytes: int = 0,
) -> tuple[list[MemoryRecord], str | None]:
    """A page of the caller's visible records, newest first: at most `limit`, and as many as
    fit `page_bytes` by `size_of` when given (at least one, unless none of them is visible)."""
    owner = owner_of(memory, user_id)
    page = fitted_page(
        lambda count: memory.list_records(
            owner, record_type, count, next_token, namespace_prefix or None
        ),
        limit,
        size_of,
        page_bytes,
    )
    return visible_records(memory, owner, page.items), page.next_token


class RecordQuery(NamedTuple):
    """What POST /memories/records/search asks: the records of the namespaces under
    `namespace_prefix` (every namespace when empty), closest to `query` (by meaning and words)
    or, without one, newest first; `offset` skips that many of them."""

    query: str | None = None
    namespace_prefix: tuple[str, ...] = ()
    record_type: RecordType | None = None
    limit: int = 10
    offset: int = 0
    include_history: bool = True
    matches: Callable[[MemoryRecord], bool] = lambda _: True


# Without a query, the most records of a namespace prefix read for one search (pages of 100);
# with one, the most read beyond what the index ranked, so a small namespace that other
# namespaces outrank is still found (ranked by words only: the index has the meaning).
MAX_SEARCH_SCAN = 2_000


def find_records(
    memory: ShortTermMemory,
    user_id: str,
    ask: RecordQuery,
    *,
    embedder: Embedder,
    index: LongTermIndex,
) -> list[tuple[MemoryRecord, float | None]]:
    """Records of the caller for a search, with their score (with a query: the fused score of
    meaning and words, higher is closer; without one: None)."""
    owner = owner_of(memory, user_id)
    wanted = ask.offset + ask.limit

    def keep(record: MemoryRecord) -> bool:
        return (
            (ask.record_type is None or record.type == ask.record_type)
            and shown_namespace(record)[: len(ask.namespace_prefix)] == ask.namespace_prefix
            and (ask.include_history or record.status != RecordStatus.SUPERSEDED)
            and ask.matches(record)
        )

    found: list[tuple[MemoryRecord, float | None]] = []
    if ask.query:
        found += _ranked(memory, owner, ask.query, wanted, keep, embedder, index)
    if ask.query and (len(found) >= wanted or not ask.namespace_prefix):
        return found[ask.offset : wanted]
    # Without a query, or when the index's best were of other namespaces: the prefix's records
    # from the table (newest first), ranked by words when there is a query.
    seen = {record.record_id for record, _ in found}
    rest: list[MemoryRecord] = []
    token: str | None = None
    scanned = 0
    while scanned < MAX_SEARCH_SCAN:
        page = memory.list_records(owner, None, 100, token, ask.namespace_prefix or None)
        scanned += 100
        rest += [
            r
            for r in visible_records(memory, owner, page.items)
            if r.record_id not in seen and keep(r)
        ]
        token = page.next_token
        if token is None or (not ask.query and len(rest) >= wanted):
            break
    if not ask.query:
        return [(r, None) for r in rest[ask.offset : wanted]]
    from chatmemory.services.longterm.lexical import bm25
    from chatmemory.services.longterm.scoring import RecallWeights, lexical_only

    scores = bm25(ask.query, [r.text[:MAX_RECORD_ENTRY_CHARS] for r in rest]) if rest else []
    ranked = sorted(zip(rest, scores, strict=True), key=lambda pair: -pair[1])
    weighted = lexical_only([score for _, score in ranked], RecallWeights())
    found += zip([r for r, _ in ranked], weighted, strict=True)
    return found[ask.offset : wanted]


def _ranked(
    memory: ShortTermMemory,
    owner: str,
    query: str,
    wanted: int,
    keep: Callable[[MemoryRecord], bool],
    embedder: Embedder,
    index: LongTermIndex,
) -> list[tuple[MemoryRecord, float | None]]:
    """The first `wanted` of the caller's visible records that the index ranks for `query` and
    `keep` accepts, best first, with their scores (read a few at a time)."""
    from chatmemory.services.longterm.scoring import RecallWeights, fuse

    vector = embed_queries(embedder, [query])[0]
    depth = max(wanted * 8, 40)
    fused = fuse(*index.hybrid_search(MEMORY_INDEX, vector, query, depth, owner), RecallWeights())
    found_ids = sorted({doc.record_id for doc, _ in fused.values() if doc.record_id})
    _, live = memory.live(owner, [], found_ids)
    best: dict[str, float] = {}
    for doc, score in fused.values():
        # An entry of an earlier record under the same id scores nothing for the current one.
        if doc.record_id and doc.of_live_record(live):
            best[doc.record_id] = max(best.get(doc.record_id, 0.0), score)
    pending = sorted(best, key=lambda record_id: -best[record_id])
    found: list[tuple[MemoryRecord, float | None]] = []
    while pending and len(found) < wanted:
        batch, pending = pending[: max(wanted, 10)], pending[max(wanted, 10) :]
        records = [memory.get_record(owner, record_id) for record_id in batch]
        found += [
            (record, best[record.record_id])
            for record in visible_records(memory, owner, [r for r in records if r is not None])
            if keep(record)
        ]
    return found[:wanted]


def search_records(
    memory: ShortTermMemory,
    user_id: str,
    query: str,
    *,
    record_type: RecordType | None,
    limit: int,
    embedder: Embedder,
    index: LongTermIndex,
    offset: int = 0,
) -> list[MemoryRecord]:
    """The caller's records closest to `query` by meaning and words, checked live (`offset`
    skips that many of the best)."""
    ask = RecordQuery(query=query, record_type=record_type, limit=limit, offset=offset)
    return [r for r, _ in find_records(memory, user_id, ask, embedder=embedder, index=index)]


# Profile records read at once to find one the caller can see (list_namespaces).
_PROFILE_PROBE = 4


def list_namespaces(
    memory: ShortTermMemory,
    user_id: str,
    *,
    prefix: Sequence[str] = (),
    suffix: Sequence[str] = (),
    max_depth: int | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[tuple[str, ...]]:
    """The namespaces the caller's records are in (LangGraph's list_namespaces): those that
    begin with `prefix` and end with `suffix` ("*" matches any one label), cut to `max_depth`
    labels, each once, sorted; `offset` and `limit` page through them."""
    owner = owner_of(memory, user_id)
    # Keys and namespaces, not the records' text (up to 64 KiB each); the profile's own
    # records, which may be hidden with the sessions they were drawn from, are read until one
    # is visible (the first, nearly always).
    keys = memory.record_keys(owner)
    namespaces = {namespace for _, namespace in keys if namespace}
    profile = [record_id for record_id, namespace in keys if not namespace]
    for start in range(0, len(profile), _PROFILE_PROBE):
        found = [memory.get_record(owner, rid) for rid in profile[start : start + _PROFILE_PROBE]]
        if visible_records(memory, owner, [r for r in found if r is not None]):
            namespaces.add(PROFILE_NAMESPACE)
            break

    def fits(namespace: tuple[str, ...], path: Sequence[str]) -> bool:
        return len(namespace) >= len(path) and all(
            want in ("*", have) for have, want in zip(namespace, path, strict=False)
        )

    kept = {
        ns[:max_depth] if max_depth is not None else ns
        for ns in namespaces
        if fits(ns, prefix) and fits(ns[::-1], tuple(suffix)[::-1])
    }
    return sorted(kept)[offset : offset + limit]


# --- purges (services/background/forget.py's) -----------------------------------------------------


def purge_record(
    owner: str, record_id: str, *, memory: ShortTermMemory, index: LongTermIndex | None
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
    memory: ShortTermMemory,
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
            if not rest and _drawn_from_sessions(record):
                doomed.append(record)
                break
            before = record_document(record)
            _trim(record, rest)
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
            _index(index, embedder(), memory, docs)
    return len(doomed)


def _trim(record: MemoryRecord, rest: list[Provenance]) -> None:
    """`record` without a deleted session's provenance: `rest`. A record drawn from sessions
    whose words only that session said takes the words of the first session that stays; its
    date is then the first date of those that stay."""
    if _drawn_from_sessions(record) and record.type not in _OF_SESSION and rest:
        if all(p.text is not None for p in rest):
            words = rest[0].text or record.text
            rest = _with_words(rest, words, words)
            record.text = words
        dates = [p.date for p in rest]
        if record.created_at not in dates:
            record.created_at = min(dates)
        categorize(record)
    record.provenance = rest


def _rehistory(
    records: Sequence[MemoryRecord],
    doomed: Sequence[MemoryRecord],
    changed: Sequence[MemoryRecord],
    *,
    memory: ShortTermMemory,
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
    memory: ShortTermMemory,
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
