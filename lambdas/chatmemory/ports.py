"""Ports: the interfaces services depend on. Adapters implement them; tests pass fakes. The
stores of short-term memory are small Protocols, one a table's aggregate (users, sessions,
turns, records, hand-off, checkpoints); a service takes the ones it uses, and ShortTermMemory
is their composition, which the DynamoDB adapter and the in-memory fake implement. The
long-term index's port is in index_port.py, the models' and the other outward ports in
model_ports.py (both re-exported here)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from chatmemory.domain import (
    Blob,
    ChannelBlob,
    CheckpointEntry,
    CheckpointRange,
    CheckpointRef,
    CoveredTurns,
    MemoryRecord,
    Named,
    Page,
    PendingWrite,
    PurgeEntry,
    RecordFilter,
    Session,
    SessionCreation,
    StoredCheckpoint,
    Turn,
    TurnWrite,
    UserState,
)
from chatmemory.index_port import Candidate as Candidate
from chatmemory.index_port import LongTermIndex as LongTermIndex
from chatmemory.index_port import MemoryDoc as MemoryDoc
from chatmemory.index_port import Search as Search
from chatmemory.model_ports import (
    CONTENT_FILTER as CONTENT_FILTER,
)
from chatmemory.model_ports import (
    END as END,
)
from chatmemory.model_ports import (
    HINTS as HINTS,
)
from chatmemory.model_ports import (
    LENGTH as LENGTH,
)
from chatmemory.model_ports import (
    STOP_SEQUENCE as STOP_SEQUENCE,
)
from chatmemory.model_ports import (
    Clock as Clock,
)
from chatmemory.model_ports import (
    Embedder as Embedder,
)
from chatmemory.model_ports import (
    EventPublisher as EventPublisher,
)
from chatmemory.model_ports import (
    ExtractedFact as ExtractedFact,
)
from chatmemory.model_ports import (
    Extractor as Extractor,
)
from chatmemory.model_ports import (
    Finish as Finish,
)
from chatmemory.model_ports import (
    Generation as Generation,
)
from chatmemory.model_ports import (
    GenerationOptions as GenerationOptions,
)
from chatmemory.model_ports import (
    PeopleExtractor as PeopleExtractor,
)
from chatmemory.model_ports import (
    Piece as Piece,
)
from chatmemory.model_ports import (
    QueryEmbedder as QueryEmbedder,
)
from chatmemory.model_ports import (
    SentimentAnalyzer as SentimentAnalyzer,
)
from chatmemory.model_ports import (
    Summarizer as Summarizer,
)
from chatmemory.model_ports import (
    TextGenerator as TextGenerator,
)
from chatmemory.model_ports import (
    VectorCache as VectorCache,
)
from chatmemory.model_ports import (
    collect as collect,
)
from chatmemory.model_ports import (
    embed_queries as embed_queries,
)
from chatmemory.model_ports import (
    whole as whole,
)


class UserStore(Protocol):
    """The caller's state: the generation a forget bumps, and the purges it queues."""

    def get_user(self, user_id: str) -> UserState:
        """The caller's state (generation 0 and no purges for a caller never seen)."""
        ...

    def forget_user(self, user: UserState, at: str) -> UserState:
        """Bump the caller's generation (conditional on `user.generation`) and queue the old
        namespace for purging. Raises Conflict if another forget won the race."""
        ...

    def pending_user_purges(self) -> list[str]:
        """Callers whose forget is not fully purged yet (an operator's scan)."""
        ...

    def save_purges(self, user: UserState, purges: Sequence[PurgeEntry], *, handover: bool) -> bool:
        """Replace the purge entries (conditional on `user.purge_round`); with `handover`, bump
        the round so the stream starts a next invocation. False if the item changed meanwhile."""
        ...


