"""Request and response models of the chat API: they validate requests and generate the OpenAPI
document (`make openapi`), so the published contract is the code that runs."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from chatmemory import limits
from chatmemory.clock import canonical_time, iso
from chatmemory.domain import (
    Blob,
    Feedback,
    ImportedSession,
    ListPosition,
    MemoryRecord,
    Page,
    Sentiment,
    Session,
    Source,
    Turn,
    caller_of,
    is_identifier,
)
from chatmemory.errors import BadRequest
from chatmemory.schema import (
    AGENT_LABEL,
    EXPORT_FORMAT,
    ID_MAX_LENGTH,
    ID_PATTERN,
    MAX_CHECKPOINT_ITEM_BYTES,
    MAX_CHECKPOINT_JSON_DEPTH,
    MAX_INPUT_CHARS_LIMIT,
    MAX_NAMESPACE_DEPTH,
    MAX_NAMESPACE_LABEL_CHARS,
    MAX_RECORD_CHARS,
    MAX_RECORD_FILTER_DEPTH,
    MAX_RECORD_FILTER_VALUES,
    MAX_RECORD_TTL_SECONDS,
    MAX_TURN_MESSAGES_BYTES,
    PROFILE_NAMESPACE,
    RUN_LABEL,
    HandoffReason,
    HandoffState,
    Intent,
    Rating,
    RecordCategory,
    RecordOrigin,
    RecordStatus,
    RecordType,
    SentimentLabel,
    SessionStatus,
    SourceKind,
    TurnOrigin,
    scope_of,
)

if TYPE_CHECKING:
    from chatmemory.services.conversation.checkpoints import CheckpointTuple
    from chatmemory.services.longterm.recall import RankedSession


# What the items of one answer may take as sent (answer_bytes).
ANSWER_ITEMS_BYTES = limits.LAMBDA_ANSWER_ITEMS_BYTES


def answer_bytes(item: Any) -> int:
    """The bytes `item` (a model, or JSON data) adds to a Lambda answer: its JSON as the API
    serializes it (non-ASCII escaped: 6 bytes a character), inside the proxy answer's body
    string, which escapes its quotes and backslashes again; with a separator."""
    data = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
    return len(json.dumps(json.dumps(data, separators=(",", ":")))) - 1


class _Model(BaseModel):
    """Every model here: validators are built when a model is first used, not when the
    module is imported (each Lambda cold start imports it; most requests use a few models)."""

    model_config = ConfigDict(defer_build=True)


class _Strict(_Model):
    """A request body: unknown fields and loose types ("5" for 5, 1 for true) are refused."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


# What a client may store as one turn's answer (the bound an import has too).
MAX_STORED_RESPONSE_CHARS = 20_000
# A time a client sends: ISO 8601 in a sane range, stored in one canonical form.
Timestamp = Annotated[str, Field(max_length=64), AfterValidator(canonical_time)]
# Scores a client may send back (sources of an exported turn): finite, of a sane size and
# rounded to what our scores carry, so they store exactly (DynamoDB numbers stop at 38 digits,
# 1E+125 and 1E-130: 1e-300 would not store at all).
Score = Annotated[
    float,
    Field(allow_inf_nan=False, ge=-1e6, le=1e6, strict=False),
    AfterValidator(lambda score: round(score, 6)),
]


# The one rule of identifiers (schema.ID_PATTERN): what a client may send as a session id, a
# record id or a client_message_id, and what every id the API issues follows.
ID_RULE = f"1-{ID_MAX_LENGTH} letters, digits and _ . : - (at least one not a dot: never . or ..)"


def identifier(description: str) -> object:
    """The Field of an identifier in a request body: the rule, with what this one names."""
    return Field(
        min_length=1,
        max_length=ID_MAX_LENGTH,
        pattern=ID_PATTERN,
        description=f"{description} ({ID_RULE}).",
    )


ClientMessageId = Annotated[
    str, identifier("Idempotency key: a retry with the same id returns the stored turn")
]


class CreateSessionRequest(_Strict):
    name: str | None = Field(default=None, max_length=200, description="Display name.")
    end_previous: bool = Field(
        default=False,
        description="End the caller's open sessions first (which consolidates them).",
    )
    continue_from: (
        Annotated[
            str,
            identifier(
                "A session of the caller this one continues (one the idle sweeper ended, say): "
                "its name is carried over, and its rolling summary and last turns stay in the "
                "model's prompt while it exists; if it is still open it is ended"
            ),
        ]
        | None
    ) = None


class PostMessageRequest(_Strict):
    content: str = Field(
        description="The message. `/past ...` recalls past conversations, "
        "`/verified ...` answers from verified documents; anything else is chat."
    )
    client_message_id: ClientMessageId | None = None
    window_turns: int | None = Field(
        default=None, ge=0, description="How many recent turns the model sees."
    )


def _small_object(value: dict[str, object]) -> dict[str, object]:
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"is {size} bytes as JSON; at most {MAX_METADATA_BYTES} are kept")
    return value


