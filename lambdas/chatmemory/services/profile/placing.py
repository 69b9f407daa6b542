"""Placing a record in the caller's profile: new, merged into a duplicate, superseding what it
replaces or settling an open question, retried when a concurrent writer moved first; records
drawn from ended sessions (consolidation) are placed here (services/profile/profile.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import NamedTuple

from chatmemory.clock import iso
from chatmemory.domain import MemoryRecord, Provenance, Session, Turn
from chatmemory.errors import Conflict
from chatmemory.ports import (
    Embedder,
    ExtractedFact,
    LongTermIndex,
    RecordStore,
    Search,
    ShortTermMemory,
)
from chatmemory.schema import (
    MEMORY_INDEX,
    RecordOrigin,
    RecordStatus,
    RecordType,
)
from chatmemory.services.profile.clauses import names_of_ours
from chatmemory.services.profile.entries import (
    ANSWERS,
    ProfilePolicy,
    ProfileResult,
    categorize,
    extracted_record_id,
    index_documents,
    is_forgotten,
    record_document,
    same_words,
    statement_key,
    summary_record_id,
    visible_records,
    with_words,
    write_record_entries,
)


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
    known: list[MemoryRecord] | None = None,
) -> ProfileResult:
    """Turn what the extractor found into records: new ones, merged into a duplicate, or
    superseding an older record about the same thing. Idempotent: a retried consolidation
    finds its records already written, and writes none the caller deleted since (the
    session's forgotten facts, read again after the writes: a delete that ran meanwhile has
    what it deleted marked deleting here, as remember_summary does). `known`: the caller's
    records (`known_records`), when read already."""
    result = ProfileResult()
    records = _extracted_records(session, facts, turns, now)
    if not records:
        return result
    vectors = embedder.embed([r.text for r in records])
    # The caller's records, read once for the whole batch (each placement keeps it current; a
    # conflict reads it again): one Query per session, not one per fact.
    known = known_records(memory, session.user_id) if known is None else known
    written: list[MemoryRecord] = []
    for record, vector in zip(records, vectors, strict=True):
        outcome, placed = place(
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


def known_records(memory: ShortTermMemory, owner: str) -> list[MemoryRecord]:
    """The caller's records as placing weighs new ones against them (not deleted, drawn from
    a session still there): one Query."""
    return visible_records(memory, owner, list(memory.records_of_owner(owner)))


def people_of(records: Sequence[MemoryRecord]) -> frozenset[str]:
    """The names of the user's people their standing facts give ("My daughter Mia is 7")."""
    return frozenset(
        name
        for r in records
        if r.status == RecordStatus.ACTIVE and r.type in (RecordType.FACT, RecordType.PREFERENCE)
        for name in names_of_ours(r.text)
    )


def _extracted_records(
    session: Session, facts: Sequence[ExtractedFact], turns: Sequence[Turn], now: datetime
) -> list[MemoryRecord]:
    """The records of what the extractor found in a session, but those the caller deleted."""
    dates = {t.turn: t.created_at or session.started_at for t in turns}
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
    return [r for r in records if not is_forgotten(r, session.forgotten_facts)]


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
        if is_forgotten(record, now_session.forgotten_facts):
            memory.mark_record_deleting(record.user_id, record.record_id)


