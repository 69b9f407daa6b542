"""Ports: the interfaces services depend on. Adapters implement them; tests pass fakes. The
stores of short-term memory are small Protocols, one a table's aggregate (users, sessions,
turns, records, hand-off, checkpoints); a service takes the ones it uses, and ShortTermMemory
is their composition, which the DynamoDB adapter and the in-memory fake implement. The
long-term index's port is in index_port.py (re-exported here)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol, runtime_checkable

from chatmemory.domain import (
    Blob,
    ChannelBlob,
    CheckpointEntry,
    ClientAlias,
    Handoff,
    ListPosition,
    MemoryRecord,
    Named,
    Page,
    PendingWrite,
    PurgeEntry,
    Sentiment,
    Session,
    StoredCheckpoint,
    Turn,
    UserState,
)
from chatmemory.errors import ModelError
from chatmemory.index_port import Candidate as Candidate
from chatmemory.index_port import LongTermIndex as LongTermIndex
from chatmemory.index_port import MemoryDoc as MemoryDoc
from chatmemory.schema import RecordType


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
    def create_session(
        self,
        session: Session,
        *,
        user: UserState,
        end: Sequence[str] = (),
        ended_at: str = "",
        alias: ClientAlias | None = None,
    ) -> None:
        """Put a new session, in one transaction with a check that the caller's memory is
        still at `user.generation` (a forget meanwhile fails it) and with ending the OPEN
        sessions `end` (at `ended_at`); with `alias`, the caller's client id is made to name
        it (conditional on the alias being unwritten, or still naming `alias.replaces`).
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

    def append_turn(
        self,
        session: Session,
        turn: Turn,
        *,
        keep_message_ids: int,
        rename: str | None = None,
        at: str | None = None,
        stack: bool = False,
        handoff: Handoff | None = None,
    ) -> Session:
        """Write `turn` as number num_turns + 1 together with the session counters, atomically;
        with `rename`, the session takes that name in the same write (auto_named goes False).
        The session's last activity is `at` (default: the turn's created_at). With `stack`, the
        turn is a chat message written before it is answered (pending): only into an OPEN
        session, and the session's `stack_head` becomes its number
        (services/conversation/stacking.py). The write is also conditional on the session's hand-off
        state as domain.needs_handoff says for the turn; with `handoff`, it changes that state in
        the same write (a hand-off leaves the sweeper's index, see hand_off).

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
        self,
        answer: Turn,
        covered: Sequence[int],
        *,
        head: int | None,
        rename: str | None = None,
    ) -> None:
        """In one transaction: fill in the response of the pending turn `answer`, mark the
        pending turns `covered` (earlier messages it answers too) `answered_by` it, and, with
        `rename`, name the session. Conditional on every one of these turns still being pending
        and unanswered, on the session being OPEN and, unless `head` is None, on its
        `stack_head` still being `head` (no newer message arrived to be answered with them).
        Raises Conflict when a condition fails: nothing is written then."""
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
        self,
        owner: str,
        record_type: str | None,
        limit: int,
        next_token: str | None,
        namespace_prefix: tuple[str, ...] | None = None,
    ) -> Page[MemoryRecord]:
        """The owner's records (active and superseded, not deleting), newest first; with
        `namespace_prefix`, those of the namespaces it begins (() is every namespace). Like a
        DynamoDB Query, a page holds what `limit` items read kept: it may be short, even empty,
        with a next_token."""
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


# --- text generation: answers made of pieces ----------------------------------------------------
# An answer is a sequence of pieces: its text as it comes (str deltas), then one Finish that says
# why it ended and what it cost. Buffered callers take the pieces collected (`collect`,
# TextGenerator.generate); a streaming caller reads them as they come.

# Why an answer ended (Finish.stop_reason). OpenAI's finish_reason of each: "stop" for END and
# STOP_SEQUENCE, "length" for LENGTH, "content_filter" for CONTENT_FILTER.
END = "end"  # the model ended its answer
STOP_SEQUENCE = "stop_sequence"  # at a stop sequence (the server's, or cut here)
LENGTH = "length"  # at the most tokens it was allowed
CONTENT_FILTER = "content_filter"  # a guardrail or content filter ended it


class Finish(NamedTuple):
    """The last piece of an answer."""

    stop_reason: str = END
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    # False for text no model wrote (the offline responder): it is not made into memory.
    remember: bool = True


# A text delta, or the Finish that ends the answer.
Piece = str | Finish


class Generation(NamedTuple):
    """An answer whole: its pieces collected."""

    text: str
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    remember: bool = True
    stop_reason: str = END


class GenerationOptions(NamedTuple):
    """What a caller asks of one answer. A backend honours the options named in its
    TextGenerator.honours and ignores the others: `TextGenerator.unsupported` tells which of a
    request's it cannot honour, so that a caller can refuse them instead."""

    max_new_tokens: int
    # Text from the first of these on is never part of the answer, whatever the backend.
    stop: tuple[str, ...] = ()
    # None: the backend's own default.
    temperature: float | None = None
    # A hint, never refused: how many characters at the start of the prompt stay the same from
    # one turn to the next (the system line and the profile block), which a backend that
    # caches prompts may cache (Bedrock's cachePoint).
    constant_prefix: int = 0


# Options that are hints: a backend that cannot use them ignores them (never `unsupported`).
HINTS = frozenset({"constant_prefix"})


def collect(pieces: Iterable[Piece]) -> Generation:
    """The answer whole from its pieces (the text of every delta, and the Finish's facts)."""
    text: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            text.append(piece)
        else:
            return Generation(
                "".join(text),
                piece.model,
                piece.input_tokens,
                piece.output_tokens,
                piece.remember,
                piece.stop_reason,
            )
    raise ModelError("the model's answer ended before it was finished")