MAX_METADATA_BYTES = 2048
MetadataKey = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]
MetadataValue = (
    Annotated[bool, Field(strict=True)]
    | Annotated[int, Field(strict=True, ge=-(2**53), le=2**53)]
    | Score
    | Annotated[str, Field(max_length=512)]
)
# Small user-defined key/values kept with a turn (a trace id, a channel, an agent's name).
Metadata = Annotated[
    dict[MetadataKey, MetadataValue],
    Field(
        max_length=16,
        description=(
            "At most 16 keys (letters, digits and _ . : -, up to 64 characters) with string "
            f"(up to 512 characters), number or boolean values; at most {MAX_METADATA_BYTES} "
            "bytes as JSON."
        ),
    ),
    AfterValidator(_small_object),
]


def _turn_messages(value: list[dict[str, Any]]) -> list[dict[str, Any]]:
    size = len(compact_json(value).encode("utf-8"))
    if size > MAX_TURN_MESSAGES_BYTES:
        raise ValueError(f"is {size} bytes as JSON; at most {MAX_TURN_MESSAGES_BYTES} are kept")
    return value


def compact_json(value: Any) -> str:
    """A turn's messages as they are stored: compact JSON, characters as they are."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# The client framework's own messages a turn stands for, kept verbatim (schema.py).
TurnMessages = Annotated[
    list[dict[str, Any]],
    Field(
        max_length=1000,
        description=(
            "The messages of the client's framework this turn stands for (a LangChain "
            "message list with tool calls, names, ids, content parts...), kept verbatim and "
            f"returned as sent: at most {MAX_TURN_MESSAGES_BYTES} bytes as compact JSON "
            "(UTF-8). The service itself reads input and response only."
        ),
    ),
    AfterValidator(_turn_messages),
]


def _parsed_messages(value: object) -> object:
    """A stored turn's messages (JSON text) as the list they were sent as."""
    return json.loads(value) if isinstance(value, str) else value


class StoreTurnRequest(_Strict):
    input: str = Field(description="What the user said.")
    response: str | None = Field(
        default=None,
        max_length=MAX_STORED_RESPONSE_CHARS,
        description="The answer, if there is one yet (else PATCH it later).",
    )
    client_message_id: ClientMessageId | None = None
    created_at: Timestamp | None = Field(
        default=None, description="When it was said (ISO 8601); default: now."
    )
    metadata: Metadata = {}
    messages: TurnMessages | None = None


class UpdateTurnRequest(_Strict):
    response: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_STORED_RESPONSE_CHARS,
        description="The answer to a turn stored without one.",
    )
    metadata: Metadata | None = Field(default=None, description="Replaces the turn's metadata.")
    messages: TurnMessages | None = Field(
        default=None, description="Replaces the turn's messages (see POST /turns)."
    )


class FeedbackRequest(_Strict):
    rating: Annotated[Rating, Field(strict=False)] = Field(description="up or down.")
    comment: str | None = Field(default=None, max_length=1000)


class _Out(_Model):
    """An answer model, built from the domain object of the same name (its attributes)."""

    model_config = ConfigDict(from_attributes=True, defer_build=True)


class SourceOut(_Out):
    kind: SourceKind | str
    id: str
    title: str | None = None
    date: str | None = None
    score: float | None = None
    doc_id: str | None = None
    passage_id: str | None = None


# The statuses a caller can see (IMPORTING and DELETING sessions answer 404).
VisibleStatus = Literal[
    SessionStatus.OPEN, SessionStatus.ENDED, SessionStatus.CONSOLIDATED, SessionStatus.FAILED
]


class SessionOut(_Out):
    session_id: str
    name: str
    status: VisibleStatus
    started_at: str
    last_active_at: str
    ended_at: str | None = None
    num_turns: int
    continued_from: str | None = Field(
        default=None, description="The session this one continues, if any."
    )
    client_id: str | None = Field(
        default=None,
        description=(
            "The caller's own id of the conversation (PUT /sessions/{session_id}), if it was "
            "given one: the id names its newest session."
        ),
    )
    # Hand-off to a person (services/conversation/handoff.py).
    handoff_state: HandoffState | None = Field(
        default=None,
        description=(
            "WAITING: handed to a person, none has answered yet; ACTIVE: a person answers "
            "(the bot does not answer messages meanwhile); absent: the bot answers."
        ),
    )
    handoff_reason: HandoffReason | None = Field(
        default=None, description="Why it was handed off (while it is)."
    )
    handoff_at: str | None = Field(default=None, description="When it was handed off.")
    handoff_agent: str | None = Field(default=None, description="The agent who answered last.")
    handoff_note: str | None = Field(
        default=None,
        description="What the user asked a person for (POST /handoff's note), while handed off.",
    )


class SessionEnvelope(_Model):
    session: SessionOut

    @classmethod
    def of(cls, session: Session) -> SessionEnvelope:
        return cls(session=SessionOut.model_validate(session))


class SessionList(_Model):
    sessions: list[SessionOut]
    next_token: str | None = None

    @classmethod
    def of(cls, page: Page[Session]) -> SessionList:
        return cls(
            sessions=[SessionOut.model_validate(s) for s in page.items],
            next_token=page.next_token,
        )


class FeedbackOut(_Out):
    rating: Rating
    comment: str | None = None
    at: str


class SentimentOut(_Out):
    label: SentimentLabel = Field(
        description="positive (score at least 0.05), negative (at most -0.05) or neutral."
    )
    score: float = Field(ge=-1, le=1, description="From -1 (most negative) to 1 (most positive).")