class SessionStore(Protocol):
    def create_session(self, session: Session, creation: SessionCreation) -> None:
        """Put a new session, in one transaction with a check that the caller's memory is
        still at `creation.user.generation` (a forget meanwhile fails it) and with ending the
        OPEN sessions `creation.end`; with an alias, the caller's client id is made to name it
        (conditional on the alias being unwritten, or still naming `alias.replaces`).
        Raises Conflict when a condition fails: nothing is written then, except the ends a
        store whose transactions are bounded (DynamoDB: 100 actions) wrote one by one before
        it, those beyond what its transaction holds."""
        ...

    def get_alias(self, caller: str, client_id: str) -> str | None:
        """The session id a caller's client id names (consistent read), None if it names none."""
        ...

    def drop_alias(self, caller: str, client_id: str, session_id: str) -> None:
        """Delete the caller's alias if it still names `session_id` (a purge's last step)."""
        ...

    def get_session(self, session_id: str, *, consistent: bool = True) -> Session | None:
        """The session item whatever its status (services decide what a caller may see)."""
        ...

    def get_owned(self, session_id: str, user_id: str) -> tuple[Session | None, UserState]:
        """The session item and the caller's state, read together in one request."""
        ...

    def get_named(self, name: str, user_id: str) -> Named:
        """In one request (consistent reads): the alias of the caller's client id `name`, the
        session item whose server id is `name`, and the caller's state."""
        ...

    def live_sessions(self, owner: str, session_ids: Sequence[str]) -> set[str]:
        """Which of `session_ids` exist, belong to `owner` and are visible (consistent read):
        long-term memory is checked against this before anything of it is returned."""
        ...

    def list_sessions(self, owner: str, limit: int, next_token: str | None) -> Page:
        """The owner's visible sessions, newest first (a page may hold fewer than `limit`)."""
        ...

    def sessions_of_owner(self, owner: str, limit: int, next_token: str | None) -> Page:
        """Every session item under `owner` whatever its status (for purges)."""
        ...

    def open_sessions_of(self, owner: str) -> list[Session]: ...

    def end_session(
        self, session_id: str, ended_at: str, *, idle_before: str | None = None
    ) -> Session:
        """OPEN -> ENDED (conditional). Raises SessionNotFound or Conflict if not OPEN (or,
        with idle_before, active since then)."""
        ...

    def stale_sessions(self, state: str, shard: int, before: str, limit: int) -> list[str]:
        """Sessions in `state` (OPEN, ENDED, IMPORTING, DELETING) of one shard of the sparse
        index whose activity bucket (an ENDED session's: when it ended) lies wholly before
        `before`."""
        ...

    def stale_page(
        self, state: str, shard: int, before: str, limit: int, next_token: str | None
    ) -> Page[str]:
        """A page of stale_sessions, oldest first, and the token of the next one."""
        ...

    def oldest_stale(self, state: str, shard: int) -> str | None:
        """The activity bucket of the oldest session in `state` of one shard, or None."""
        ...

    def retry_consolidation(
        self, session_ids: Sequence[str], *, at: str, before: str, limit: int
    ) -> list[str]:
        """Start again (a write the consolidation stream mapping takes) the consolidation of
        those of these sessions still ENDED and not started again since `before`, at most
        `limit`, in the order given; returns them."""
        ...

    def record_consolidation_failure(self, session_id: str, reason: str) -> int | None:
        """Count a failed consolidation attempt; the attempts so far (None: no such session)."""
        ...

    def mark_failed(self, session_id: str, reason: str) -> None: ...

    def mark_consolidated(self, session_id: str, summary: str, at: str) -> bool:
        """ENDED/FAILED -> CONSOLIDATED (and its checkpoint cleared); False when the session is
        in no such state (deleted, or consolidated by a concurrent run)."""
        ...

    def checkpoint_consolidation(
        self, session_id: str, *, expected_round: int, cursor: int, summary: str
    ) -> bool:
        """Record a consolidation's progress and hand it over (the write is the stream record
        that starts the next invocation), conditional on the session still being ENDED or
        FAILED at `expected_round`. False if not (deleted, consolidated, or another run
        checkpointed first)."""
        ...

    def failed_sessions(self) -> list[str]: ...

    def reset_consolidation(self, session_id: str) -> None: ...

    def forget_summary(self, session_id: str) -> None:
        """Mark for good that the caller deleted the session's summary record (nothing if the
        session is gone or being deleted)."""
        ...

    def forget_facts(self, session_id: str, keys: Sequence[str]) -> None:
        """Add `keys` (profile.fact_key) to the session's forgotten facts, for good (nothing if
        the session is gone or being deleted)."""
        ...

    def update_running_summary(
        self, session_id: str, summary: str, through_turn: int, expected_through: int
    ) -> bool: ...

    def mark_deleting(self, session_id: str, at: str) -> bool:
        """The session's tombstone: status DELETING in one conditional write. From then on no
        reader sees it and no turn can be written to it. False if missing or already DELETING."""
        ...

    def continue_purge(self, session_id: str, at: str) -> None:
        """Touch a DELETING session so its stream hands the purge to a next invocation."""
        ...

    def remove_session(self, session_id: str) -> None:
        """Delete the item of a DELETING session (the purge's last step)."""
        ...

    def finish_import(self, session_id: str, last_active_at: str) -> None:
        """IMPORTING -> OPEN (conditional): the imported session becomes visible."""
        ...


