"""Consolidation: an ended session becomes long-term memory (summary + transcript chunks,
embedded and indexed), and the session is marked CONSOLIDATED. Safe to run twice."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from chatmemory.clock import iso
from chatmemory.domain import Session, Turn
from chatmemory.ports import (
    Embedder,
    LongTermIndex,
    MemoryDoc,
    ShortTermMemory,
    Summarizer,
)
from chatmemory.schema import MEMORY_INDEX, SessionStatus
from chatmemory.services.prompt import Roles


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


@dataclass
class ConsolidationResult:
    session_id: str
    outcome: str  # "consolidated" | "skipped" | "failed" | "deleted"
    documents: int = 0
    embed_calls: int = 0
    reason: str = ""


def transcript(turns: Sequence[Turn], roles: Roles) -> str:
    """Chronological transcript with speaker labels (pending turns have no answer)."""
    lines: list[str] = []
    for turn in sorted(turns, key=lambda t: t.turn):
        if turn.input:
            lines.append(f"{roles.user}: {turn.input}")
        if turn.response:
            lines.append(f"{roles.assistant}: {turn.response}")
    return "\n".join(lines)


def _chunk_ranges(count: int, size: int, overlap: int) -> list[tuple[int, int]]:
    step = max(size - overlap, 1)
    ranges = []
    for start in range(0, count, step):
        end = min(start + size, count)
        ranges.append((start, end))
        if end == count:
            break
    return ranges


def memory_documents(
    session: Session, turns: Sequence[Turn], summary: str, policy: ConsolidationPolicy
) -> list[MemoryDoc]:
    """What a session leaves in long-term memory: its summary, its opening, and overlapping
    transcript chunks. Keys are deterministic (`<session>#summary`, `<session>#opening`,
    `<session>#chunk-<first turn>`), so a retried consolidation overwrites its own documents."""
    ordered = sorted(turns, key=lambda t: t.turn)
    date = session.started_at
    docs = []
    if summary:
        docs.append(
            MemoryDoc(
                doc_key=f"{session.session_id}#summary",
                user_id=session.user_id,
                session_id=session.session_id,
                kind="summary",
                text=summary,
                created_at=date,
                title=session.name,
                turn_from=ordered[0].turn if ordered else None,
                turn_to=ordered[-1].turn if ordered else None,
            )
        )
    if ordered and policy.opening_words > 0:
        words = transcript(ordered, policy.roles).split()[: policy.opening_words]
        docs.append(
            MemoryDoc(
                doc_key=f"{session.session_id}#opening",
                user_id=session.user_id,
                session_id=session.session_id,
                kind="opening",
                text=" ".join(words),
                created_at=date,
                title=session.name,
                turn_from=ordered[0].turn,
            )
        )
    for start, end in _chunk_ranges(len(ordered), policy.chunk_turns, policy.chunk_overlap):
        part = ordered[start:end]
        docs.append(
            MemoryDoc(
                doc_key=f"{session.session_id}#chunk-{part[0].turn}",
                user_id=session.user_id,
                session_id=session.session_id,
                kind="chunk",
                text=transcript(part, policy.roles),
                created_at=part[0].created_at or date,
                title=session.name,
                turn_from=part[0].turn,
                turn_to=part[-1].turn,
            )
        )
    return docs


def embed_documents(embedder: Embedder, docs: Sequence[MemoryDoc]) -> int:
    """Fill in embeddings with as few requests as the model allows; returns the request count."""
    calls = 0
    batch = max(embedder.max_batch, 1)
    for start in range(0, len(docs), batch):
        part = docs[start : start + batch]
        for doc, vector in zip(part, embedder.embed([d.text for d in part]), strict=True):
            doc.embedding = vector
        calls += 1
    return calls


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
) -> ConsolidationResult:
    """Summarize, embed and index one ended session, then mark it CONSOLIDATED.

    A failure counts an attempt on the session; after `max_attempts` the session is marked
    FAILED with the reason and the error is not raised again (the stream moves on; the redrive
    command retries FAILED sessions).

    A session deleted while this runs is never left in the index: marking it CONSOLIDATED is
    conditional on its status, and when that fails because it is DELETING or gone, what was
    indexed is deleted again. A redelivered record of a deleted session (`owner` comes from
    the stream record, for when the item is gone) deletes whatever an earlier attempt left."""
    session = memory.get_session(session_id)
    if session is None or session.status == SessionStatus.DELETING:
        _compensate(index, session.user_id if session else owner, session_id)
        return ConsolidationResult(session_id, "deleted")
    if session.status not in (SessionStatus.ENDED, SessionStatus.FAILED):
        return ConsolidationResult(session_id, "skipped")
    try:
        turns = list(memory.all_turns(session_id))
        summary = summarizer.summarize(transcript(turns, policy.roles)) if turns else ""
        docs = memory_documents(session, turns, summary, policy)
        calls = embed_documents(embedder, docs)
        index.upsert(MEMORY_INDEX, docs)
    except Exception as error:  # noqa: BLE001 - every failure counts against the session
        attempts = memory.record_consolidation_failure(session_id, _reason(error))
        if attempts is None:  # deleted meanwhile: nothing to retry, nothing may stay
            _compensate(index, session.user_id, session_id)
            return ConsolidationResult(session_id, "deleted")
        if attempts >= policy.max_attempts:
            memory.mark_failed(session_id, _reason(error))
            return ConsolidationResult(session_id, "failed", reason=_reason(error))
        raise
    if not memory.mark_consolidated(session_id, summary, iso(now)):
        current = memory.get_session(session_id)
        if current is None or current.status == SessionStatus.DELETING:
            # Deleted while this ran: its purge may already have cleared the index.
            _compensate(index, session.user_id, session_id)
            return ConsolidationResult(session_id, "deleted")
    return ConsolidationResult(session_id, "consolidated", len(docs), calls)


def redrive_failed(
    *,
    memory: ShortTermMemory,
    summarizer: Summarizer,
    embedder: Embedder,
    index: LongTermIndex,
    policy: ConsolidationPolicy,
    now: datetime,
) -> dict[str, str]:
    """Consolidate each FAILED session again with a fresh attempt budget; the outcome per
    session (an error is reported for its session and the others go on)."""
    outcomes: dict[str, str] = {}
    for session_id in memory.failed_sessions():
        memory.reset_consolidation(session_id)
        try:
            result = consolidate_session(
                session_id,
                memory=memory,
                summarizer=summarizer,
                embedder=embedder,
                index=index,
                policy=policy,
                now=now,
            )
            outcomes[session_id] = result.outcome
        except Exception as error:  # noqa: BLE001 - reported per session, the rest go on
            outcomes[session_id] = f"error: {_reason(error)}"
    return outcomes


def _compensate(index: LongTermIndex, owner: str | None, session_id: str) -> None:
    if owner:
        index.delete_session(owner, session_id)


def _reason(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"[:500]