class TurnOut(_Out):
    turn: int
    input: str
    response: str | None = None
    intent: Intent
    sources: list[SourceOut] = []
    created_at: str
    client_message_id: str | None = None
    pending: bool = Field(
        default=False,
        description=(
            "Not answered yet: being answered (with the messages sent after it), or the model "
            "failed (retry with the same client_message_id)."
        ),
    )
    degraded: bool = Field(
        default=False, description="Answered without a component that was unavailable."
    )
    origin: TurnOrigin = Field(
        default=TurnOrigin.CHAT,
        description=(
            "chat: answered by this service's model; client: stored with POST /turns; agent: "
            "a person's reply while the session was handed off (its text is the response)."
        ),
    )
    agent_id: str | None = Field(default=None, description="origin agent: who replied.")
    for_agent: bool = Field(
        default=False,
        description=(
            "Sent while the session was handed to a person: no model answers it; the agent's "
            "replies follow as turns of their own."
        ),
    )
    metadata: dict[str, MetadataValue] = {}
    messages: Annotated[list[dict[str, Any]] | None, BeforeValidator(_parsed_messages)] = Field(
        default=None,
        description="The client framework's messages stored with the turn (POST /turns).",
    )
    feedback: FeedbackOut | None = None
    sentiment: SentimentOut | None = Field(
        default=None,
        description=(
            "The sentiment of the user's input (VADER, or the text model with "
            "SENTIMENT=model); absent when unknown, and for a command (/past, /verified, "
            "/remember, /human), which is not scored."
        ),
    )
    answered_by: int | None = Field(
        default=None,
        description=(
            "Stacked messages: the later turn whose one answer covered this message too "
            "(this turn then has no response of its own)."
        ),
    )
    stopped: bool = Field(
        default=False,
        description=(
            "A streamed answer stopped before it was finished (the user stopped it, or their "
            "client went away): the response is what had been sent."
        ),
    )


class TurnEnvelope(_Model):
    turn: TurnOut

    @classmethod
    def of(cls, turn: Turn) -> TurnEnvelope:
        return cls(turn=TurnOut.model_validate(turn))


class MessageEnvelope(TurnEnvelope):
    answer: TurnOut | None = Field(
        default=None,
        description=(
            "When this message was answered together with messages sent after it: the turn "
            "that holds the answer (turn.answered_by)."
        ),
    )


class MessageList(_Model):
    messages: list[TurnOut]
    next_token: str | None = None

    @classmethod
    def of(cls, page: Page[Turn]) -> MessageList:
        return cls(
            messages=[TurnOut.model_validate(t) for t in page.items],
            next_token=page.next_token,
        )


class ExportedSession(SessionOut):
    running_summary: str = ""
    summary_through_turn: int = 0


class ExportDocument(_Model):
    format: str = EXPORT_FORMAT
    session: ExportedSession
    messages: list[TurnOut]
    next_token: str | None = Field(
        default=None,
        description=(
            "More messages follow: pass it to the same route for the next page. The whole "
            "export is the pages' messages in order (a page is at most 4 MB)."
        ),
    )

    @classmethod
    def of(
        cls, session: Session, turns: Iterable[Turn], next_token: str | None = None
    ) -> ExportDocument:
        return cls(
            session=ExportedSession.model_validate(session),
            messages=[TurnOut.model_validate(t) for t in turns],
            next_token=next_token,
        )


def turn_bytes(turn: Turn) -> int:
    """A turn's size in a page of messages or of an export as Lambda sends it (answer_bytes:
    a quote is 4 bytes)."""
    return answer_bytes(TurnOut.model_validate(turn))


class _Exported(_Model):
    """Part of an exported document: what this API wrote is accepted back, other fields of the
    export are ignored, and every value that is kept is strictly typed and bounded (one
    message must fit a DynamoDB item of 400 KB whatever its characters)."""

    model_config = ConfigDict(extra="ignore", strict=True, defer_build=True)


class ImportSource(_Exported):
    kind: Annotated[SourceKind, Field(strict=False)] = SourceKind.SESSION
    id: str = Field(default="", max_length=512)
    title: str = Field(default="", max_length=300)
    date: str | None = Field(default=None, max_length=64)
    score: Score | None = None
    doc_id: str | None = Field(default=None, max_length=512)
    passage_id: str | None = Field(default=None, max_length=512)


class ImportFeedback(_Exported):
    rating: Annotated[Rating, Field(strict=False)]
    comment: str | None = Field(default=None, max_length=1000)
    at: Timestamp


class ImportSentiment(_Exported):
    label: Annotated[SentimentLabel, Field(strict=False)]
    # A number (an integer too; "0.5" is not one), finite, in [-1, 1], kept to 4 decimals.
    score: Annotated[
        float, Field(allow_inf_nan=False, ge=-1, le=1), AfterValidator(lambda s: round(s, 4))
    ]

    def domain(self) -> Sentiment:
        return Sentiment(self.label, self.score)


