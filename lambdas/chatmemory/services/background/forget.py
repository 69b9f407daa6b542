"""Forgetting: the background purge behind a session delete and a "forget everything".

Why a delete is final whatever runs at the same time:

* A session delete is one conditional write: status DELETING (the tombstone). Every read path
  treats such a session as absent (services/access.py), and the turn write's transaction is
  conditional on the session's status, so no turn can be added once the tombstone is written.
* A forget-everything is one conditional write too: the caller's generation goes up, so their
  owner key changes (domain.owner_key). Every request resolves the current key with its first
  read, sessions can only be created under the current key (a transaction checks it), and
  every long-term search is filtered to it: all older data is out of reach at once.
* Long-term memory is never trusted on its own: what a search returns is checked against the
  sessions table (one strongly consistent BatchGetItem) before it is used. So a memory that an
  index still holds (a refresh interval, an eventually consistent backend, a consolidation
  that indexed a session just after its delete) is never recalled.
* Physical deletion follows in the background. Marking a session DELETING starts its purge
  from the sessions stream: its long-term entries, then its turns, then the item. A purge
  that runs short of time touches the item, which hands it to the next invocation; the
  sweeper re-kicks a purge that stalled. A consolidation that indexes after the purge deleted
  the session's entries sees the tombstone (or no item) when it tries to mark the session
  CONSOLIDATED, and deletes what it wrote; its retries do the same from the stream record.
* A forget queues the old owner key; its purge (from the users stream) marks every session
  under that key DELETING, which starts their purges, and deletes the key's long-term entries
  and profile records.
* A session's purge also removes the profile records drawn only from it; a record deleted
  through the API is a tombstone (status DELETING) purged from the records stream.
  It waits `settle_seconds` after the forget first, so that sessions written just before it
  have reached the user index it reads.

Every step is idempotent, so redelivered and concurrent stream records are harmless.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from chatmemory.clock import iso, parse_time, utc_now
from chatmemory.domain import PurgeEntry, caller_of
from chatmemory.errors import Conflict
from chatmemory.ports import (
    CheckpointStore,
    Clock,
    Embedder,
    LongTermIndex,
    ShortTermMemory,
    UserSessions,
    UserStore,
)
from chatmemory.schema import PurgeState, SessionStatus
from chatmemory.services.profile.entries import entry_keys
from chatmemory.services.profile.purge import drop_session_records


@dataclass(frozen=True)
class PurgePolicy:
    # Turns deleted per round trip group (a Query of keys, then BatchWriteItems of 25).
    turns_per_round: int = 500
    # Sessions marked per page of the user index.
    sessions_per_page: int = 100
    # Stop and hand over to a next invocation when less than this is left of the current one.
    reserve_seconds: float = 15.0
    # How long after a forget the user index is trusted to show every session of the old key.
    settle_seconds: float = 30.0


@dataclass(frozen=True)
class Purging:
    """What a purge works with: the stores, the long-term index (None: the deployment has
    none), the policy, and for a session's purge its LangGraph checkpoints and what makes the
    embedder that writes again the entries of records that stay without the session's words or
    dates (profile.drop_session_records; made only then: most purges never build a model
    client)."""

    memory: ShortTermMemory
    index: LongTermIndex | None
    policy: PurgePolicy = PurgePolicy()
    checkpoints: CheckpointStore | None = None
    embedder: Callable[[], Embedder] | None = None


@dataclass
class PurgeResult:
    target: str
    outcome: str  # "purged" | "continued" | "gone" | "skipped" | "marked"
    deleted: int = 0


def forget_user(memory: UserStore, user_id: str, *, clock: Clock = utc_now) -> None:
    """Make every session, turn and memory of the caller unreachable now (one conditional
    write) and queue their physical deletion."""
    for _ in range(5):
        user = memory.get_user(user_id)
        try:
            memory.forget_user(user, iso(clock()))
        except Conflict:
            continue  # a concurrent forget won: forget again, so this one covers its gap too
        return
    raise Conflict("the caller's memory kept changing; retry the request")


def purge_session(
    session_id: str, purging: Purging, *, time_left: Callable[[], float], clock: Clock = utc_now
) -> PurgeResult:
    """Delete a DELETING session's long-term entries, turns, LangGraph checkpoints and item,
    as far as time allows."""
    memory, index, policy = purging.memory, purging.index, purging.policy
    session = memory.get_session(session_id)
    if session is None:
        return PurgeResult(session_id, "gone")
    if session.status != SessionStatus.DELETING:
        return PurgeResult(session_id, "skipped")
    if index is not None:
        index.delete_session(session.user_id, session_id, num_turns=session.num_turns)
    drop_session_records(
        session.user_id, session_id, memory=memory, index=index, embedder=purging.embedder
    )
    deleted = 0
    while True:
        count = memory.delete_turns(session_id, policy.turns_per_round)
        if purging.checkpoints is not None:
            count += purging.checkpoints.delete_checkpoints(session_id, policy.turns_per_round)
        deleted += count
        if count == 0:
            break
        if time_left() < policy.reserve_seconds:
            memory.continue_purge(session_id, iso(clock()))
            return PurgeResult(session_id, "continued", deleted)
    if session.client_id:
        # Before the item: a purge retried after this finds the item and drops nothing more.
        memory.drop_alias(caller_of(session.user_id), session.client_id, session_id)
    memory.remove_session(session_id)
    return PurgeResult(session_id, "purged", deleted)


def purge_user(
    user_id: str,
    purging: Purging,
    *,
    time_left: Callable[[], float],
    clock: Clock = utc_now,
    sleep: Callable[[float], None] = time.sleep,
) -> PurgeResult:
    """Mark every session under the caller's forgotten owner keys DELETING (each then purges
    itself) and delete those keys' long-term entries."""
    memory, index, policy = purging.memory, purging.index, purging.policy
    user = memory.get_user(user_id)
    purges = [PurgeEntry(p.owner, p.requested_at, p.state) for p in user.purges]
    marked = 0
    for entry in purges:
        if entry.state != PurgeState.PENDING:
            continue
        wait = _settle_left(entry, clock(), policy.settle_seconds)
        if wait > 0:
            if time_left() - wait < policy.reserve_seconds:
                memory.save_purges(user, purges, handover=True)
                return PurgeResult(user_id, "continued", marked)
            sleep(wait)
        token: str | None = None
        while True:
            page = memory.sessions_of_owner(entry.owner, policy.sessions_per_page, token)
            for session in page.items:
                if session.status != SessionStatus.DELETING and memory.mark_deleting(
                    session.session_id, iso(clock())
                ):
                    marked += 1
            token = page.next_token
            if not token:
                break
            if time_left() < policy.reserve_seconds:
                memory.save_purges(user, purges, handover=True)
                return PurgeResult(user_id, "continued", marked)
        # Expired records too: their items and entries go now, not when DynamoDB's TTL runs.
        records = list(memory.records_of_owner(entry.owner, include_expired=True))
        if index is not None:
            # The records' entries by key (a store without delete-by-query finds no other
            # way); the sessions' entries go with each session's purge.
            index.delete_user(entry.owner, doc_keys=[k for r in records for k in entry_keys(r)])
        memory.remove_records(entry.owner, [r.record_id for r in records])
        entry.state = PurgeState.MARKED
    # Keys whose sessions are all purged need no entry any more.
    remaining = [
        p
        for p in purges
        if p.state == PurgeState.PENDING or memory.sessions_of_owner(p.owner, 1, None).items
    ]
    memory.save_purges(user, remaining, handover=False)  # lost to a new forget: it reruns
    return PurgeResult(user_id, "marked", marked)


