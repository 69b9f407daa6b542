"""Domain types: sessions, turns and what a chat turn returns. Plain dataclasses, no I/O."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, NamedTuple, TypeVar

from chatmemory.schema import (
    ID_MAX_LENGTH,
    ID_PATTERN,
    PROFILE_TIERS,
    VISIBLE_STATUSES,
    Intent,
    RecordOrigin,
    RecordStatus,
    RecordType,
    SentimentLabel,
    SessionStatus,
    SourceKind,
    TurnOrigin,
)

T = TypeVar("T")

_IDENTIFIER = re.compile(ID_PATTERN)


def is_identifier(value: str) -> bool:
    """Whether `value` follows the one rule of identifiers (schema.ID_PATTERN): what the API
    models check before a request is served, and what services check again for ids that reach
    them another way (a stream record, an operator tool)."""
    return len(value) <= ID_MAX_LENGTH and _IDENTIFIER.match(value) is not None


def message_key(client_message_id: str) -> str:
    """A short fixed-size key for a client_message_id (12 characters of its SHA-256). The session
    item keeps the last 50 and every turn's write pays for the item's size: 50 UUIDs would add
    about 2 KB, that is 2 more write units per turn."""
    digest = hashlib.sha256(client_message_id.encode("utf-8")).digest()[:9]
    return base64.urlsafe_b64encode(digest).decode("ascii")


def visible_to(owner: str, session_owner: object, status: object) -> bool:
    """The one rule of what a caller may see of a session, and so of its turns and of anything
    drawn from it: it is under the caller's current owner key (not another caller's, not a
    generation they forgot) and neither being imported nor deleted. services/access.py applies
    it to one session, the stores to many at once (live, list_sessions)."""
    return session_owner == owner and status in VISIBLE_STATUSES


def owner_key(user_id: str, generation: int) -> str:
    """The key a caller's data is stored under: their id, then "<id>#<n>" after their n-th
    "forget everything". Caller ids never contain "#" (handlers.identity.caller_id refuses them),
    so two callers never share a key."""
    return user_id if generation == 0 else f"{user_id}#{generation}"


def caller_of(owner: str) -> str:
    """The caller id an owner key belongs to (see owner_key)."""
    return owner.split("#", 1)[0]


@dataclass
class PurgeEntry:
    """A namespace (owner key) of a caller's forgotten data, still being purged."""

    owner: str
    requested_at: str
    state: str


@dataclass
class UserState:
    """What is kept per caller: the generation of their memory and the purges in progress."""

    user_id: str
    generation: int = 0
    purges: list[PurgeEntry] = field(default_factory=list)
    purge_round: int = 0

    @property
    def owner(self) -> str:
        return owner_key(self.user_id, self.generation)