class ImportMessage(_Exported):
    # Within MAX_INPUT_CHARS, which the import checks (the setting may be lower).
    input: str = Field(max_length=MAX_INPUT_CHARS_LIMIT)
    response: str | None = Field(default=None, max_length=MAX_STORED_RESPONSE_CHARS)
    intent: Annotated[Intent, Field(strict=False)] = Intent.CHAT
    sources: list[ImportSource] = Field(default=[], max_length=20)
    created_at: Timestamp | None = None
    # chat or client as exported. An import is the caller's own account of a conversation and
    # cannot speak for a person: a turn exported with origin agent comes back as origin client
    # (its text kept as the response), and an exported agent_id or for_agent is ignored, as
    # POST /messages and POST /turns never take them either.
    origin: Annotated[TurnOrigin, Field(strict=False)] = TurnOrigin.CHAT
    metadata: Metadata = {}
    messages: TurnMessages | None = None
    feedback: ImportFeedback | None = None
    # Kept as exported; a message without one stays without (no analyzer runs on an import).
    sentiment: ImportSentiment | None = None

    def turn(self, number: int) -> Turn:
        """The message as the `number`th turn of a session not made yet (ImportedSession)."""
        return Turn(
            session_id="",
            turn=number,
            user_id="",
            input=self.input,
            response=self.response,
            intent=self.intent,
            sources=[Source(**source.model_dump()) for source in self.sources],
            created_at=self.created_at or "",
            client_message_id=None,
            # No import speaks for a person: an agent's turn is the caller's account of it,
            # as a turn a client stored.
            origin=TurnOrigin.CLIENT if self.origin == TurnOrigin.AGENT else self.origin,
            metadata=dict(self.metadata),
            messages=compact_json(self.messages) if self.messages is not None else None,
            feedback=Feedback(**self.feedback.model_dump()) if self.feedback else None,
            sentiment=self.sentiment.domain() if self.sentiment else None,
        )


class ImportSession(_Exported):
    name: str | None = Field(default=None, max_length=200)
    started_at: Timestamp | None = None
    running_summary: str | None = Field(default=None, max_length=20_000)
    summary_through_turn: int | None = Field(default=None, ge=0, le=1_000_000)


# One import is one API request: its writes must end well inside API Gateway's 29 s on any
# DynamoDB (2,000 turns are 80 batch writes; DynamoDB Local takes about 4 s for them).
MAX_IMPORT_MESSAGES = 2_000


class ImportDocument(_Exported):
    """An exported session (extra fields of the export are accepted and ignored). The whole
    document is validated before anything is written; at most 2,000 messages per import, and
    an import that cannot be written within 20 s is abandoned (413) and leaves nothing."""

    format: str | None = Field(default=None, max_length=64)
    session: ImportSession = ImportSession()
    messages: list[ImportMessage] = Field(max_length=MAX_IMPORT_MESSAGES)

    def imported(self) -> ImportedSession:
        """What the sessions service restores (it takes no API model)."""
        return ImportedSession(
            turns=[message.turn(n) for n, message in enumerate(self.messages, start=1)],
            name=(self.session.name or "").strip(),
            started_at=self.session.started_at,
            running_summary=self.session.running_summary or "",
            summary_through_turn=self.session.summary_through_turn or 0,
        )


class MemoryOut(_Model):
    session_id: str
    score: float
    similarity: float
    recency: float
    date: str
    title: str
    snippets: list[str] = Field(description="The session's best matching parts, best first.")

    @classmethod
    def of(cls, ranked: RankedSession) -> MemoryOut:
        return cls(
            session_id=ranked.session_id,
            score=round(ranked.score, 4),
            similarity=round(ranked.similarity, 4),
            recency=round(ranked.recency, 4),
            date=ranked.date,
            title=ranked.title,
            snippets=ranked.texts,
        )


class MemoryList(_Model):
    memories: list[MemoryOut]

    @classmethod
    def of(cls, found: Iterable[RankedSession], room: int = ANSWER_ITEMS_BYTES) -> MemoryList:
        """The sessions, best first, with their snippets whole when they fit one answer; else
        the longer ones clipped to an equal share of what the shorter ones leave (k=50
        sessions of three long windows each are more than Lambda answers)."""
        memories = [MemoryOut.of(s) for s in found]
        sizes = [answer_bytes(s) for m in memories for s in m.snippets]
        bare = sum(answer_bytes(m.model_copy(update={"snippets": []})) for m in memories)
        share = _share(sizes, room - bare)
        if share is not None:
            for memory in memories:
                memory.snippets = [clipped(s, share) for s in memory.snippets]
        return cls(memories=memories)


def _share(sizes: list[int], room: int) -> int | None:
    """The most each of `sizes` may take for all of them to add up to at most `room`, the
    smaller ones whole; None when they fit as they are."""
    if sum(sizes) <= room:
        return None
    left, count = room, len(sizes)
    for size in sorted(sizes):
        if size * count > left:  # this one and the larger ones get an equal share
            break
        left, count = left - size, count - 1
    return max(left // count, 0)


def clipped(text: str, room: int) -> str:
    """`text` if it takes at most `room` bytes of an answer (answer_bytes), else its longest
    head that does with "…" after it."""
    if answer_bytes(text) <= room:
        return text
    low, high = 0, min(len(text), room)  # a character takes at least a byte
    while low < high:
        middle = (low + high + 1) // 2
        if answer_bytes(text[:middle] + "…") <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low] + "…"


class ProvenanceOut(_Out):
    session_id: str
    turn: int
    date: str