class TurnStore(Protocol):
    def recent_turns(self, session_id: str, count: int) -> list[Turn]:
        """The last `count` turns, oldest first: one Query, however long the session."""
        ...

    def get_turn(self, session_id: str, turn: int) -> Turn | None: ...

    def list_turns(
        self, session_id: str, limit: int, next_token: str | None, ascending: bool
    ) -> Page: ...

    def all_turns(self, session_id: str) -> Iterator[Turn]:
        """Every turn, oldest first, paginated underneath."""
        ...

    def turns_between(self, session_id: str, after: int, through: int) -> list[Turn]: ...

    def append_turn(self, session: Session, turn: Turn, write: TurnWrite) -> Session:
        """Write `turn` as number num_turns + 1 together with the session counters and what
        `write` changes (its name, its stack head, its hand-off state), atomically. The write
        is also conditional on the session's hand-off state as domain.needs_handoff says for
        the turn.

        Raises Conflict when the session changed since it was read (another turn won the race,
        or it is being deleted), SessionEnded when it is no longer OPEN. Returns the updated
        session.
        """
        ...

    def complete_turn(self, turn: Turn) -> None:
        """Fill in the response of a pending turn (conditional on it still being pending)."""
        ...

    def claim_answer(self, session_id: str, turn: int, *, until: str, now: str) -> bool:
        """Mark a pending turn as being answered until `until` (answering_until), conditional on
        it still waiting for its answer and on no other claim holding it at `now`. False when
        the condition fails (answered, or claimed by another request): nothing is written."""
        ...

    def release_answer(self, session_id: str, turn: int, *, until: str) -> None:
        """Give up the claim made `until` (its model call failed): the next retry may answer at
        once. Nothing when another claim holds the turn since."""
        ...

    def complete_stack(
        self, answer: Turn, covered: CoveredTurns, rename: str | None = None
    ) -> None:
        """In one transaction: fill in the response of the pending turn `answer`, mark the
        `covered` turns `answered_by` it, and, with `rename`, name the session. Conditional on
        every one of these turns still being pending and unanswered, on the session being OPEN
        and, unless `covered.head` is None, on its `stack_head` still being that head (no newer
        message arrived to be answered with them). Raises Conflict when a condition fails:
        nothing is written then."""
        ...

    def update_turn(self, session_id: str, turn: int, values: dict[str, Any]) -> None:
        """Set attributes of a stored turn (its metadata, its feedback); TurnNotFound if the
        turn is gone."""
        ...

    def put_turns(self, turns: Sequence[Turn]) -> None:
        """Write turns in batches (an import, into a session that is still IMPORTING)."""
        ...

    def delete_turns(self, session_id: str, limit: int) -> int:
        """Delete up to `limit` of the session's turns, oldest first; returns how many."""
        ...


