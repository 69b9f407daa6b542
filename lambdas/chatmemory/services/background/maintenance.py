"""Off-request-path upkeep of short-term memory: rolling summaries, idle sessions, redrive."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from chatmemory.clock import iso
from chatmemory.errors import Conflict, SessionNotFound
from chatmemory.ports import ShortTermMemory
from chatmemory.schema import OPEN_SHARDS, SessionStatus
from chatmemory.services.background.consolidation import transcript
from chatmemory.services.prompt import Roles


class SummaryExtender(Protocol):
    def extend(self, summary: str, new_text: str) -> str: ...


@dataclass(frozen=True)
class CompactionPolicy:
    # Compact once more than this many turns are not covered by the running summary...
    compact_after_turns: int = 12
    # ...keeping this many newest turns out of the summary (they are in the chat window).
    keep_recent_turns: int = 6
    roles: Roles = Roles()


def compact_session(
    session_id: str,
    *,
    memory: ShortTermMemory,
    summarizer: SummaryExtender,
    policy: CompactionPolicy,
) -> bool:
    """Extend the rolling summary with turns older than the recent window. Returns True when
    the summary advanced. A concurrent run that advanced it first wins; this one is dropped."""
    session = memory.get_session(session_id)
    if session is None or session.status != SessionStatus.OPEN:
        return False
    uncovered = session.num_turns - session.summary_through_turn
    if uncovered <= policy.compact_after_turns:
        return False
    through = session.num_turns - policy.keep_recent_turns
    turns = memory.turns_between(session_id, session.summary_through_turn, through)
    if not turns:
        return False
    summary = summarizer.extend(session.running_summary, transcript(turns, policy.roles, gist=True))
    return memory.update_running_summary(
        session_id, summary, through, expected_through=session.summary_through_turn
    )


def sweep_idle_sessions(
    memory: ShortTermMemory, *, now: datetime, idle_minutes: int, per_shard: int = 100
) -> list[str]:
    """End sessions idle longer than idle_minutes (their consolidation follows from the
    stream). Reads the sparse, write-sharded open-sessions index: no scan, no hot partition."""
    before = iso(now - timedelta(minutes=idle_minutes))
    ended: list[str] = []
    for shard in range(OPEN_SHARDS):
        for session_id in memory.stale_sessions(SessionStatus.OPEN, shard, before, per_shard):
            try:
                memory.end_session(session_id, iso(now), idle_before=before)
            except (Conflict, SessionNotFound):
                continue  # active again, or ended/deleted meanwhile
            ended.append(session_id)
    return ended


@dataclass
class StaleWork:
    abandoned_imports: list[str]
    stalled_purges: list[str]


def sweep_stale_work(
    memory: ShortTermMemory, *, now: datetime, stale_minutes: int = 15, per_shard: int = 100
) -> StaleWork:
    """Collect what a crash left behind, from the same sparse index: an import still
    IMPORTING long after the API's time limit is marked DELETING (the purge removes what it
    wrote); a purge that has not progressed for a while (its stream retries ran out, say) is
    handed to a new invocation."""
    before = iso(now - timedelta(minutes=stale_minutes))
    at = iso(now)
    found = StaleWork([], [])
    for shard in range(OPEN_SHARDS):
        for session_id in memory.stale_sessions(SessionStatus.IMPORTING, shard, before, per_shard):
            if memory.mark_deleting(session_id, at):
                found.abandoned_imports.append(session_id)
        for session_id in memory.stale_sessions(SessionStatus.DELETING, shard, before, per_shard):
            memory.continue_purge(session_id, at)
            found.stalled_purges.append(session_id)
    return found