class RecordOut(_Out):
    record_id: str
    type: RecordType
    text: str
    subject: str = Field(
        default="", description="What it is about; a newer record on it supersedes this one."
    )
    category: RecordCategory | None = Field(
        default=None,
        description=(
            "A fact's or a preference's place in the profile block every chat prompt holds "
            "(health first, then identity and people, preferences, other; an event is not in "
            "it); none for summaries, open questions and a client's namespaced items."
        ),
    )
    status: Literal[RecordStatus.ACTIVE, RecordStatus.SUPERSEDED]
    origin: RecordOrigin
    created_at: str = Field(description="When it was said (or stated).")
    updated_at: str
    provenance: list[ProvenanceOut] = Field(
        default=[], description="The turns of past sessions it was drawn from."
    )
    superseded_by: str | None = Field(default=None, description="The record that replaced it.")
    valid_until: str | None = Field(default=None, description="When it was superseded.")
    namespace: list[str] = Field(
        default=list(PROFILE_NAMESPACE),
        description=(
            "The namespace it is in: a client's own (an agent's store), or the profile's "
            f"{list(PROFILE_NAMESPACE)}, where what is drawn from conversations goes."
        ),
    )
    score: float | None = Field(
        default=None,
        description="With a search query: how close it is (meaning and words), higher is closer.",
    )
    agent_id: str | None = Field(
        default=None, description="The agent its namespace is of (agent_id when stated)."
    )
    run_id: str | None = Field(
        default=None, description="The run its namespace is of (run_id when stated)."
    )
    expires_at: str | None = Field(
        default=None,
        description=(
            "When it expires (stated with ttl_seconds): from then on it is never returned, "
            "searched or recalled, and its key is free; none: it does not expire."
        ),
    )

    @field_validator("expires_at", mode="before")
    @classmethod
    def _iso_expiry(cls, value: Any) -> Any:
        return iso(datetime.fromtimestamp(value, UTC)) if isinstance(value, int) else value

    @field_validator("namespace", mode="before")
    @classmethod
    def _profile_when_none(cls, value: Any) -> Any:
        return list(value) if value else list(PROFILE_NAMESPACE)

    @field_validator("category", mode="before")
    @classmethod
    def _none_when_empty(cls, value: Any) -> Any:
        return value or None

    @model_validator(mode="after")
    def _scope(self) -> RecordOut:
        self.agent_id, self.run_id = scope_of(self.namespace)
        return self


class RecordEnvelope(_Model):
    record: RecordOut

    @classmethod
    def of(cls, record: MemoryRecord) -> RecordEnvelope:
        return cls(record=RecordOut.model_validate(record))


def record_bytes(record: MemoryRecord) -> int:
    """A record's size in a page of records as Lambda sends it (answer_bytes)."""
    return answer_bytes(RecordOut.model_validate(record))


def _scored(found: Iterable[tuple[MemoryRecord, float | None]]) -> list[RecordOut]:
    return [RecordOut.model_validate(r).model_copy(update={"score": s}) for r, s in found]


class RecordList(_Model):
    records: list[RecordOut]
    next_token: str | None = None

    @classmethod
    def of(cls, records: Iterable[MemoryRecord], next_token: str | None) -> RecordList:
        return cls(records=[RecordOut.model_validate(r) for r in records], next_token=next_token)

    @classmethod
    def found(cls, found: Iterable[MemoryRecord], at: SearchPosition) -> RecordList:
        """A search's records from `at`, as many as fit one answer; next_token holds the
        position of the rest of what was asked, if they did not all fit."""
        records = [RecordOut.model_validate(r) for r in found]
        kept = limits.fitting(records, answer_bytes, ANSWER_ITEMS_BYTES)
        rest = at.after(kept) if kept < len(records) else None
        return cls(records=records[:kept], next_token=rest.token() if rest else None)


class RecordPage(_Model):
    """The answer of POST /memories/records/search."""

    records: list[RecordOut]
    next_offset: int | None = Field(
        default=None,
        description=(
            "Set when the records asked for did not all fit one answer (at most 6 MB): the "
            "rest begin at this offset (ask again with it, and limit less the records received)."
        ),
    )

    @classmethod
    def found(cls, found: Iterable[tuple[MemoryRecord, float | None]], offset: int) -> RecordPage:
        records = _scored(found)
        kept = limits.fitting(records, answer_bytes, ANSWER_ITEMS_BYTES)
        return cls(
            records=records[:kept], next_offset=offset + kept if kept < len(records) else None
        )


