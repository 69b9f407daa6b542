"""Off-request-path upkeep of short-term memory: rolling summaries, and the sweep (idle sessions,
lost consolidations, abandoned imports, stalled purges)."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from chatmemory import schema
from chatmemory.clock import iso
from chatmemory.errors import Conflict, SessionNotFound
from chatmemory.ports import SessionStore, SessionTurns
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
    memory: SessionTurns,
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
    summary = summarizer.extend(session.running_summary, transcript(turns, policy.roles))
    return memory.update_running_summary(
        session_id, summary, through, expected_through=session.summary_through_turn
    )


def _forever() -> float:
    return math.inf


@dataclass(frozen=True)
class SweepPass:
    """How a pass of the sweep reads the sparse index: `page_size` sessions a page, `workers`
    shards side by side, while more than `reserve_seconds` of `time_left()` are left."""

    page_size: int = 100
    time_left: Callable[[], float] = _forever
    reserve_seconds: float = 5.0
    workers: int = 1


def each_stale(
    memory: SessionStore,
    state: str,
    before: str,
    act: Callable[[list[str]], None],
    run: SweepPass,
) -> bool:
    """Page through every shard of the sparse index for the sessions in `state` whose bucket is
    before `before`, oldest first, `act` on each page, the shards side by side, until every
    shard is read to its end (True) or the pass's time is up (False: what is left is found by
    the next sweep, since every action here moves a session out of the stale range or out of
    the index)."""

    def shard_done(shard: int) -> bool:
        token: str | None = None
        while True:
            if run.time_left() < run.reserve_seconds:
                return False
            page = memory.stale_page(state, shard, before, run.page_size, token)
            if page.items:
                act(page.items)
            token = page.next_token
            if token is None:
                return True

    if run.workers <= 1:
        return all([shard_done(shard) for shard in range(OPEN_SHARDS)])
    with ThreadPoolExecutor(min(run.workers, OPEN_SHARDS), thread_name_prefix="sweep") as pool:
        return all(pool.map(shard_done, range(OPEN_SHARDS)))


def sweep_idle_sessions(
    memory: SessionStore,
    *,
    now: datetime,
    idle_minutes: int,
    run: SweepPass = SweepPass(),
) -> list[str]:
    """End sessions idle longer than idle_minutes (their consolidation follows from the
    stream), every shard page by page while time is left. Reads the sparse, write-sharded
    open-sessions index: no scan, no hot partition."""
    before = iso(now - timedelta(minutes=idle_minutes))
    ended: list[str] = []
    lock = threading.Lock()

    def end(session_ids: list[str]) -> None:
        for session_id in session_ids:
            try:
                memory.end_session(session_id, iso(now), idle_before=before)
            except (Conflict, SessionNotFound):
                continue  # active again, or ended/deleted meanwhile
            with lock:
                ended.append(session_id)

    each_stale(memory, SessionStatus.OPEN, before, end, run)
    return ended


def retry_lost_consolidations(
    memory: SessionStore,
    *,
    now: datetime,
    retry_minutes: int,
    limit: int,
    run: SweepPass = SweepPass(),
) -> list[str]:
    """Start again the consolidation of sessions ENDED longer than `retry_minutes` ago and not
    started again for as long: their stream record expired, went to the dead letters, or its
    run died (a session the stream still carries, or that a run is consolidating, is started
    twice at worst: runs are idempotent). At most `limit` a sweep, so a backlog is handed to
    consolidation no faster than it can take it; each shard its share of them, oldest first
    (the shards' sessions are ordered within a shard only), and what one shard leaves unused
    the others may take."""
    before = iso(now - timedelta(minutes=retry_minutes))
    retried: list[str] = []
    lock = threading.Lock()
    share = math.ceil(limit / OPEN_SHARDS)
    rounds = [share, limit]  # each shard its share, then whatever is left
    # The pass ends once `limit` are retried.
    until_limit = replace(
        run, time_left=lambda: run.time_left() if len(retried) < limit else -math.inf
    )

    for cap in rounds:
        taken: dict[str, int] = {}

        def retry(session_ids: list[str], cap: int = cap, taken: dict[str, int] = taken) -> None:
            shard = schema.sweep_shard_of(session_ids[0], SessionStatus.ENDED)
            with lock:
                room = min(limit - len(retried), cap - taken.get(shard, 0))
            if room <= 0:
                return
            done = memory.retry_consolidation(session_ids, at=iso(now), before=before, limit=room)
            with lock:
                retried.extend(done)
                taken[shard] = taken.get(shard, 0) + len(done)

        each_stale(memory, SessionStatus.ENDED, before, retry, until_limit)
        if len(retried) >= limit:
            break
    return retried


def oldest_unconsolidated(memory: SessionStore) -> datetime | None:
    """When the oldest session still ENDED (not yet CONSOLIDATED or FAILED) ended, to its
    bucket's start; None when there is none."""
    buckets = [memory.oldest_stale(SessionStatus.ENDED, shard) for shard in range(OPEN_SHARDS)]
    found = [b for b in buckets if b is not None]
    return datetime.fromisoformat(min(found) + ":00+00:00") if found else None


@dataclass
class StaleWork:
    abandoned_imports: list[str]
    stalled_purges: list[str]


def sweep_stale_work(
    memory: SessionStore,
    *,
    now: datetime,
    stale_minutes: int = 15,
    run: SweepPass = SweepPass(),
) -> StaleWork:
    """Collect what a crash left behind, from the same sparse index: an import still
    IMPORTING long after the API's time limit is marked DELETING (the purge removes what it
    wrote); a purge that has not progressed for a while (its stream retries ran out, say) is
    handed to a new invocation."""
    before = iso(now - timedelta(minutes=stale_minutes))
    at = iso(now)
    found = StaleWork([], [])
    lock = threading.Lock()

    def abandon(session_ids: list[str]) -> None:
        for session_id in session_ids:
            if memory.mark_deleting(session_id, at):
                with lock:
                    found.abandoned_imports.append(session_id)

    def rekick(session_ids: list[str]) -> None:
        for session_id in session_ids:
            memory.continue_purge(session_id, at)
            with lock:
                found.stalled_purges.append(session_id)

    for state, act in ((SessionStatus.IMPORTING, abandon), (SessionStatus.DELETING, rekick)):
        each_stale(memory, state, before, act, run)
    return found


@dataclass(frozen=True)
class SweepPolicy:
    """What one scheduled sweep does (handlers/sweep_idle.py)."""

    idle_minutes: int = 30
    # An ENDED session not consolidated this long after it ended (or after it was last started
    # again) is started again; at most this many a sweep.
    retry_minutes: int = 360
    retries_per_sweep: int = 1000
    stale_minutes: int = 15
    # How each pass reads the sparse index (its time_left is the sweep's).
    run: SweepPass = SweepPass(workers=OPEN_SHARDS)


@dataclass
class SweepResult:
    ended: list[str]
    retried: list[str]
    stale: StaleWork
    # When the oldest session not yet consolidated ended (None: none is waiting).
    oldest_unconsolidated: datetime | None


def sweep(
    memory: SessionStore,
    *,
    now: datetime,
    policy: SweepPolicy,
    time_left: Callable[[], float] = _forever,
) -> SweepResult:
    """One sweep: end idle sessions, start again lost consolidations, collect abandoned imports
    and stalled purges, each through every shard while time is left (what is left waits for
    the next sweep); then how long the oldest unconsolidated session has waited."""
    # Each pass pages every shard in parallel, while time is left.
    run = replace(policy.run, time_left=time_left)
    ended = sweep_idle_sessions(memory, now=now, idle_minutes=policy.idle_minutes, run=run)
    retried = retry_lost_consolidations(
        memory,
        now=now,
        retry_minutes=policy.retry_minutes,
        limit=policy.retries_per_sweep,
        run=run,
    )
    stale = sweep_stale_work(memory, now=now, stale_minutes=policy.stale_minutes, run=run)
    return SweepResult(ended, retried, stale, oldest_unconsolidated(memory))