def rekick_user_purges(memory: UserStore) -> list[str]:
    """Hand every unfinished forget to a new purge invocation (touching the user item starts
    one from the users stream): the redrive for a user purge whose stream retries ran out and
    whose record went to the dead-letter queue. Returns the callers touched."""
    touched: list[str] = []
    for user_id in memory.pending_user_purges():
        user = memory.get_user(user_id)
        if memory.save_purges(user, user.purges, handover=True):
            touched.append(user_id)
    return touched


def _settle_left(entry: PurgeEntry, now: datetime, settle_seconds: float) -> float:
    requested = parse_time(entry.requested_at)
    if requested is None:
        return 0.0
    return max(settle_seconds - (now - requested).total_seconds(), 0.0)


@dataclass
class DeletionStatus:
    complete: bool
    sessions_pending: int
    forget_requests_pending: int


def deletion_status(memory: UserSessions, user_id: str, *, max_pages: int = 20) -> DeletionStatus:
    """Whether the physical deletion of what the caller deleted has finished: no session left
    under a forgotten owner key, none DELETING under the current one, no forget unmarked."""
    user = memory.get_user(user_id)
    pending = 0
    for owner in [user.owner, *(p.owner for p in user.purges)]:
        token: str | None = None
        for _ in range(max_pages):
            page = memory.sessions_of_owner(owner, 100, token)
            pending += sum(
                1 for s in page.items if owner != user.owner or s.status == SessionStatus.DELETING
            )
            token = page.next_token
            if not token:
                break
    unmarked = sum(1 for p in user.purges if p.state == PurgeState.PENDING)
    return DeletionStatus(pending == 0 and unmarked == 0, pending, unmarked)