def _token(data: dict[str, Any]) -> str:
    """An opaque next_token: `data` as JSON in URL-safe base64."""
    raw = json.dumps(data, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _token_data(token: str) -> Any:
    """What _token encoded (ValueError for what it cannot have made)."""
    return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


@dataclass(frozen=True)
class SearchPosition:
    """Where a page of GET /memories/records?q= starts in the ranking and where what the first
    request asked for ends (its limit): the next_token of a search cut by the answer's size."""

    offset: int
    until: int

    @property
    def limit(self) -> int:
        return self.until - self.offset

    def after(self, count: int) -> SearchPosition | None:
        moved = SearchPosition(self.offset + count, self.until)
        return moved if moved.limit > 0 else None

    def token(self) -> str:
        return _token({"offset": self.offset, "until": self.until})

    @classmethod
    def of(cls, token: str | None, limit: int) -> SearchPosition:
        """The position a search's next_token holds (the first `limit` without one)."""
        if not token:
            return cls(0, limit)
        try:
            data = _token_data(token)
            offset, until = data["offset"], data["until"]
            valid = set(data) == {"offset", "until"} and all(
                type(v) is int for v in (offset, until)
            )
            # A search's page holds at most 100 records (the limit's bound).
            valid = valid and 0 < offset < until <= 100
        except (ValueError, TypeError, KeyError, AttributeError):
            valid = False
        if not valid:
            raise BadRequest("next_token is not valid")
        return cls(offset, until)


# What a caller can state or correct: a fact or a preference, or an agent's memory (JSON).
RecordText = Annotated[str, Field(min_length=1, max_length=MAX_RECORD_CHARS, pattern=r"\S")]
NamespaceLabel = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAMESPACE_LABEL_CHARS,
        pattern=r"^[^\x1f]+$",
        description="A label (any characters but U+001F).",
    ),
]
Namespace = Annotated[
    list[NamespaceLabel],
    Field(
        max_length=MAX_NAMESPACE_DEPTH,
        description=(
            f"Labels, outermost first, at most {MAX_NAMESPACE_DEPTH}; {list(PROFILE_NAMESPACE)} "
            "(or none) is the profile's own."
        ),
    ),
]
# A namespace pattern of list_namespaces: "*" matches any one label.
NamespacePattern = Annotated[list[NamespaceLabel], Field(max_length=MAX_NAMESPACE_DEPTH)]


# Scoping like Mem0's agent_id and run_id (schema.AGENT_LABEL): sugar for a namespace prefix.
AgentScope = Annotated[
    str | None,
    identifier(
        "The agent (or application) the record is for, beside the caller: its namespace begins "
        f"with [{AGENT_LABEL!r}, agent_id]; a search with it stays inside that agent's records"
    ),
]
RunScope = Annotated[
    str | None,
    identifier(
        f"A run (a conversation) of the agent: the namespace goes on with [{RUN_LABEL!r}, "
        "run_id]; a search with agent_id and without run_id covers every run"
    ),
]


class CreateRecordRequest(_Strict):
    text: RecordText = Field(description="What to remember, e.g. 'I moved to Porto'.")
    type: Literal["fact", "preference"] | None = Field(
        default=None, description="fact or preference; inferred when absent."
    )
    record_id: (
        Annotated[
            str,
            identifier(
                "The client's own id for the record (a key of an agent's store): the request then "
                "creates the record with that id or replaces the text of the one that has it"
            ),
        ]
        | None
    ) = None
    agent_id: AgentScope = None
    run_id: RunScope = None
    namespace: Namespace | None = Field(
        default=None,
        description=(
            "The client's namespace of the record (with record_id: the key is unique per "
            "caller, not per namespace). Merging, supersession and search stay inside one "
            "namespace; outside the profile's, a record is an item of its own: it never "
            "merges with, supersedes or is superseded by another."
        ),
    )
    ttl_seconds: int | None = Field(
        default=None,
        ge=1,
        le=MAX_RECORD_TTL_SECONDS,
        description=(
            "The record expires this many seconds from now: from then on it is never returned, "
            "searched, recalled or listed, and its record_id is free (a later request creates a "
            "new record); DynamoDB's TTL deletes it later. Such a record is an item of its own: "
            "it never merges with, supersedes or is superseded by another. With record_id, a "
            "request without ttl_seconds makes the record lasting again."
        ),
    )


class SearchRecordsRequest(_Strict):
    query: str | None = Field(
        default=None,
        min_length=1,
        max_length=4000,
        description="Ranks by meaning and words (each record gets a score); none: newest first.",
    )
    agent_id: AgentScope = None
    run_id: RunScope = None
    namespace_prefix: Namespace = Field(
        default=[],
        description=(
            "Only records of namespaces beginning with these labels (after agent_id's and "
            "run_id's, when given)."
        ),
    )
    filter: dict[str, Any] | None = Field(
        default=None,
        description=(
            "Conditions on the record's value: a record whose text is a JSON object is that "
            'object, any other is {"text": text} (so is JSON Python cannot parse: nested '
            "deeper than about 1,000 levels, or an integer of over 4,300 digits). A field "
            "equals a value, or meets operators $eq, $ne, $gt, $gte, $lt, $lte (numbers compare "
            "exactly whatever their size); nested objects match field by field, lists element "
            "by element (LangGraph's store filters). 400 for an unknown operator (a top-level "
            "$or among them), an object mixing operators and fields, an operator inside an "
            f"operand, nesting deeper than {MAX_RECORD_FILTER_DEPTH} levels (the filter is the "
            f"first) or more than {MAX_RECORD_FILTER_VALUES} keys and values in all."
        ),
    )
    type: RecordType | None = Field(default=None, description="Only records of this type.")
    include_history: bool = Field(default=False, description="Also records a newer one superseded.")
    limit: int = Field(default=10, ge=1, le=100)
    offset: int = Field(default=0, ge=0, le=10_000)