class RecordStore(Protocol):
    """The caller's profile records, one partition per owner key."""

    def put_record(self, record: MemoryRecord) -> bool:
        """Write a new record; False if one with its id exists (an extraction retried)."""
        ...

    def get_record(self, owner: str, record_id: str) -> MemoryRecord | None: ...

    def statement_holder(self, owner: str, statement: str) -> str | None:
        """The id of the record that holds `statement` (a key of a stated text's type and
        words: profile.statement_key), as its claim says; None when it is unclaimed."""
        ...

    def put_stated_record(
        self, record: MemoryRecord, *, statement: str, holder: str | None
    ) -> bool:
        """Write a new stated record and the claim of its statement, conditional on the claim
        still naming `holder` (None: unclaimed), in one transaction. False, writing nothing,
        when another statement of the same words came first."""
        ...

    def list_records(
        self, owner: str, which: RecordFilter, limit: int, next_token: str | None
    ) -> Page[MemoryRecord]:
        """The owner's records that `which` keeps (active and superseded, not deleting), newest
        first. Like a DynamoDB Query, a page holds what `limit` items read kept: it may be
        short, even empty, with a next_token."""
        ...

    def records_of_owner(
        self, owner: str, *, include_expired: bool = False
    ) -> Iterator[MemoryRecord]:
        """Every record item of the owner, whatever its status (merges and purges); expired
        ones only with `include_expired` (purges, which must remove them too)."""
        ...

    def profile_records(self, owner: str, limit: int) -> list[MemoryRecord]:
        """The first `limit` records of the owner's profile (MemoryRecord.in_profile) in the
        profile block's order (codec.profile_rank: health first, then identity and people,
        preferences, the rest; newest first within each): one Query of a sparse index, read
        eventually (the caller checks liveness with `live`). Only what the block needs is
        read: id, text, type, category, dates and provenance."""
        ...

    def record_keys(self, owner: str) -> list[tuple[str, tuple[str, ...]]]:
        """The id and namespace of each of the owner's records that is not being deleted nor
        expired, read from an index of their keys and namespaces (a few dozen bytes a record,
        not its text). The index is eventually consistent: a record written a moment ago may
        be missing, one deleted a moment ago still there."""
        ...

    def save_record(self, record: MemoryRecord) -> bool:
        """Replace a record conditional on its `version` (then incremented) and on it not being
        deleted; False when it changed meanwhile."""
        ...

    def mark_record_deleting(self, owner: str, record_id: str) -> bool:
        """The record's tombstone (one conditional write); False if missing or deleting."""
        ...

    def remove_records(self, owner: str, record_ids: Sequence[str]) -> None:
        """Delete record items (the purge's last step)."""
        ...

    def remove_deleted_record(self, owner: str, record_id: str) -> bool:
        """Delete the record item if it is still the tombstone (one conditional write): a
        record created under the same id since is kept. False if it is not."""
        ...

    def expired_record(self, owner: str, record_id: str) -> MemoryRecord | None:
        """The record item if it has expired (MemoryRecord.expires_at) and is still stored:
        every other read treats it as gone."""
        ...

    def remove_expired_record(self, owner: str, record_id: str, version: int) -> bool:
        """Delete the record item if it is still that expired one (`version`): its key is free
        at once, before DynamoDB's TTL. False if it is not."""
        ...

    def live(
        self, owner: str, session_ids: Sequence[str], record_ids: Sequence[str]
    ) -> tuple[set[str], dict[str, str]]:
        """Which sessions and records exist for `owner` and are visible, in one strongly
        consistent read: whatever long-term memory returns is checked against this. Records
        come with their generation ("" for none), so an entry of an earlier record under the
        same id is told apart (MemoryDoc.of_live_record)."""
        ...