@dataclass
class Session:
    session_id: str
    # The owner key (see owner_key): the caller's id, suffixed after a forget.
    user_id: str
    name: str
    status: SessionStatus
    started_at: str
    last_active_at: str
    ended_at: str | None = None
    num_turns: int = 0
    running_summary: str = ""
    summary_through_turn: int = 0
    version: int = 0
    # message_key(client_message_id) -> turn for the most recent messages: a retried request
    # finds its turn with the session read it makes anyway.
    recent_messages: dict[str, int] = field(default_factory=dict)
    failure_reason: str | None = None
    # Filled by consolidation.
    summary: str = ""
    consolidated_at: str | None = None
    consolidation_attempts: int = 0
    # A consolidation handed over to a next invocation: its summary, the first turn of the last
    # window it indexed, and the handover's round (the next checkpoint is conditional on it).
    consolidation_summary: str | None = None
    consolidation_cursor: int = 0
    consolidation_round: int = 0
    # True while the name is the generated "Session <date>": the first message with something
    # in it names the session (a name the caller gave is never replaced).
    auto_named: bool = False
    # True once a message named it (the name is then that message's text, not the caller's:
    # a continuation does not carry it over, so deleting this session takes it along).
    titled: bool = False
    # The caller deleted the session's summary record: a consolidation retried later must not
    # write it again (see profile.remember_summary).
    summary_forgotten: bool = False
    # The same for the records drawn from it that the caller deleted: one key per fact (of its
    # turn and wording, profile.fact_key), so that a retried consolidation or a redrive does
    # not extract and write them again.
    forgotten_facts: frozenset[str] = frozenset()
    # The session this one continues (POST /sessions with continue_from): while it exists, its
    # rolling summary is in this one's prompts, and its last turns fill the window while this
    # one is short (services/access.continued).
    continued_from: str | None = None
    # The newest chat message written before its answer (stacked messages: the request of that
    # message answers the messages waiting before it; services/conversation/stacking.py).
    stack_head: int = 0
    # While the session is handed to a person (schema.HandoffState: WAITING or ACTIVE; None when
    # the bot answers): why, since when, and the agent who answered last.
    handoff_state: str | None = None
    handoff_reason: str | None = None
    handoff_at: str | None = None
    handoff_agent: str | None = None
    # What the user asked a person for (POST /handoff's note), while handed off: kept here,
    # where deleting the session reaches it, and never put in an event.
    handoff_note: str | None = None
    # The session's turn count when it was last handed to a person (kept after the hand-back:
    # the automatic rules count only the turns after it).
    handoff_turn: int | None = None
    # The id the caller chose for the conversation (PUT /sessions/{id}), if any: the alias of
    # that id names this session while it is the conversation's newest.
    client_id: str | None = None
    # The first session of a conversation continued on the server under its client id (a
    # LangGraph thread that outlived an idle end): the thread's checkpoints stay in that
    # session's partition (services/conversation/checkpoints.py). None: this session is the first.
    thread_root: str | None = None

    def turn_of(self, client_message_id: str | None) -> int | None:
        """The turn that stored this client message, if it is among the recent ones."""
        if not client_message_id:
            return None
        return self.recent_messages.get(message_key(client_message_id))


@dataclass(frozen=True)
class ClientAlias:
    """A caller's client id naming a session (schema.alias_key): written with the session, on
    condition that it is still unwritten (`replaces` None) or still names `replaces` (a session
    deleted, forgotten or continued)."""

    caller: str
    client_id: str
    replaces: str | None = None


@dataclass(frozen=True)
class SessionCreation:
    """What a new session is written with (SessionStore.create_session), in one transaction."""

    # The caller's state as read: a forget that bumped its generation since fails the write.
    user: UserState
    # The caller's OPEN sessions the new one ends (at `ended_at`).
    end: Sequence[str] = ()
    ended_at: str = ""
    # The caller's client id made to name the new session (None: no alias is written).
    alias: ClientAlias | None = None


class Named(NamedTuple):
    """What one read found of an id a caller names a session by (SessionStore.get_named): the
    session its client id's alias names (None: no alias), the session whose server id it is
    (None: none), and the caller's state."""

    alias: str | None
    session: Session | None
    user: UserState


@dataclass
class Source:
    """Where an answer came from: a past session or a verified passage."""

    kind: SourceKind | str
    id: str
    title: str = ""
    date: str | None = None
    score: float | None = None
    doc_id: str | None = None
    passage_id: str | None = None


@dataclass
class Feedback:
    """The caller's rating of a turn's answer."""

    rating: str
    at: str
    comment: str | None = None


@dataclass(frozen=True)
class Sentiment:
    """The sentiment of the user's message of a turn: a label and a score from -1 (most
    negative) to 1 (most positive) that agree (services/conversation/sentiment.py)."""

    label: SentimentLabel
    score: float


