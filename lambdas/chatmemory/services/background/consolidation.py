"""Consolidation: an ended session becomes long-term memory (its summary, its opening and
two-turn windows of its transcript, embedded and indexed), then it is marked CONSOLIDATED.

The work does not grow out of a Lambda's reach with the session:

* the summary starts from the rolling summary (compaction keeps it current turn by turn), so
  only the turns after `summary_through_turn` are summarized, with bounded model work
  (services/longterm/summarize.py: at most 9 calls in at most 2 rounds, whatever the length);
* windows are embedded in batches of the model's size, `embed_concurrency` requests at once,
  and indexed a block of turns at a time;
* when the invocation runs short of time it checkpoints on the session item (the summary and
  the last indexed turn, conditional on the round it read) and hands over: that write is a
  stream record the consolidation mapping takes (schema.CONSOLIDATION_CONTINUE_FILTER), and
  the next invocation resumes from the checkpoint instead of starting over.

Everything it writes has a deterministic key, so a redelivered or concurrent run overwrites
instead of duplicating; a session deleted meanwhile is cleaned up (see consolidate_session).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from chatmemory.clock import iso
from chatmemory.domain import Session, Turn
from chatmemory.ports import (
    Embedder,
    Extractor,
    LongTermIndex,
    MemoryDoc,
    PeopleExtractor,
    RecordStore,
    ShortTermMemory,
    Summarizer,
    TurnStore,
)
from chatmemory.schema import (
    MAX_RECORD_ENTRY_CHARS,
    MemoryKind,
    RecordOrigin,
    RecordType,
    SessionStatus,
    TurnOrigin,
    chunk_doc_key,
    opening_doc_key,
    summary_doc_key,
)
from chatmemory.services.profile.entries import write_record_entries
from chatmemory.services.profile.placing import (
    known_records,
    people_of,
    remember_facts,
    remember_summary,
)
from chatmemory.services.profile.purge import drop_session_records
from chatmemory.services.prompt import Roles

TimeLeft = Callable[[], float]


def _forever() -> float:
    return math.inf


@dataclass(frozen=True)
class ConsolidationPolicy:
    # Turns per transcript chunk, and how many turns neighbouring chunks share: a sliding
    # window of two exchanges keeps a fact with its context and fits the embedder's 256 tokens.
    chunk_turns: int = 2
    chunk_overlap: int = 1
    # The opening of a conversation usually says what it is about: its first words are indexed
    # as an entry of their own, a topic key that does not depend on the summarizer's choices.
    opening_words: int = 120
    # Attempts before a session is marked FAILED (the stream record then stops retrying).
    max_attempts: int = 3
    roles: Roles = Roles()
    # Turns whose windows are embedded and indexed together (one bulk write each).
    block_turns: int = 500
    # Embedding requests in flight at once.
    embed_concurrency: int = 8
    # Hand over to a next invocation when less than this is left of the current one.
    reserve_seconds: float = 30.0
    # Turns read for the opening entry (its first `opening_words` words).
    opening_turns: int = 10


@dataclass
class ConsolidationResult:
    session_id: str
    # "consolidated" | "continued" (handed over) | "skipped" | "failed" | "deleted"
    outcome: str
    documents: int = 0
    embed_calls: int = 0
    reason: str = ""
    # Whether the session reached a conclusion: False when extraction found open questions
    # (services/profile/extract.open_questions), None when this run did not extract (no extractor,
    # or a run resumed from a checkpoint).
    concluded: bool | None = None


def transcript(turns: Sequence[Turn], roles: Roles) -> str:
    """Chronological transcript with speaker labels (pending turns have no answer). All of it:
    a summary is episodic memory, what happened in the session, and keeps the user's passing
    remarks ("I'm on the train at the moment"); only lasting records leave them out
    (services/profile/extract.py; docs/decisions.md)."""
    lines: list[str] = []
    for turn in sorted(turns, key=lambda t: t.turn):
        if turn.origin == TurnOrigin.AGENT:
            # A person's reply while the session was handed off: theirs, not the assistant's.
            if turn.response:
                lines.append(f"{roles.agent}: {turn.response}")
            continue
        if turn.input:
            lines.append(f"{roles.user}: {turn.input}")
        # What no model really said (the offline responder's notes) never becomes memory.
        if turn.response and turn.remember_response:
            lines.append(f"{roles.assistant}: {turn.response}")
    return "\n".join(lines)


def window_starts(num_turns: int, policy: ConsolidationPolicy) -> list[int]:
    """First turns of the transcript windows: every `chunk_turns - chunk_overlap` turns, the
    last window ending at the last turn (one window for a session shorter than a window)."""
    if num_turns <= 0:
        return []
    step = max(policy.chunk_turns - policy.chunk_overlap, 1)
    last = max(num_turns - policy.chunk_turns + 1, 1)
    starts = list(range(1, last + 1, step))
    if starts[-1] != last:
        starts.append(last)
    return starts


def head_documents(
    session: Session, first_turns: Sequence[Turn], summary: str, policy: ConsolidationPolicy
) -> list[MemoryDoc]:
    """The session's summary and its opening (the first `opening_words` words: a topic key
    that does not depend on the summarizer's choices). Keys `<session>#summary`, `#opening`."""
    ordered = sorted(first_turns, key=lambda t: t.turn)
    docs = []
    if summary:
        first, last = (1, session.num_turns) if session.num_turns else (None, None)
        key = summary_doc_key(session.session_id)
        docs.append(_document(session, key, MemoryKind.SUMMARY, summary, first, last))
    if ordered and policy.opening_words > 0:
        words = transcript(ordered, policy.roles).split()[: policy.opening_words]
        key = opening_doc_key(session.session_id)
        text = " ".join(words)
        docs.append(_document(session, key, MemoryKind.OPENING, text, ordered[0].turn))
    return docs