def place(
    record: MemoryRecord,
    vector: list[float],
    *,
    memory: RecordStore,
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
        if (
            existing.status != RecordStatus.DELETING
            and existing.text == record.text
            and existing.indexed
        ):
            rewrite_entries(
                existing, vector, memory=memory, embedder=embedder, index=index, known=known
            )
        return "exists", existing
    # A statement of the caller's own (not keyed, lasting, the profile's) is claimed by its
    # words: of concurrent identical statements one writes its record, the others find it.
    # The claim is read before the records: a statement written after this read fails the
    # write below, one written before it is among the records read.
    statement = _claimed_statement(record, merge)
    writes = _Writes(record, vector, memory, embedder, index, statement)
    for attempt in range(policy.attempts):
        holder = memory.statement_holder(record.user_id, statement) if statement else None
        mine = _weighed_against(record, memory, known, attempt)
        active = {
            r.record_id: r
            for r in mine
            if r.status == RecordStatus.ACTIVE and r.type == record.type
        }
        # An open question never merges: its entry is its session's (record_document).
        merging = merge and record.type != RecordType.OPEN_QUESTION
        duplicate = _duplicate(record, vector, active, index, policy) if merging else None
        if duplicate is not None:
            placed = writes.merge_into(duplicate, mine)
        else:
            placed = writes.write_new(active, mine, holder)
        if placed is not None:
            return placed
    raise Conflict("the caller's records kept changing; the consolidation will be retried")


def _weighed_against(
    record: MemoryRecord, memory: RecordStore, known: list[MemoryRecord] | None, attempt: int
) -> list[MemoryRecord]:
    """The caller's records a new record may merge into, supersede or settle: `known` on the
    first attempt, read again after a conflict (and `known` updated)."""
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
    return [] if keyed_item else [r for r in mine if not r.namespace and r.expires_at is None]


class _Writes(NamedTuple):
    """The writes of one placement (place): each returns how it was placed, or None when a
    concurrent writer moved first and the records are to be read again."""

    record: MemoryRecord
    vector: list[float]
    memory: RecordStore
    embedder: Embedder
    memory_index: LongTermIndex
    statement: str

    def merge_into(
        self, duplicate: MemoryRecord, mine: Sequence[MemoryRecord]
    ) -> tuple[str, MemoryRecord] | None:
        """The record merged into `duplicate`, which says the same."""
        record, memory, embedder, index = self.record, self.memory, self.embedder, self.memory_index
        if record.origin == RecordOrigin.STATED and duplicate.origin == RecordOrigin.EXTRACTED:
            # The caller says it themselves now: theirs, whatever becomes of the sessions,
            # and in their words (a session's words, kept, would outlive its deletion).
            duplicate.provenance = with_words(duplicate.provenance, duplicate.text, record.text)
            duplicate.origin = RecordOrigin.STATED
            duplicate.text = record.text
        seen = {(p.session_id, p.turn) for p in duplicate.provenance}
        # Each session keeps its own words where they are not the record's.
        duplicate.provenance += with_words(
            [p for p in record.provenance if (p.session_id, p.turn) not in seen],
            record.text,
            duplicate.text,
        )
        duplicate.updated_at = record.updated_at
        duplicate.subject = duplicate.subject or record.subject
        categorize(duplicate)
        if memory.save_record(duplicate):
            # Its entry now lists the new session too (see record_document).
            index_documents(index, embedder, memory, [record_document(duplicate)])
            _adopt(record, duplicate, mine, memory=memory, embedder=embedder, index=index)
            return "merged", duplicate
        if self.statement and not record.provenance:
            # Stated again while a concurrent statement of the same words saved it: that
            # one's save is this one's (nothing of a statement is kept beside its words).
            current = memory.get_record(duplicate.user_id, duplicate.record_id)
            if (
                current is not None
                and current.status == RecordStatus.ACTIVE
                and same_words(current.text, record.text)
            ):
                _adopt(record, current, mine, memory=memory, embedder=embedder, index=index)
                return "merged", current
        return None

    def write_new(
        self,
        active: dict[str, MemoryRecord],
        mine: Sequence[MemoryRecord],
        holder: str | None,
    ) -> tuple[str, MemoryRecord] | None:
        """The record written as a record of its own, superseding the older records about the
        same thing and settling the open questions it answers (or history from the start)."""
        record, memory = self.record, self.memory
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
        superseded = _supersede(record, older, mine, memory)
        if superseded is None:
            return None
        if self.statement:
            if not memory.put_stated_record(record, statement=self.statement, holder=holder):
                return None  # the same words stated meanwhile: read again, find them, merge
        elif not memory.put_record(record):
            return "exists", memory.get_record(record.user_id, record.record_id) or record
        # The superseded records' entries learn their end date (they are embedded again).
        index_documents(
            self.memory_index, self.embedder, memory, [record_document(r) for r in superseded]
        )
        if record.indexed:
            write_record_entries(
                self.memory_index,
                memory,
                [replace(record_document(record), embedding=self.vector)],
            )
        return ("superseding" if older else "created"), record


def _supersede(
    record: MemoryRecord,
    older: Sequence[MemoryRecord],
    mine: Sequence[MemoryRecord],
    memory: RecordStore,
) -> list[MemoryRecord] | None:
    """`older` marked superseded by `record`, with the history an earlier attempt marked so
    before it stopped (the id is deterministic: its entry may still lack its end date); None
    when a concurrent writer moved first."""
    superseded = [
        r
        for r in mine
        if r.status == RecordStatus.SUPERSEDED and r.superseded_by == record.record_id
    ]
    for old in older:
        old.status = RecordStatus.SUPERSEDED
        old.superseded_by = record.record_id
        old.valid_until = record.created_at
        if not memory.save_record(old):
            return None  # a concurrent writer moved first: read the records again
        superseded.append(old)
    return superseded


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
    memory: RecordStore,
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
    index_documents(index, embedder, memory, [record_document(r) for r in adopted])


def _settling(
    record: MemoryRecord, mine: Sequence[MemoryRecord]
) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """The open questions `record` settles (asked before it), and, for an open question, the
    statements that settled it already (made after it; history ones too: they answered)."""
    from chatmemory.services.profile.extract import settles  # its patterns: not at cold start

    if record.type in ANSWERS:
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
            if r.type in ANSWERS
            and r.status != RecordStatus.DELETING
            and r.created_at > record.created_at
            and settles(r.text, r.subject, record.subject)
        ]
    return [], []


def rewrite_entries(
    record: MemoryRecord,
    vector: list[float],
    *,
    memory: RecordStore,
    embedder: Embedder,
    index: LongTermIndex,
    known: Sequence[MemoryRecord] | None = None,
) -> None:
    """A retried placement: the record's entry, and the entries of the records it superseded
    (an attempt that stopped before writing them left them without their end date, and recall
    would present them as still true): same-subject ones, and open questions it settled."""
    superseded = []
    if record.subject or record.type in ANSWERS:
        mine = known if known is not None else memory.records_of_owner(record.user_id)
        superseded = [
            r
            for r in mine
            if r.status == RecordStatus.SUPERSEDED and r.superseded_by == record.record_id
        ]
    index_documents(index, embedder, memory, [record_document(r) for r in superseded])
    write_record_entries(index, memory, [replace(record_document(record), embedding=vector)])


def _duplicate(
    record: MemoryRecord,
    vector: list[float],
    active: dict[str, MemoryRecord],
    index: LongTermIndex,
    policy: ProfilePolicy,
) -> MemoryRecord | None:
    for other in active.values():
        if same_words(other.text, record.text):
            return other
    if record.subject:
        return None  # about a named thing: the same subject supersedes instead
    hits = index.vector_search(Search(MEMORY_INDEX, vector, "", 8, record.user_id))
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