@dataclass
class Turn:
    session_id: str
    turn: int
    user_id: str
    input: str
    response: str | None
    intent: Intent = Intent.CHAT
    sources: list[Source] = field(default_factory=list)
    model: str = ""
    created_at: str = ""
    client_message_id: str | None = None
    prompt: str | None = None
    latency_ms: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    # True when the model failed: the user's input is kept, a retry completes the turn.
    pending: bool = False
    # False when the response is no model's answer (the offline responder's notes): kept for
    # the conversation, never made into memory.
    remember_response: bool = True
    degraded: bool = False
    # A retry of a pending message answering it now, until then (services/conversation/chat._retry):
    # other retries wait for its answer instead of calling the model again.
    answering_until: str | None = None
    expires_at: int | None = None
    origin: TurnOrigin = TurnOrigin.CHAT
    # Small key/values of the client's (POST /turns), kept with the turn and exported.
    metadata: dict[str, Any] = field(default_factory=dict)
    feedback: Feedback | None = None
    # Of the user's input (None: not analyzed, SENTIMENT=off, or the analyzer failed).
    sentiment: Sentiment | None = None
    # A turn with origin AGENT: the agent who wrote its response.
    agent_id: str | None = None
    # Stacked messages: the later turn whose one answer covered this message too (this turn
    # then has no response of its own).
    answered_by: int | None = None
    # A user's message stored while the session was handed to a person: no model answers it.
    for_agent: bool = False
    # The client framework's own messages this turn stands for (POST /turns `messages`), as
    # compact JSON text: opaque to the service, which reads input and response.
    messages: str | None = None
    # A streamed answer the user stopped (or whose client went away) before it was finished:
    # the response is what had been sent (docs/concepts/streaming.md).
    stopped: bool = False


@dataclass
class ImportedSession:
    """A conversation to restore as a new session (POST /sessions/import; the API's
    ImportDocument.imported() makes one). Its turns are numbered from 1 and belong to no session
    yet (session_id and user_id empty); a turn whose created_at is empty took place at the
    import."""

    turns: list[Turn]
    name: str = ""
    started_at: str | None = None
    running_summary: str = ""
    summary_through_turn: int = 0


@dataclass
class Provenance:
    """Where a record was said: a turn of a session, and when. `text`: that session's own words
    when they are not the record's (a near-duplicate merged into it), so that deleting the
    session whose words the record holds can give it the words of one that stays."""

    session_id: str
    turn: int
    date: str
    text: str | None = None


@dataclass
class MemoryRecord:
    """One entry of the caller's profile: a fact, a preference or a session's summary.

    `subject` names what the record is about ("residence", "pet", "job"...): a newer record
    with the same type and subject supersedes an older one, which stays as history with the
    date it stopped being true (`valid_until`) and its successor (`superseded_by`)."""

    record_id: str
    user_id: str  # the owner key
    type: RecordType
    text: str
    created_at: str
    updated_at: str
    origin: RecordOrigin
    status: RecordStatus = RecordStatus.ACTIVE
    subject: str = ""
    provenance: list[Provenance] = field(default_factory=list)
    superseded_by: str | None = None
    valid_until: str | None = None
    version: int = 0
    # The labels of the client's namespace the record belongs to (an agent's store keeps its
    # items in namespaces); () is the profile itself, where extraction writes. Listing, search
    # and supersession stay inside one namespace.
    namespace: tuple[str, ...] = ()
    # Set when a client's key is (re)created: its index entry is keyed by it, so the entries of
    # a deleted earlier record under the same key are never taken for this one's.
    generation: str = ""
    # When the record expires, in epoch seconds (the records table's TTL attribute): from then
    # on it is never read again, and DynamoDB's TTL removes the item later. None: never.
    expires_at: int | None = None
    # What a fact or a preference is about (schema.RecordCategory, services/profile/traits.py):
    # its place in the profile block; "" for summaries, open questions and a client's items.
    category: str = ""
    # False for a client's item put with index=False (LangGraph's `put(..., index=False)`): it
    # is kept, read and listed, but has no index entry, so search by meaning never finds it.
    indexed: bool = True

    @property
    def in_profile(self) -> bool:
        """Part of the profile every chat prompt holds (services/profile/block.py): a lasting
        fact or preference of the profile's own namespace, no dated event."""
        return (
            self.type in (RecordType.FACT, RecordType.PREFERENCE)
            and self.status == RecordStatus.ACTIVE
            and not self.namespace
            and self.expires_at is None
            and self.category in PROFILE_TIERS
        )

    @property
    def profile_rank(self) -> str:
        """Its place in the profile index (schema.PROFILE_RECORDS_INDEX): its category's tier,
        then the newest said (or restated, or corrected) first. Read in key order, the index
        gives the profile block's candidates best first."""
        digits = "".join(c for c in self.updated_at or self.created_at if c.isdigit())[:17]
        newest_first = 10**17 - 1 - int(digits.ljust(17, "0"))
        return f"{PROFILE_TIERS[self.category]}#{newest_first:017d}"

    def expired(self, now: datetime) -> bool:
        """Whether the record has expired at `now` (reads hide it, whatever the TTL lag)."""
        return self.expires_at is not None and self.expires_at <= int(now.timestamp())

    @property
    def sessions(self) -> list[str]:
        """The sessions it was drawn from, in order, each once."""
        return list(dict.fromkeys(p.session_id for p in self.provenance))

    @property
    def wording_sessions(self) -> list[str]:
        """The sessions that said the record's own words (its text), in order, each once."""
        return list(dict.fromkeys(p.session_id for p in self.provenance if p.text is None))