def window_documents(
    session: Session, turns: Sequence[Turn], starts: Sequence[int], policy: ConsolidationPolicy
) -> list[MemoryDoc]:
    """The transcript windows beginning at `starts` (`turns` holds every turn they cover):
    keys `<session>#chunk-<first turn>`, so a retried consolidation overwrites its own."""
    by_number = {t.turn: t for t in turns}
    docs = []
    for start in starts:
        part = [by_number[n] for n in range(start, start + policy.chunk_turns) if n in by_number]
        if not part:
            continue
        key = chunk_doc_key(session.session_id, part[0].turn)
        text = transcript(part, policy.roles)
        doc = _document(session, key, MemoryKind.CHUNK, text, part[0].turn, part[-1].turn)
        doc.created_at = part[0].created_at or session.started_at
        docs.append(doc)
    return docs


def _document(
    session: Session,
    key: str,
    kind: MemoryKind,
    text: str,
    turn_from: int | None,
    turn_to: int | None = None,
) -> MemoryDoc:
    """An entry of the session: dated when it started, titled with its name."""
    return MemoryDoc(
        doc_key=key,
        user_id=session.user_id,
        session_id=session.session_id,
        kind=kind,
        text=text,
        created_at=session.started_at,
        title=session.name,
        turn_from=turn_from,
        turn_to=turn_to,
    )


def memory_documents(
    session: Session, turns: Sequence[Turn], summary: str, policy: ConsolidationPolicy
) -> list[MemoryDoc]:
    """Everything a session leaves in long-term memory, at once (for short sessions and tests):
    its summary, its opening and its overlapping transcript windows."""
    ordered = sorted(turns, key=lambda t: t.turn)
    starts = window_starts(len(ordered), policy)
    return head_documents(session, ordered[: policy.opening_turns], summary, policy) + (
        window_documents(session, ordered, starts, policy)
    )