def whole(generation: Generation) -> Iterator[Piece]:
    """The pieces of an answer that came whole: its text, then its Finish."""
    if generation.text:
        yield generation.text
    yield Finish(
        generation.stop_reason,
        generation.model,
        generation.input_tokens,
        generation.output_tokens,
        generation.remember,
    )


class TextGenerator(Protocol):
    """A text model. Adapters subclass it: they implement `pieces`, and `generate` (the answer
    collected) and `unsupported` come with it."""

    name: str
    # The model's input limit in tokens; prompts are clipped to fit it.
    context_tokens: int
    # The GenerationOptions fields this backend honours (none unless it says).
    honours: frozenset[str] = frozenset()

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        """The answer to `prompt` as pieces, the last a Finish; nothing of it from a stop
        sequence on. With `stream`, from the backend's streaming call where it has one (its
        text as the model writes it); without, from its whole answer (one request, the call a
        buffered answer makes). Fails with ModelUnavailable or ModelError, before or between
        pieces."""
        ...

    def generate(self, prompt: str, *, max_new_tokens: int, stop: Sequence[str] = ()) -> Generation:
        """The whole answer: the pieces of one buffered call, collected."""
        return collect(self.pieces(prompt, GenerationOptions(max_new_tokens, tuple(stop))))

    def unsupported(self, options: GenerationOptions) -> dict[str, str]:
        """The options of a request this backend cannot honour, each with why (an option is
        asked for unless it is None or empty; max_new_tokens always is)."""
        return {
            name: f"{self.name} cannot honour {name}"
            for name, value in zip(options._fields, options, strict=True)
            if value not in (None, ()) and name not in self.honours and name not in HINTS
        }


class Embedder(Protocol):
    name: str
    dimension: int
    # How many texts one request may carry (1 for endpoints without batch input).
    max_batch: int
    # Whether `name` always serves the same model (a Bedrock model id, whose version is part of
    # it), so vectors kept under it stay that model's; an endpoint or a server keeps its name
    # when another model is deployed behind it (False).
    pins_model: bool

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of what is stored and searched (windows, summaries, records, passages)."""
        ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An embedder whose model embeds a search query apart from what it searches:
    multilingual-e5 was trained with "query: " before questions and "passage: " before
    documents, and compares the two (each embedded as the other loses recall)."""

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]: ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Vectors of search queries (a question, a message, a small-talk phrasing): the
    embedder's query side when its model has one, else its one way of embedding."""
    if isinstance(embedder, QueryEmbedder):
        return embedder.embed_queries(texts)
    return embedder.embed(texts)


class VectorCache(Protocol):
    """Vectors kept across processes under a key, so that a cold start reads them instead of
    embedding the same texts again (auto-recall's small-talk phrasings). They come back as
    float32 values, as they are kept."""

    def load(self, key: str) -> list[list[float]] | None:
        """The vectors saved under `key`, or None; a ChatMemoryError when the store is down."""
        ...

    def save(self, key: str, vectors: Sequence[Sequence[float]]) -> None:
        """Keep `vectors` under `key` (a set too large to keep is not kept)."""
        ...


class SentimentAnalyzer(Protocol):
    """The sentiment of one user message (VADER in process, or the text model)."""

    name: str

    def analyze(self, text: str) -> Sentiment: ...


class EventPublisher(Protocol):
    """Where the hand-off's events go: EventBridge in AWS, a JSON-lines file in local mode."""

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        """One event of source schema.EVENT_SOURCE; raises EventsUnavailable on failure."""
        ...


class Clock(Protocol):
    def __call__(self) -> datetime: ...


@dataclass
class ExtractedFact:
    """A durable fact or preference found in a session: what, about what, said at which turn."""

    type: RecordType
    text: str
    subject: str  # what it is about ("residence", "likes:coffee"), "" when nothing in particular
    turn: int


class Extractor(Protocol):
    name: str

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        """The user's durable facts and preferences in `turns`, each with its turn."""
        ...


class Summarizer(Protocol):
    name: str

    def summarize(self, text: str) -> str: ...

    def extend(self, summary: str, new_text: str) -> str:
        """The summary of what `summary` covered followed by `new_text`."""
        ...


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
        self,
        session_id: str,
        checkpoint_ns: str | None,
        before: str | None,
        limit: int,
        after: ListPosition | None = None,
    ) -> list[CheckpointEntry]:
        """Up to `limit` checkpoints of the namespace (None: of every namespace), newest
        (highest id, then namespace) first, only those whose id is below `before` and that
        come after `after` when given: their keys and metadata only (get_checkpoint reads a
        checkpoint itself), so a listing reads values only for what it answers."""
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

    def put_writes(
        self,
        session_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
    ) -> None:
        """Store pending writes of a checkpoint: a (task_id, idx) already stored is kept as it
        is, unless idx is negative (LangGraph's special channels), which replaces it."""
        ...

    def get_writes(
        self, session_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[PendingWrite]:
        """The checkpoint's pending writes, by task path, task id and index."""
        ...

    def writes_size(self, session_id: str, checkpoint_ns: str, checkpoint_id: str) -> int:
        """The bytes of the checkpoint's pending writes' values."""
        ...

    def delete_checkpoints(self, session_id: str, limit: int) -> int:
        """Delete up to `limit` items of the session's checkpoints, values and writes (the
        purge of a deleted session); returns how many."""
        ...