class HandoffStore(Protocol):
    """Sessions handed to a person (services/conversation/handoff.py): the state is on the session
    item, and the sparse index of schema.HANDOFF_SESSIONS_INDEX is the agents' queue."""

    def hand_off(
        self, session_id: str, *, reason: str, at: str, note: str | None = None
    ) -> Session | None:
        """OPEN and with the bot -> WAITING, in one conditional write that also takes the
        session out of the idle sweeper's index (a person may answer hours later) and records
        its turn count (handoff_turn), with the user's `note` (None: none). None when the
        condition fails (not open, already handed off, gone): nothing is written then."""
        ...

    def hand_back(self, session_id: str, *, at: str) -> Session | None:
        """Handed off (WAITING or ACTIVE) and OPEN -> with the bot, in one conditional write:
        the state is cleared (handoff_turn stays), the session is active `at` and back in the
        sweeper's index. None when the condition fails."""
        ...

    def handoff_queue(self, state: str, limit: int, next_token: str | None) -> Page[Session]:
        """OPEN sessions in hand-off `state`, longest waiting first (a page may hold fewer than
        `limit`: the index is checked against the table)."""
        ...

    def mark_for_agent(self, session_id: str, turns: Sequence[int]) -> None:
        """Messages written before a hand-off and not answered by the bot become the agent's
        (for_agent, no longer pending), in one transaction conditional on each still waiting
        and on the session still being handed off. Raises Conflict when a condition fails."""
        ...


class UserRecords(UserStore, RecordStore, Protocol):
    """The caller's records under the key their data lives under (services/access.owner_of)."""


class UserSessions(UserStore, SessionStore, Protocol):
    """The caller's sessions, and the state their ownership is checked against."""


class SessionTurns(SessionStore, TurnStore, Protocol):
    """A session and its turns (a turn is written atomically with its session)."""


class ShortTermMemory(UserStore, SessionStore, TurnStore, RecordStore, HandoffStore, Protocol):
    """The tables behind one adapter: a turn is written atomically with its session, and one
    read checks sessions and records together."""


class CheckpointStore(Protocol):
    """A LangGraph checkpointer's storage, one partition per session
    (services/conversation/checkpoints.py). Values of any size up to the service's limits: an
    adapter splits what one item cannot hold."""

    def put_checkpoint(self, checkpoint: StoredCheckpoint, blobs: Sequence[ChannelBlob]) -> None:
        """Store the channel values and then the checkpoint (replacing one of the same id).
        A (namespace, channel, version) stored already keeps its bytes: the same bytes again
        are a retry, other bytes a Conflict, and then nothing of this put is stored."""
        ...

    def get_checkpoint(
        self, session_id: str, checkpoint_ns: str, checkpoint_id: str | None
    ) -> StoredCheckpoint | None:
        """The checkpoint of that id in the namespace, or its newest one (None: the newest)."""
        ...

    def list_checkpoints(
        self, session_id: str, which: CheckpointRange, limit: int
    ) -> list[CheckpointEntry]:
        """Up to `limit` checkpoints of the range, newest (highest id, then namespace) first:
        their keys and metadata only (get_checkpoint reads a checkpoint itself), so a listing
        reads values only for what it answers."""
        ...

    def blob_sizes(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str]
    ) -> dict[str, int]:
        """The stored size in bytes of each channel's value at its version (channel -> size;
        a channel whose value is not stored is left out)."""
        ...

    def get_blobs(
        self, session_id: str, checkpoint_ns: str, versions: Mapping[str, str]
    ) -> dict[str, Blob]:
        """Each channel's value at its version (a channel whose value is not stored is left
        out)."""
        ...

    def put_writes(self, checkpoint: CheckpointRef, writes: Sequence[PendingWrite]) -> None:
        """Store pending writes of a checkpoint: a (task_id, idx) already stored is kept as it
        is, unless idx is negative (LangGraph's special channels), which replaces it."""
        ...

    def get_writes(self, checkpoint: CheckpointRef) -> list[PendingWrite]:
        """The checkpoint's pending writes, by task path, task id and index."""
        ...

    def writes_size(self, checkpoint: CheckpointRef) -> int:
        """The bytes of the checkpoint's pending writes' values."""
        ...

    def delete_checkpoints(self, session_id: str, limit: int) -> int:
        """Delete up to `limit` items of the session's checkpoints, values and writes (the
        purge of a deleted session); returns how many."""
        ...