def embed_documents(embedder: Embedder, docs: Sequence[MemoryDoc], *, concurrency: int = 1) -> int:
    """Fill in embeddings with as few requests as the model allows, up to `concurrency` of them
    in flight at once; returns the request count."""
    batch = max(embedder.max_batch, 1)
    parts = [list(docs[start : start + batch]) for start in range(0, len(docs), batch)]

    def embed(part: list[MemoryDoc]) -> None:
        for doc, vector in zip(part, embedder.embed([d.text for d in part]), strict=True):
            doc.embedding = vector

    if concurrency <= 1 or len(parts) <= 1:
        for part in parts:
            embed(part)
    else:
        with ThreadPoolExecutor(min(concurrency, len(parts)), thread_name_prefix="embed") as pool:
            list(pool.map(embed, parts))
    return len(parts)


def session_summary(
    session: Session, memory: TurnStore, summarizer: Summarizer, policy: ConsolidationPolicy
) -> str:
    """The session's summary, continuing its rolling summary: only the turns after
    `summary_through_turn` are read and summarized."""
    uncovered = memory.turns_between(
        session.session_id, session.summary_through_turn, session.num_turns
    )
    text = transcript(uncovered, policy.roles)
    if session.running_summary:
        return summarizer.extend(session.running_summary, text) if text else session.running_summary
    return summarizer.summarize(text) if text else ""


def consolidate_session(
    session_id: str,
    *,
    memory: ShortTermMemory,
    summarizer: Summarizer,
    embedder: Embedder,
    index: LongTermIndex,
    policy: ConsolidationPolicy,
    now: datetime,
    owner: str | None = None,
    num_turns: int | None = None,
    time_left: TimeLeft = _forever,
    extractor: Extractor | None = None,
) -> ConsolidationResult:
    """Summarize, embed and index one ended session, draw the user's facts and preferences, and
    what it left open, from it into their profile (services/profile/profile.py; `concluded` in the
    result says whether anything was left open), then mark it CONSOLIDATED; or, when
    `time_left()` runs below the policy's reserve, checkpoint and hand over (outcome
    "continued"): the next invocation resumes from the checkpoint.

    A failure counts an attempt on the session; after `max_attempts` the session is marked
    FAILED with the reason and the error is not raised again (the stream moves on; the redrive
    command retries FAILED sessions, from their checkpoint).

    A session deleted while this runs is never left in the index: marking it CONSOLIDATED (or
    checkpointing it) is conditional on its status, and when that fails because it is DELETING
    or gone, what was indexed is deleted again. A redelivered record of a deleted session
    (`owner` and `num_turns` come from the stream record, for when the item is gone) deletes
    whatever an earlier attempt left."""
    session = memory.get_session(session_id)
    if session is None or session.status not in (SessionStatus.ENDED, SessionStatus.FAILED):
        gone = (session_id, owner, num_turns)
        return _not_consolidated(session, gone, memory=memory, index=index, embedder=embedder)
    concluded: bool | None = None
    try:
        summary = session.consolidation_summary
        cursor = session.consolidation_cursor
        pending: list[MemoryDoc] = []
        if summary is None:  # a first run (a checkpoint always carries the summary)
            summary = session_summary(session, memory, summarizer, policy)
            pending = _head(session, summary, memory=memory, policy=policy, now=now)
            if extractor is not None:
                concluded = _profile_of(session, extractor, memory, embedder, index, now)
            cursor = 0
        documents, calls, handed = _windows(
            session, summary, cursor, pending, memory, embedder, index, policy, time_left
        )
        if handed is not None:
            handed.concluded = concluded
            return handed
    except Exception as error:  # noqa: BLE001 - every failure counts against the session
        failed = _failed(session, error, memory, index, embedder, policy)
        if failed is None:
            raise
        return failed
    if not memory.mark_consolidated(session_id, summary, iso(now)) and _deleted_meanwhile(
        session, memory, index, embedder
    ):
        return ConsolidationResult(session_id, "deleted")
    return ConsolidationResult(session_id, "consolidated", documents, calls, concluded=concluded)