class RecordFilter(NamedTuple):
    """Which of an owner's records a listing keeps (RecordStore.list_records): those of one
    type (None: of every type), of the namespaces `namespace_prefix` begins (None or (): of
    every namespace; the profile's own records are of schema.PROFILE_NAMESPACE)."""

    record_type: str | None = None
    namespace_prefix: tuple[str, ...] | None = None


@dataclass
class Page(Generic[T]):
    """One page of a listing; `next_token` is opaque to clients."""

    items: list[T]
    next_token: str | None = None


# --- hand-off to a person (services/conversation/handoff.py) --------------------------------------


@dataclass(frozen=True)
class Handoff:
    """A change of the session's hand-off state written together with a turn (append_turn):
    a hand-off (`reason` and `at` set: the state becomes WAITING), or an agent's reply (state
    ACTIVE, `agent` the one who answers)."""

    state: str
    reason: str | None = None
    at: str | None = None
    agent: str | None = None

    def apply(self, session: Session, turn: int) -> None:
        """The session object as this change, written with turn number `turn`, left it."""
        session.handoff_state = self.state
        if self.reason is not None:
            session.handoff_reason, session.handoff_at = self.reason, self.at
            session.handoff_turn, session.handoff_agent = turn, None
        if self.agent:
            session.handoff_agent = self.agent


def needs_handoff(turn: Turn) -> bool | None:
    """What writing `turn` requires of its session: handed to a person (True: an agent's reply,
    a message stored for the agent), with the bot (False: an answer of this service's model or
    a message about to be answered by it), or nothing (None: a client's own turn, POST /turns).

    Every store checks it in the turn's write, so a hand-off that commits between a request's
    read and its write turns that write into a conflict instead of a bot answer after it."""
    if turn.origin == TurnOrigin.AGENT or turn.for_agent:
        return True
    if turn.origin == TurnOrigin.CHAT and not turn.pending:
        return False
    return None


class CoveredTurns(NamedTuple):
    """The earlier pending messages an answer covers too (TurnStore.complete_stack), and the
    session's stack head they were read at: the answer is written only while the head is
    still that one (None: whatever the head, as for a stack of one or a forced answer)."""

    turns: Sequence[int] = ()
    head: int | None = None