class ListNamespacesRequest(_Strict):
    prefix: NamespacePattern = Field(default=[], description="Namespaces beginning with these.")
    suffix: NamespacePattern = Field(default=[], description="Namespaces ending with these.")
    max_depth: int | None = Field(
        default=None, ge=1, description="Namespaces cut to this many labels (each once)."
    )
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class NamespaceList(_Model):
    namespaces: list[list[str]]
    next_offset: int | None = Field(
        default=None,
        description=(
            "Set when the namespaces asked for did not all fit one answer (at most 6 MB): the "
            "rest begin at this offset."
        ),
    )

    @classmethod
    def found(cls, found: Iterable[Sequence[str]], offset: int) -> NamespaceList:
        namespaces = [list(ns) for ns in found]
        kept = limits.fitting(namespaces, answer_bytes, ANSWER_ITEMS_BYTES)
        return cls(
            namespaces=namespaces[:kept],
            next_offset=offset + kept if kept < len(namespaces) else None,
        )


class UpdateRecordRequest(_Strict):
    text: RecordText = Field(description="The corrected text; it is embedded again.")


class DeletionStatus(_Out):
    complete: bool = Field(
        description="Everything the caller deleted or forgot is physically gone from storage."
    )
    sessions_pending: int = Field(description="Deleted sessions whose purge has not finished.")
    forget_requests_pending: int = Field(
        description="Forget requests whose sessions are not all queued for purging yet."
    )


class ErrorBody(_Model):
    code: str
    message: str


class ErrorEnvelope(_Model):
    error: ErrorBody


# --- hand-off to a person -----------------------------------------------------------------------


class HandoffRequest(_Strict):
    note: str | None = Field(
        default=None,
        max_length=1000,
        description=(
            "What the user wants help with: kept with the session for the agent while it is "
            "handed off (never in the hand-off event)."
        ),
    )


class AgentReplyRequest(_Strict):
    content: str = Field(
        min_length=1, max_length=MAX_STORED_RESPONSE_CHARS, description="The agent's reply."
    )
    client_message_id: ClientMessageId | None = None


class AgentSessionOut(SessionOut):
    user_id: str = Field(description="The user the session belongs to.")

    @classmethod
    def of(cls, session: Session) -> AgentSessionOut:
        shown = SessionOut.model_validate(session).model_dump()
        return cls(**shown, user_id=caller_of(session.user_id))


class AgentSessionList(_Model):
    sessions: list[AgentSessionOut]
    next_token: str | None = None

    @classmethod
    def of(cls, page: Page[Session]) -> AgentSessionList:
        return cls(sessions=[AgentSessionOut.of(s) for s in page.items], next_token=page.next_token)


class AgentSessionEnvelope(_Model):
    session: AgentSessionOut

    @classmethod
    def of(cls, session: Session) -> AgentSessionEnvelope:
        return cls(session=AgentSessionOut.of(session))


class AgentSessionView(_Model):
    session: AgentSessionOut
    messages: list[TurnOut]
    next_token: str | None = None

    @classmethod
    def of(cls, session: Session, page: Page[Turn]) -> AgentSessionView:
        return cls(
            session=AgentSessionOut.of(session),
            messages=[TurnOut.model_validate(t) for t in page.items],
            next_token=page.next_token,
        )


# --- LangGraph checkpoints (services/conversation/checkpoints.py) ---------------------------------

# Each value as LangGraph's serde wrote it: its type tag ("msgpack", "json", "bytes", "empty"...)
# and its bytes in standard base64. The server stores them and never reads inside.
Base64Data = Annotated[
    str,
    # No length here: the request's size is bounded by the API (6 MB), and the service refuses
    # what is over a checkpoint's limits with a 413 that says which.
    Field(pattern=r"^[A-Za-z0-9+/]*={0,2}$", description="The bytes, in standard base64."),
]
SerdeType = Annotated[str, Field(min_length=1, max_length=64, description="The serde's type tag.")]
ChannelName = Annotated[str, Field(min_length=1, max_length=256)]
ChannelVersion = Annotated[str, Field(min_length=1, max_length=128)]
CheckpointNs = Annotated[
    str,
    Field(
        max_length=1024,
        description="The checkpoint namespace: empty for the graph, 'node:task_id|...' for a "
        "subgraph.",
    ),
]
CheckpointId = Annotated[str, identifier("A checkpoint id (LangGraph's: a UUID v6)")]