def _not_consolidated(
    session: Session | None,
    gone: tuple[str, str | None, int | None],
    *,
    memory: ShortTermMemory,
    index: LongTermIndex,
    embedder: Embedder,
) -> ConsolidationResult:
    """A session not to consolidate: deleted (or gone: `gone` is its id, owner and turns as
    the stream record had them), whatever an earlier attempt indexed deleted again; or not
    ended (skipped)."""
    session_id, owner, num_turns = gone
    if session is None or session.status == SessionStatus.DELETING:
        if session is not None:
            owner, num_turns = session.user_id, session.num_turns
        _compensate(memory, index, embedder, owner, session_id, num_turns)
        return ConsolidationResult(session_id, "deleted")
    return ConsolidationResult(session_id, "skipped")


def _deleted_meanwhile(
    session: Session, memory: ShortTermMemory, index: LongTermIndex, embedder: Embedder
) -> bool:
    """Whether the session was deleted while it was consolidated; then what was indexed is
    deleted again (its purge may already have cleared the index)."""
    current = memory.get_session(session.session_id)
    if current is None or current.status == SessionStatus.DELETING:
        _compensate(memory, index, embedder, session.user_id, session.session_id, session.num_turns)
        return True
    return False


def _windows(
    session: Session,
    summary: str,
    cursor: int,
    pending: list[MemoryDoc],
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
    policy: ConsolidationPolicy,
    time_left: TimeLeft,
) -> tuple[int, int, ConsolidationResult | None]:
    """The session's windows after `cursor` embedded and indexed a block at a time (`pending`
    with the first): the documents written, the embedding calls, and the hand-over's result
    when too little time is left to go on (None when every block is written)."""
    session_id = session.session_id
    documents = calls = 0
    starts = [s for s in window_starts(session.num_turns, policy) if s > cursor]
    blocks = [starts[i : i + policy.block_turns] for i in range(0, len(starts), policy.block_turns)]
    for chosen in blocks or [[]]:
        docs = pending
        pending = []
        if chosen:
            turns = memory.turns_between(
                session_id, chosen[0] - 1, chosen[-1] + policy.chunk_turns - 1
            )
            docs = docs + window_documents(session, turns, chosen, policy)
        if docs:
            calls += embed_documents(embedder, docs, concurrency=policy.embed_concurrency)
            # The summary's entry carries its record's id: a record deleted (and purged)
            # meanwhile has its entry deleted again right after this write.
            write_record_entries(index, memory, docs)
            documents += len(docs)
        if chosen:
            cursor = chosen[-1]
        if chosen and cursor != starts[-1] and time_left() < policy.reserve_seconds:
            handed = _hand_over(session, cursor, summary, memory, index, embedder, documents, calls)
            return documents, calls, handed
    return documents, calls, None


def _head(
    session: Session,
    summary: str,
    *,
    memory: ShortTermMemory,
    policy: ConsolidationPolicy,
    now: datetime,
) -> list[MemoryDoc]:
    """A first run's head documents (the summary's, the opening's), written with the first
    block of windows (one embedding request and one bulk write for a short session); the
    summary kept as a record of the profile, its entry carrying the record's id."""
    first = memory.turns_between(session.session_id, 0, policy.opening_turns)
    pending = head_documents(session, first, summary, policy)
    summary_record = remember_summary(session, summary, memory=memory, now=now)
    if session.summary_forgotten:  # the caller deleted it: not indexed again
        pending = [d for d in pending if d.kind != MemoryKind.SUMMARY]
    for doc in pending:
        if doc.kind == MemoryKind.SUMMARY and summary_record is not None:
            doc.record_id = summary_record.record_id
            if summary_record.origin == RecordOrigin.CORRECTED:
                # A retry after the caller corrected the summary: the entry keeps their words.
                doc.text = summary_record.text[:MAX_RECORD_ENTRY_CHARS]
    return pending


