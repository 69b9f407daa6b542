"""InMemoryShortTermMemory: the ShortTermMemory port in plain Python, for fast service tests.

It keeps the DynamoDB adapter's promises, which tests/contract checks against both: every
conditional write fails (Conflict, False or nothing) exactly where DynamoDB's condition would,
a turn and its session change together or not at all, objects handed out are copies (as
objects read from a table would be), and the sweeper's sparse index is emulated from the same
schema.py functions (shards, 10-minute activity buckets)."""

from __future__ import annotations

import base64
import copy
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chatmemory import schema
from chatmemory.clock import utc_now
from chatmemory.domain import (
    CoveredTurns,
    Feedback,
    MemoryRecord,
    Named,
    Page,
    PurgeEntry,
    RecordFilter,
    Session,
    SessionCreation,
    Turn,
    TurnWrite,
    UserState,
    caller_of,
    message_key,
    needs_handoff,
    visible_to,
)
from chatmemory.errors import BadRequest, Conflict, SessionNotFound, TurnNotFound
from chatmemory.schema import (
    PROFILE_NAMESPACE,
    VISIBLE_STATUSES,
    HandoffState,
    PurgeState,
    RecordStatus,
    SessionStatus,
    TurnOrigin,
)
from tests.contract.reads import ReadMeter

_SWEPT = (SessionStatus.OPEN, SessionStatus.ENDED, SessionStatus.IMPORTING, SessionStatus.DELETING)


def _handoff_allows(session: Session, handed_off: bool | None) -> bool:
    """The adapter's hand-off condition of a turn's write (domain.needs_handoff)."""
    return handed_off is None or bool(session.handoff_state) == handed_off


def _clear_handoff(session: Session) -> None:
    """What a hand-back, an end or a delete removes (handoff_turn stays)."""
    session.handoff_state = session.handoff_reason = None
    session.handoff_at = session.handoff_agent = session.handoff_note = None


def _session_page(
    sessions: list[Session],
    partition: str,
    sort_key: str,
    limit: int,
    next_token: str | None,
    *,
    newest_first: bool,
) -> Page[Session]:
    """A page of `sessions` in the order of an index on (`sort_key`, session_id) under
    `partition`, as DynamoDB pages a query: copies, and a token of the last one when more
    follow (a token of another partition is refused)."""

    def key(session: Session) -> tuple[str, str]:
        return (getattr(session, sort_key) or "", session.session_id)

    ordered = sorted(sessions, key=key, reverse=newest_first)
    if next_token:
        start = _untoken(next_token, partition)
        after = (start[sort_key], start["session_id"])
        ordered = [s for s in ordered if (key(s) < after if newest_first else key(s) > after)]
    items = [copy.deepcopy(s) for s in ordered[:limit]]
    if len(ordered) <= limit or not items:
        return Page(items, None)
    last = items[-1]
    return Page(
        items,
        _token({"owner": partition, sort_key: key(last)[0], "session_id": last.session_id}),
    )


@dataclass
class _Row:
    """A session item: the session and what only the table knows (the sparse index keys)."""

    session: Session
    sweep_bucket: str | None = None  # idle_bucket while the session is in a swept status
    purge_round: int = 0
    # The consolidation started again by the sweeper: when, and how often (the stream record a
    # real table would carry is counted by `retries`).
    retried_at: str = ""
    retries: int = 0


@dataclass
class _UserRow:
    user: UserState
    purge_pending: bool = False


def _token(key: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, sort_keys=True).encode()).decode()


def _untoken(token: str, owner: str) -> dict[str, Any]:
    try:
        key = json.loads(base64.urlsafe_b64decode(token.encode()))
    except ValueError as error:
        raise BadRequest("next_token is not valid") from error
    if not isinstance(key, dict) or key.get("owner") != owner:
        raise BadRequest("next_token is not valid")
    return key