def _bytes_of(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        raise BadRequest("data is not valid base64") from None


class SerializedValue(_Strict):
    type: SerdeType
    data: Base64Data

    def blob(self) -> Blob:
        return Blob(self.type, _bytes_of(self.data))

    @classmethod
    def of(cls, blob: Blob) -> SerializedValue:
        return cls(type=blob.type, data=base64.b64encode(blob.data).decode("ascii"))


class ChannelValueIn(_Strict):
    channel: ChannelName
    version: ChannelVersion
    type: SerdeType
    data: Base64Data


class PutCheckpointRequest(_Strict):
    checkpoint_ns: CheckpointNs = ""
    parent_checkpoint_id: CheckpointId | None = Field(
        default=None, description="The checkpoint this one follows (LangGraph's parent_config)."
    )
    checkpoint: SerializedValue = Field(description="The checkpoint without channel_values.")
    metadata: SerializedValue = Field(description="Its metadata, as the serde wrote it.")
    metadata_json: dict[str, Any] = Field(
        default_factory=dict,
        description="The same metadata as JSON: what list filters compare (top-level keys); "
        f"nested at most {MAX_CHECKPOINT_JSON_DEPTH} levels deep.",
    )
    channel_versions: dict[ChannelName, ChannelVersion] = Field(
        description="Every channel of the checkpoint and the version of its value (with the "
        f"checkpoint and its metadata, at most {MAX_CHECKPOINT_ITEM_BYTES} bytes: 413 above)."
    )
    blobs: list[ChannelValueIn] = Field(
        default_factory=list,
        max_length=1000,
        description="The values of the channels that changed (new versions); the others are "
        "read from earlier checkpoints of the namespace at the versions named.",
    )


class PendingWriteIn(_Strict):
    idx: int = Field(
        ge=-1000, le=1_000_000, description="Its index in the task's writes (<0: special)."
    )
    channel: ChannelName
    type: SerdeType
    data: Base64Data


class PutWritesRequest(_Strict):
    checkpoint_ns: CheckpointNs = ""
    task_id: Annotated[str, Field(min_length=1, max_length=256)]
    task_path: Annotated[str, Field(max_length=1024)] = ""
    writes: list[PendingWriteIn] = Field(max_length=1000)


class CheckpointRef(_Model):
    checkpoint_ns: str
    checkpoint_id: str
    size: int = Field(description="The bytes of the checkpoint's channel values.")


class ChannelValueOut(_Model):
    channel: str
    version: str
    type: str
    data: str


class PendingWriteOut(_Model):
    task_id: str
    idx: int
    channel: str
    type: str
    data: str
    task_path: str


class CheckpointOut(_Model):
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None = None
    checkpoint: SerializedValue
    metadata: SerializedValue
    channel_versions: dict[str, str]
    created_at: str
    values: list[ChannelValueOut]
    writes: list[PendingWriteOut]

    @classmethod
    def of(cls, found: CheckpointTuple) -> CheckpointOut:
        c = found.checkpoint
        return cls(
            checkpoint_ns=c.checkpoint_ns,
            checkpoint_id=c.checkpoint_id,
            parent_checkpoint_id=c.parent_checkpoint_id,
            checkpoint=SerializedValue.of(c.checkpoint),
            metadata=SerializedValue.of(c.metadata),
            channel_versions=c.channel_versions,
            created_at=c.created_at,
            values=[
                ChannelValueOut(
                    channel=channel,
                    version=c.channel_versions[channel],
                    type=blob.type,
                    data=base64.b64encode(blob.data).decode("ascii"),
                )
                for channel, blob in found.values.items()
            ],
            writes=[
                PendingWriteOut(
                    task_id=w.task_id,
                    idx=w.idx,
                    channel=w.channel,
                    type=w.value.type,
                    data=base64.b64encode(w.value.data).decode("ascii"),
                    task_path=w.task_path,
                )
                for w in found.writes
            ],
        )


class CheckpointEnvelope(_Model):
    checkpoint: CheckpointOut


class CheckpointList(_Model):
    checkpoints: list[CheckpointOut]
    next_before: str | None = Field(
        default=None,
        description="More may follow: the id of the last checkpoint of the page (a page "
        "carries what fits one answer, at most 6 MB). Ask again with next_token, which also "
        "says its namespace: before=next_before skips, in a listing of every namespace, a "
        "checkpoint of another namespace with that id.",
    )
    next_token: str | None = Field(
        default=None,
        description="More may follow: ask again with next_token (and the same checkpoint_ns, "
        "filter and limit) for the next page.",
    )

    @classmethod
    def page(
        cls, found: Sequence[CheckpointTuple], next_position: ListPosition | None
    ) -> CheckpointList:
        return cls(
            checkpoints=[CheckpointOut.of(t) for t in found],
            next_before=next_position.checkpoint_id if next_position else None,
            next_token=(
                _token({"id": next_position.checkpoint_id, "ns": next_position.checkpoint_ns})
                if next_position
                else None
            ),
        )


def list_position(token: str | None) -> ListPosition | None:
    """Where a listing's next_token says its next page starts (None without one)."""
    if not token:
        return None
    try:
        data = _token_data(token)
        position = ListPosition(data["id"], data["ns"])
        valid = set(data) == {"id", "ns"} and all(isinstance(v, str) for v in position)
    except (ValueError, TypeError, KeyError, AttributeError):
        valid = False
    if not valid or not is_identifier(position.checkpoint_id):
        raise BadRequest("next_token is not valid")
    return position


def checkpoint_bytes(found: CheckpointTuple) -> int:
    """A listed checkpoint's size in the answer: its state, values and writes, in base64."""
    return answer_bytes(CheckpointOut.of(found))


def models() -> list[type[BaseModel]]:
    """Every model this module defines."""
    return [
        model
        for model in list(globals().values())
        if isinstance(model, type) and issubclass(model, BaseModel) and model.__module__ == __name__
    ]


def build_deferred() -> None:
    """Build now the validators of every model here that has not been used yet (they are
    deferred to first use), for an init that no request waits for (SnapStart)."""
    for model in models():
        if not model.__pydantic_complete__:
            model.model_rebuild(force=True)