def _profile_of(
    session: Session,
    extractor: Extractor,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
    now: datetime,
) -> bool:
    """The user's facts, preferences and open questions drawn from the session into their
    profile; whether it concluded (left nothing open)."""
    turns = list(memory.all_turns(session.session_id))
    known = None
    if isinstance(extractor, PeopleExtractor):
        # The records placing weighs the facts against, read before extraction: the names of
        # the user's people they hold ("My daughter Mia is 7") make "Mia turned 8" theirs.
        known = known_records(memory, session.user_id)
        facts = extractor.extract_knowing(turns, people_of(known))
    else:
        facts = extractor.extract(turns)
    remember_facts(
        session, facts, turns, memory=memory, embedder=embedder, index=index, now=now, known=known
    )
    return not any(f.type == RecordType.OPEN_QUESTION for f in facts)


def _failed(
    session: Session,
    error: Exception,
    memory: ShortTermMemory,
    index: LongTermIndex,
    embedder: Embedder,
    policy: ConsolidationPolicy,
) -> ConsolidationResult | None:
    """A failed run counted against the session: its result, or None when it is to be raised
    (attempts left)."""
    session_id = session.session_id
    attempts = memory.record_consolidation_failure(session_id, _reason(error))
    if attempts is None:  # no longer ENDED or FAILED: deleted, or consolidated by another run
        current = memory.get_session(session_id)
        if current is not None and current.status != SessionStatus.DELETING:
            return ConsolidationResult(session_id, "skipped")  # its memory is that run's
        _compensate(memory, index, embedder, session.user_id, session_id, session.num_turns)
        return ConsolidationResult(session_id, "deleted")
    if attempts >= policy.max_attempts:
        memory.mark_failed(session_id, _reason(error))
        return ConsolidationResult(session_id, "failed", reason=_reason(error))
    return None


def _hand_over(
    session: Session,
    cursor: int,
    summary: str,
    memory: ShortTermMemory,
    index: LongTermIndex,
    embedder: Embedder,
    documents: int,
    calls: int,
) -> ConsolidationResult:
    """Checkpoint the progress; its stream record starts the next invocation."""
    if memory.checkpoint_consolidation(
        session.session_id, expected_round=session.consolidation_round, cursor=cursor,
        summary=summary,
    ):  # fmt: skip
        return ConsolidationResult(session.session_id, "continued", documents, calls)
    current = memory.get_session(session.session_id)
    if current is None or current.status == SessionStatus.DELETING:
        _compensate(memory, index, embedder, session.user_id, session.session_id, session.num_turns)
        return ConsolidationResult(session.session_id, "deleted")
    # Another run checkpointed (or finished) meanwhile: it carries on.
    return ConsolidationResult(session.session_id, "skipped", documents, calls)


def redrive_failed(
    memory: ShortTermMemory, consolidate: Callable[[str], ConsolidationResult]
) -> dict[str, str]:
    """Consolidate each FAILED session again (`consolidate`: consolidate_session with the
    deployment's models and stores) with a fresh attempt budget; the outcome per session (an
    error is reported for its session and the others go on)."""
    outcomes: dict[str, str] = {}
    for session_id in memory.failed_sessions():
        memory.reset_consolidation(session_id)
        try:
            outcomes[session_id] = consolidate(session_id).outcome
        except Exception as error:  # noqa: BLE001 - reported per session, the rest go on
            outcomes[session_id] = f"error: {_reason(error)}"
    return outcomes


def _compensate(
    memory: RecordStore,
    index: LongTermIndex,
    embedder: Embedder,
    owner: str | None,
    session_id: str,
    num_turns: int | None,
) -> None:
    """A session deleted while it was consolidated: its entries, and the records drawn only
    from it (the purge may have run before this consolidation wrote them)."""
    if owner:
        index.delete_session(owner, session_id, num_turns=num_turns)
        drop_session_records(
            owner, session_id, memory=memory, index=index, embedder=lambda: embedder
        )


def _reason(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"[:500]