@dataclass(frozen=True)
class TurnWrite:
    """How a turn is written with its session (TurnStore.append_turn): what the write changes
    on the session besides its counters, and which sessions accept it."""

    # How many recent client message ids the session keeps (the oldest beyond give way).
    keep_message_ids: int
    # The session's new name (auto_named goes False), written with the turn; None: unchanged.
    rename: str | None = None
    # The session's last activity (None: the turn's created_at).
    at: str | None = None
    # A chat message written before it is answered (pending): only into an OPEN session, and
    # the session's `stack_head` becomes its number (services/conversation/stacking.py).
    stack: bool = False
    # A change of the session's hand-off state written with the turn (a hand-off also leaves
    # the sweeper's index, see HandoffStore.hand_off).
    handoff: Handoff | None = None


# --- LangGraph checkpoints (services/conversation/checkpoints.py) ---------------------------------


@dataclass(frozen=True)
class Blob:
    """A value as the client serialized it (LangGraph's serde: a type tag and bytes); the
    server never reads inside it."""

    type: str
    data: bytes


@dataclass(frozen=True)
class ChannelBlob:
    """A channel's value at one version: shared by every checkpoint of the namespace that has
    the channel at that version, so an unchanged channel is stored once."""

    channel: str
    version: str
    value: Blob


@dataclass
class StoredCheckpoint:
    """One checkpoint of a session (a LangGraph thread) in a namespace: the checkpoint without
    its channel values (`checkpoint`), its metadata (`metadata` as the client serialized it,
    `metadata_json` as JSON for list filters) and the version of each of its channels, whose
    values are ChannelBlobs. `size`: the bytes of all its channel values."""

    session_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint: Blob
    metadata: Blob
    metadata_json: dict[str, Any]
    channel_versions: dict[str, str]
    created_at: str
    size: int = 0


class CheckpointEntry(NamedTuple):
    """What a listing reads of a checkpoint to filter and page: its keys, parent, metadata as
    JSON and size, not the checkpoint itself nor its values (StoredCheckpoint, read for the
    checkpoints a listing answers)."""

    session_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    metadata_json: dict[str, Any]
    created_at: str
    size: int = 0


class CheckpointRef(NamedTuple):
    """A checkpoint by its keys: the session whose partition holds it, its namespace and id."""

    session_id: str
    checkpoint_ns: str
    checkpoint_id: str


class ListPosition(NamedTuple):
    """Where a listing of checkpoints stopped: the last one it answered. A listing is ordered
    by id, then namespace, both descending, so a page of every namespace goes on after the
    checkpoint it ended with even when another namespace has one of the same id."""

    checkpoint_id: str
    checkpoint_ns: str


class CheckpointRange(NamedTuple):
    """Which checkpoints of a session a listing reads (CheckpointStore.list_checkpoints): those
    of a namespace (None: of every namespace), below the id `before` (LangGraph's `before`, of
    any namespace) and after `after`, where an earlier page ended."""

    checkpoint_ns: str | None
    before: str | None = None
    after: ListPosition | None = None

    def select(self, entries: list[CheckpointEntry]) -> list[CheckpointEntry]:
        """`entries` in a listing's order (ListPosition), those in this range."""
        ordered = sorted(entries, key=lambda c: (c.checkpoint_id, c.checkpoint_ns), reverse=True)
        return [
            c
            for c in ordered
            if (self.checkpoint_ns is None or c.checkpoint_ns == self.checkpoint_ns)
            and (self.before is None or c.checkpoint_id < self.before)
            and (self.after is None or (c.checkpoint_id, c.checkpoint_ns) < self.after)
        ]


@dataclass(frozen=True)
class PendingWrite:
    """A task's write to a channel, saved before its checkpoint's successor: (task_id, idx) is
    its identity. LangGraph gives its special channels (errors, interrupts...) negative
    indexes, and those are replaced when written again; any other write is kept as first
    stored."""

    task_id: str
    idx: int
    channel: str
    value: Blob
    task_path: str = ""