@dataclass
class InMemoryShortTermMemory:
    """SessionStore + TurnStore in dictionaries, safe across threads."""

    _sessions: dict[str, _Row] = field(default_factory=dict)
    _turns: dict[str, dict[int, Turn]] = field(default_factory=dict)
    _users: dict[str, _UserRow] = field(default_factory=dict)
    _records: dict[tuple[str, str], MemoryRecord] = field(default_factory=dict)
    # (owner, statement key) -> the record holding it (ports.RecordStore.statement_holder).
    _statements: dict[tuple[str, str], str] = field(default_factory=dict)
    # schema.alias_key(caller, client id) -> session id, as the alias items of the sessions table.
    _aliases: dict[str, str] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    # Records expire by this clock, as in DynamoShortTermMemory.
    clock: Callable[[], datetime] = utc_now
    # The records it hands out, counted as the DynamoDB adapter's reads would be (one item a
    # record, its text's size; tests/contract/reads.py).
    meter: ReadMeter = field(default_factory=ReadMeter)

    # --- users ------------------------------------------------------------------------------

    def get_user(self, user_id: str) -> UserState:
        with self._lock:
            row = self._users.get(user_id)
            return copy.deepcopy(row.user) if row else UserState(user_id)

    def forget_user(self, user: UserState, at: str) -> UserState:
        with self._lock:
            current = self._users.get(user.user_id)
            if (current.user.generation if current else 0) != user.generation:
                raise Conflict("another request forgot this user's memory meanwhile")
            state = copy.deepcopy(current.user) if current else UserState(user.user_id)
            state.purges.append(PurgeEntry(state.owner, at, PurgeState.PENDING))
            state.generation += 1
            state.purge_round += 1
            self._users[user.user_id] = _UserRow(state, purge_pending=True)
            return copy.deepcopy(state)

    def pending_user_purges(self) -> list[str]:
        with self._lock:
            return [uid for uid, row in self._users.items() if row.purge_pending]

    def save_purges(self, user: UserState, purges: Sequence[PurgeEntry], *, handover: bool) -> bool:
        with self._lock:
            row = self._users.get(user.user_id)
            if row is None or row.user.purge_round != user.purge_round:
                return False
            row.user.purges = [copy.copy(p) for p in purges]
            row.user.purge_round += 1
            row.purge_pending = any(p.state == PurgeState.PENDING for p in purges)
            return True

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, session: Session, creation: SessionCreation) -> None:
        user, end, alias = creation.user, creation.end, creation.alias
        with self._lock:
            current = self._users.get(user.user_id)
            generation = current.user.generation if current else 0
            ends = [self._sessions.get(sid) for sid in end]
            alias_key = schema.alias_key(alias.caller, alias.client_id) if alias else None
            previous = session.continued_from
            continued = self._sessions.get(previous) if previous and previous not in end else None
            if (
                session.session_id in self._sessions
                or (
                    previous is not None
                    and previous not in end
                    and (continued is None or continued.session.status == SessionStatus.DELETING)
                )
                or generation != user.generation
                or any(r is None or r.session.status != SessionStatus.OPEN for r in ends)
                or (alias is not None and self._aliases.get(alias_key) != alias.replaces)
            ):
                raise Conflict("the caller's sessions changed while this one was created; retry")
            self._sessions[session.session_id] = self._row(copy.deepcopy(session))
            for row in ends:
                assert row is not None
                self._end(row, creation.ended_at)
            if alias_key is not None:
                self._aliases[alias_key] = session.session_id

    def get_alias(self, caller: str, client_id: str) -> str | None:
        with self._lock:
            return self._aliases.get(schema.alias_key(caller, client_id))

    def drop_alias(self, caller: str, client_id: str, session_id: str) -> None:
        with self._lock:
            key = schema.alias_key(caller, client_id)
            if self._aliases.get(key) == session_id:
                del self._aliases[key]

    def get_session(self, session_id: str, *, consistent: bool = True) -> Session | None:
        with self._lock:
            row = self._sessions.get(session_id)
            return copy.deepcopy(row.session) if row else None

    def get_owned(self, session_id: str, user_id: str) -> tuple[Session | None, UserState]:
        with self._lock:
            return self.get_session(session_id), self.get_user(user_id)

    def get_named(self, name: str, user_id: str) -> Named:
        with self._lock:
            session, user = self.get_owned(name, user_id)
            return Named(self.get_alias(user_id, name), session, user)

    def live_sessions(self, owner: str, session_ids: Sequence[str]) -> set[str]:
        with self._lock:
            return {
                sid
                for sid in session_ids
                if (row := self._sessions.get(sid)) is not None
                and visible_to(owner, row.session.user_id, row.session.status)
            }

    def list_sessions(self, owner: str, limit: int, next_token: str | None) -> Page[Session]:
        page = self.sessions_of_owner(owner, limit, next_token)
        with self._lock:
            visible = [
                copy.deepcopy(row.session)
                for s in page.items
                if (row := self._sessions.get(s.session_id)) is not None
                and visible_to(owner, row.session.user_id, row.session.status)
            ]
        return Page(visible, page.next_token)

    def sessions_of_owner(self, owner: str, limit: int, next_token: str | None) -> Page[Session]:
        with self._lock:
            owned = [r.session for r in self._sessions.values() if r.session.user_id == owner]
            return _session_page(owned, owner, "started_at", limit, next_token, newest_first=True)

    def open_sessions_of(self, owner: str) -> list[Session]:
        with self._lock:
            return [
                copy.deepcopy(r.session)
                for r in self._sessions.values()
                if r.session.user_id == owner and r.session.status == SessionStatus.OPEN
            ]

    def end_session(
        self, session_id: str, ended_at: str, *, idle_before: str | None = None
    ) -> Session:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is None or row.session.status not in VISIBLE_STATUSES:
                raise SessionNotFound(f"session {session_id} not found")
            idle = idle_before is None or (
                row.session.last_active_at < idle_before and not row.session.handoff_state
            )
            if row.session.status != SessionStatus.OPEN or not idle:
                raise Conflict(f"session {session_id} is not open")
            self._end(row, ended_at)
            return copy.deepcopy(row.session)

    def stale_sessions(self, state: str, shard: int, before: str, limit: int) -> list[str]:
        return self.stale_page(state, shard, before, limit, None).items

    def _swept(self, state: str, shard: int) -> list[tuple[str, str]]:
        """(bucket, session id) of the sessions in `state` of one shard, in index order."""
        return sorted(
            (row.sweep_bucket, sid)
            for sid, row in self._sessions.items()
            if row.session.status == state
            and row.sweep_bucket is not None
            and schema.sweep_shard_of(sid, state) == schema.sweep_shard(state, shard)
        )

    def stale_page(
        self, state: str, shard: int, before: str, limit: int, next_token: str | None
    ) -> Page[str]:
        with self._lock:
            bucket = schema.idle_bucket(before)
            after = tuple(json.loads(next_token)) if next_token else None
            stale = [e for e in self._swept(state, shard) if e[0] < bucket]
            if after is not None:
                stale = [e for e in stale if e > after]
            page = stale[:limit]
            more = len(stale) > limit
            return Page([sid for _, sid in page], json.dumps(page[-1]) if more else None)

    def oldest_stale(self, state: str, shard: int) -> str | None:
        with self._lock:
            swept = self._swept(state, shard)
            return swept[0][0] if swept else None

    def retry_consolidation(
        self, session_ids: Sequence[str], *, at: str, before: str, limit: int
    ) -> list[str]:
        with self._lock:
            retried = []
            for sid in dict.fromkeys(session_ids):
                row = self._sessions.get(sid)
                if len(retried) == limit or row is None:
                    continue
                if row.session.status == SessionStatus.ENDED and row.retried_at < before:
                    row.retried_at, row.retries = at, row.retries + 1
                    retried.append(sid)
            return retried

    def record_consolidation_failure(self, session_id: str, reason: str) -> int | None:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is None or row.session.status not in (
                SessionStatus.ENDED,
                SessionStatus.FAILED,
            ):
                return None
            row.session.failure_reason = reason
            row.session.consolidation_attempts += 1
            return row.session.consolidation_attempts

    def mark_failed(self, session_id: str, reason: str) -> None:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is not None and row.session.status == SessionStatus.ENDED:
                row.session.status = SessionStatus.FAILED
                row.session.failure_reason = reason
                row.sweep_bucket = None

    def mark_consolidated(self, session_id: str, summary: str, at: str) -> bool:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is None or row.session.status not in (
                SessionStatus.ENDED,
                SessionStatus.FAILED,
            ):
                return False
            row.session.status = SessionStatus.CONSOLIDATED
            row.session.summary = summary
            row.session.consolidated_at = at
            row.sweep_bucket, row.retried_at = None, ""
            row.session.consolidation_attempts = 0
            row.session.consolidation_summary = None
            row.session.consolidation_cursor = row.session.consolidation_round = 0
            return True

    def checkpoint_consolidation(
        self, session_id: str, *, expected_round: int, cursor: int, summary: str
    ) -> bool:
        with self._lock:
            row = self._sessions.get(session_id)
            if (
                row is None
                or row.session.status not in (SessionStatus.ENDED, SessionStatus.FAILED)
                or row.session.consolidation_round != expected_round
            ):
                return False
            row.session.consolidation_summary = summary
            row.session.consolidation_cursor = cursor
            row.session.consolidation_round = expected_round + 1
            return True

    def failed_sessions(self) -> list[str]:
        with self._lock:
            return [
                sid for sid, r in self._sessions.items() if r.session.status == SessionStatus.FAILED
            ]

    def reset_consolidation(self, session_id: str) -> None:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is not None and row.session.status == SessionStatus.FAILED:
                row.session.consolidation_attempts = 0

    def forget_summary(self, session_id: str) -> None:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is not None and row.session.status != SessionStatus.DELETING:
                row.session.summary_forgotten = True

    def forget_facts(self, session_id: str, keys: Sequence[str]) -> None:
        with self._lock:
            row = self._sessions.get(session_id)
            if keys and row is not None and row.session.status != SessionStatus.DELETING:
                row.session.forgotten_facts = row.session.forgotten_facts | set(keys)

    def update_running_summary(
        self, session_id: str, summary: str, through_turn: int, expected_through: int
    ) -> bool:
        with self._lock:
            row = self._sessions.get(session_id)
            if (
                row is None
                or row.session.status not in (SessionStatus.OPEN, SessionStatus.ENDED)
                or row.session.summary_through_turn != expected_through
            ):
                return False
            row.session.running_summary = summary
            row.session.summary_through_turn = through_turn
            return True

    def mark_deleting(self, session_id: str, at: str) -> bool:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is None or row.session.status == SessionStatus.DELETING:
                return False
            row.session.status = SessionStatus.DELETING
            row.session.version += 1
            row.sweep_bucket = schema.idle_bucket(at)
            _clear_handoff(row.session)
            return True

    def continue_purge(self, session_id: str, at: str) -> None:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is not None and row.session.status == SessionStatus.DELETING:
                row.sweep_bucket = schema.idle_bucket(at)
                row.purge_round += 1

    def remove_session(self, session_id: str) -> None:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is not None and row.session.status == SessionStatus.DELETING:
                del self._sessions[session_id]

    def finish_import(self, session_id: str, last_active_at: str) -> None:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is None or row.session.status != SessionStatus.IMPORTING:
                raise Conflict("the import was abandoned meanwhile; import again")
            row.session.status = SessionStatus.OPEN
            row.session.last_active_at = last_active_at
            row.sweep_bucket = schema.idle_bucket(last_active_at)

    # --- turns ------------------------------------------------------------------------------

    def recent_turns(self, session_id: str, count: int) -> list[Turn]:
        if count <= 0:
            return []
        return self._ordered(session_id)[-count:]

    def get_turn(self, session_id: str, turn: int) -> Turn | None:
        with self._lock:
            found = self._turns.get(session_id, {}).get(turn)
            return copy.deepcopy(found) if found else None

    def list_turns(
        self, session_id: str, limit: int, next_token: str | None, ascending: bool
    ) -> Page[Turn]:
        ordered = self._ordered(session_id)
        if not ascending:
            ordered.reverse()
        if next_token:
            after = int(_untoken(next_token, session_id)["turn"])
            ordered = [t for t in ordered if (t.turn > after if ascending else t.turn < after)]
        items = ordered[:limit]
        token = None
        if len(ordered) > limit and items:
            token = _token({"owner": session_id, "turn": items[-1].turn})
        return Page(items, token)

    def all_turns(self, session_id: str) -> Iterator[Turn]:
        yield from self._ordered(session_id)

    def turns_between(self, session_id: str, after: int, through: int) -> list[Turn]:
        return [t for t in self._ordered(session_id) if after < t.turn <= through]

    def append_turn(self, session: Session, turn: Turn, write: TurnWrite) -> Session:
        at = write.at or turn.created_at
        number = session.num_turns + 1
        turn.turn = number
        with self._lock:
            row = self._sessions.get(session.session_id)
            failed_answer = turn.pending and turn.origin == TurnOrigin.CHAT and not write.stack
            allowed = VISIBLE_STATUSES if failed_answer else (SessionStatus.OPEN,)
            turns = self._turns.setdefault(session.session_id, {})
            if (
                row is None
                or row.session.num_turns != session.num_turns
                or row.session.status not in allowed
                or number in turns
                or not _handoff_allows(row.session, needs_handoff(turn))
            ):
                raise Conflict("the session changed while the turn was written")
            stored = row.session
            stored.num_turns = number
            stored.last_active_at = at
            stored.version += 1
            if turn.client_message_id:
                stored.recent_messages[message_key(turn.client_message_id)] = number
                oldest = sorted(stored.recent_messages, key=stored.recent_messages.__getitem__)
                for key in oldest[: max(0, len(oldest) - write.keep_message_ids)]:
                    del stored.recent_messages[key]
            if stored.status == SessionStatus.OPEN and not stored.handoff_state:
                row.sweep_bucket = schema.idle_bucket(at)
            if write.handoff is not None:
                write.handoff.apply(stored, number)
                write.handoff.apply(session, number)
                if write.handoff.reason is not None:
                    row.sweep_bucket = None  # out of the sweeper's index
            if write.rename:
                stored.name, stored.auto_named, stored.titled = write.rename, False, True
                session.name, session.auto_named, session.titled = write.rename, False, True
            if write.stack:
                stored.stack_head = session.stack_head = number
            turns[number] = copy.deepcopy(turn)
            session.num_turns = number
            session.last_active_at = at
            session.version = stored.version
            session.recent_messages = dict(stored.recent_messages)
            return session

    def complete_turn(self, turn: Turn) -> None:
        with self._lock:
            stored = self._turns.get(turn.session_id, {}).get(turn.turn)
            if stored is None or not stored.pending or stored.answered_by is not None:
                raise Conflict("the turn was completed by another request")
            done = copy.deepcopy(turn)
            done.pending = False
            self._turns[turn.session_id][turn.turn] = done

    def claim_answer(self, session_id: str, turn: int, *, until: str, now: str) -> bool:
        with self._lock:
            stored = self._turns.get(session_id, {}).get(turn)
            if stored is None or not stored.pending or stored.answered_by is not None:
                return False
            if stored.answering_until is not None and stored.answering_until >= now:
                return False
            stored.answering_until = until
            return True

    def release_answer(self, session_id: str, turn: int, *, until: str) -> None:
        with self._lock:
            stored = self._turns.get(session_id, {}).get(turn)
            if stored is not None and stored.answering_until == until:
                stored.answering_until = None

    def complete_stack(
        self, answer: Turn, covered: CoveredTurns, rename: str | None = None
    ) -> None:
        with self._lock:
            row = self._sessions.get(answer.session_id)
            turns = self._turns.get(answer.session_id, {})
            waiting = [turns.get(n) for n in (answer.turn, *covered.turns)]
            if (
                row is None
                or row.session.status != SessionStatus.OPEN
                or (covered.head is not None and row.session.stack_head != covered.head)
                or row.session.handoff_state is not None
                or (rename and not row.session.auto_named)
                or any(t is None or not t.pending or t.answered_by is not None for t in waiting)
            ):
                raise Conflict("the stacked messages changed while they were answered")
            done = copy.deepcopy(answer)
            done.pending = False
            turns[answer.turn] = done
            for number in covered.turns:
                turns[number].pending = False
                turns[number].answered_by = answer.turn
            if rename:
                row.session.name, row.session.auto_named = rename, False
                row.session.titled = True

    def update_turn(self, session_id: str, turn: int, values: dict[str, Any]) -> None:
        with self._lock:
            stored = self._turns.get(session_id, {}).get(turn)
            if stored is None:
                raise TurnNotFound(f"turn {turn} of session {session_id} not found")
            for name, value in copy.deepcopy(values).items():
                if name == "feedback" and value is not None:
                    value = Feedback(**value)
                setattr(stored, name, value)

    def put_turns(self, turns: Sequence[Turn]) -> None:
        with self._lock:
            for turn in turns:
                self._turns.setdefault(turn.session_id, {})[turn.turn] = copy.deepcopy(turn)

    def delete_turns(self, session_id: str, limit: int) -> int:
        with self._lock:
            stored = self._turns.get(session_id, {})
            doomed = sorted(stored)[:limit]
            for number in doomed:
                del stored[number]
            return len(doomed)

    # --- hand-off to a person ---------------------------------------------------------------

    def hand_off(
        self, session_id: str, *, reason: str, at: str, note: str | None = None
    ) -> Session | None:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is None or row.session.status != SessionStatus.OPEN:
                return None
            if row.session.handoff_state:
                return None
            stored = row.session
            stored.handoff_state, stored.handoff_reason = HandoffState.WAITING, reason
            stored.handoff_at, stored.handoff_agent = at, None
            stored.handoff_turn, stored.handoff_note = stored.num_turns, note or None
            row.sweep_bucket = None
            return copy.deepcopy(stored)

    def hand_back(self, session_id: str, *, at: str) -> Session | None:
        with self._lock:
            row = self._sessions.get(session_id)
            if row is None or row.session.status != SessionStatus.OPEN:
                return None
            if not row.session.handoff_state:
                return None
            _clear_handoff(row.session)
            row.session.last_active_at = at
            row.sweep_bucket = schema.idle_bucket(at)
            return copy.deepcopy(row.session)

    def handoff_queue(self, state: str, limit: int, next_token: str | None) -> Page[Session]:
        with self._lock:
            queued = [
                r.session
                for r in self._sessions.values()
                if r.session.handoff_state == state
                and r.session.status == SessionStatus.OPEN
                and r.session.user_id == self.get_user(caller_of(r.session.user_id)).owner
            ]
            return _session_page(queued, state, "handoff_at", limit, next_token, newest_first=False)

    def mark_for_agent(self, session_id: str, turns: Sequence[int]) -> None:
        with self._lock:
            row = self._sessions.get(session_id)
            stored = self._turns.get(session_id, {})
            waiting = [stored.get(n) for n in dict.fromkeys(turns)]
            if (
                row is None
                or not row.session.handoff_state
                or any(t is None or not t.pending or t.answered_by is not None for t in waiting)
            ):
                raise Conflict("the messages or the hand-off changed meanwhile")
            for turn in waiting:
                assert turn is not None
                turn.pending, turn.for_agent = False, True

    # --- records ----------------------------------------------------------------------------

    def put_record(self, record: MemoryRecord) -> bool:
        with self._lock:
            key = (record.user_id, record.record_id)
            if key in self._records:
                return False
            self._records[key] = copy.deepcopy(record)
            return True

    def statement_holder(self, owner: str, statement: str) -> str | None:
        with self._lock:
            return self._statements.get((owner, statement))

    def put_stated_record(
        self, record: MemoryRecord, *, statement: str, holder: str | None
    ) -> bool:
        with self._lock:
            key = (record.user_id, record.record_id)
            claim = (record.user_id, statement)
            if key in self._records or self._statements.get(claim) != holder:
                return False
            self._records[key] = copy.deepcopy(record)
            self._statements[claim] = record.record_id
            return True

    def get_record(self, owner: str, record_id: str) -> MemoryRecord | None:
        with self._lock:
            found = self._records.get((owner, record_id))
            self._read(found)
            if found is None or found.expired(self.clock()):
                return None
            return copy.deepcopy(found)

    def expired_record(self, owner: str, record_id: str) -> MemoryRecord | None:
        with self._lock:
            found = self._records.get((owner, record_id))
            self._read(found)
            if found is None or not found.expired(self.clock()):
                return None
            return copy.deepcopy(found)

    def _read(self, *records: MemoryRecord | None) -> None:
        for record in records:
            if record is not None:
                self.meter.record(
                    "records", 1, 100 + len(record.text), [(record.user_id, record.record_id)]
                )

    def remove_expired_record(self, owner: str, record_id: str, version: int) -> bool:
        with self._lock:
            current = self._records.get((owner, record_id))
            if current is None or current.version != version or not current.expired(self.clock()):
                return False
            del self._records[(owner, record_id)]
            return True

    def list_records(
        self, owner: str, which: RecordFilter, limit: int, next_token: str | None
    ) -> Page[MemoryRecord]:
        record_type, namespace_prefix = which
        with self._lock:
            ordered = sorted(
                (r for (o, _), r in self._records.items() if o == owner),
                key=lambda r: r.record_id,
                reverse=True,
            )
        if next_token:
            after = _untoken(next_token, owner)["record_id"]
            ordered = [r for r in ordered if r.record_id < after]
        window = ordered[:limit]
        self._read(*window)
        now = self.clock()
        items = [
            copy.deepcopy(r)
            for r in window
            if r.status != RecordStatus.DELETING
            and not r.expired(now)
            and (not record_type or r.type == record_type)
            and (
                namespace_prefix is None
                or (r.namespace or PROFILE_NAMESPACE)[: len(namespace_prefix)]
                == tuple(namespace_prefix)
            )
        ]
        token = None
        if len(ordered) > limit and window:
            token = _token({"owner": owner, "record_id": window[-1].record_id})
        return Page(items, token)

    def records_of_owner(
        self, owner: str, *, include_expired: bool = False
    ) -> Iterator[MemoryRecord]:
        with self._lock:
            now = self.clock()
            self._read(*(r for (o, _), r in self._records.items() if o == owner))
            found = [
                copy.deepcopy(r)
                for (o, _), r in self._records.items()
                if o == owner and (include_expired or not r.expired(now))
            ]
        yield from found

    def profile_records(self, owner: str, limit: int) -> list[MemoryRecord]:
        with self._lock:
            ranked = sorted(
                (r for (o, _), r in self._records.items() if o == owner and r.in_profile),
                key=lambda r: r.profile_rank,
            )
            return [copy.deepcopy(r) for r in ranked[:limit]]

    def record_keys(self, owner: str) -> list[tuple[str, tuple[str, ...]]]:
        with self._lock:
            now = self.clock()
            found = [
                (r.record_id, r.namespace)
                for (o, _), r in sorted(self._records.items())
                if o == owner and r.status != RecordStatus.DELETING and not r.expired(now)
            ]
        self.meter.record("records", len(found), 64 * len(found), [(owner, r) for r, _ in found])
        return found

    def save_record(self, record: MemoryRecord) -> bool:
        with self._lock:
            current = self._records.get((record.user_id, record.record_id))
            if (
                current is None
                or current.version != record.version
                or current.status == RecordStatus.DELETING
            ):
                return False
            record.version += 1
            self._records[(record.user_id, record.record_id)] = copy.deepcopy(record)
            return True

    def mark_record_deleting(self, owner: str, record_id: str) -> bool:
        with self._lock:
            current = self._records.get((owner, record_id))
            if current is None or current.status == RecordStatus.DELETING:
                return False
            current.status = RecordStatus.DELETING
            current.version += 1
            return True

    def remove_records(self, owner: str, record_ids: Sequence[str]) -> None:
        with self._lock:
            for record_id in record_ids:
                self._records.pop((owner, record_id), None)

    def remove_deleted_record(self, owner: str, record_id: str) -> bool:
        with self._lock:
            current = self._records.get((owner, record_id))
            if current is None or current.status != RecordStatus.DELETING:
                return False
            del self._records[(owner, record_id)]
            return True

    def live(
        self, owner: str, session_ids: Sequence[str], record_ids: Sequence[str]
    ) -> tuple[set[str], dict[str, str]]:
        with self._lock:
            self._read(*(self._records.get((owner, rid)) for rid in dict.fromkeys(record_ids)))
            records = {
                rid: r.generation
                for rid in record_ids
                if (r := self._records.get((owner, rid))) is not None
                and r.status != RecordStatus.DELETING
                and not r.expired(self.clock())
            }
        return self.live_sessions(owner, session_ids), records

    # --- helpers ----------------------------------------------------------------------------

    def _row(self, session: Session) -> _Row:
        since = session.ended_at if session.status == SessionStatus.ENDED else ""
        swept = session.status in _SWEPT
        bucket = schema.idle_bucket(since or session.last_active_at) if swept else None
        return _Row(session, bucket)

    def _end(self, row: _Row, ended_at: str) -> None:
        row.session.status = SessionStatus.ENDED
        row.session.ended_at = ended_at
        row.session.version += 1
        row.sweep_bucket = schema.idle_bucket(ended_at)  # found again until consolidated
        _clear_handoff(row.session)

    def _ordered(self, session_id: str) -> list[Turn]:
        with self._lock:
            stored = self._turns.get(session_id, {})
            return [copy.deepcopy(stored[n]) for n in sorted(stored)]
