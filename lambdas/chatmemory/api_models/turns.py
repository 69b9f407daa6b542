"""The models of a message and a stored turn (routes/turns.py)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
)

from chatmemory.api_models.base import (
    MAX_STORED_RESPONSE_CHARS,
    ClientMessageId,
    Score,
    SourceOut,
    Timestamp,
    _Envelope,
    _Listing,
    _Out,
    _Strict,
)
from chatmemory.schema import (
    MAX_TURN_MESSAGES_BYTES,
    Intent,
    Rating,
    SentimentLabel,
    TurnOrigin,
)
from chatmemory.services.conversation.turns import ClientTurn

if TYPE_CHECKING:
    pass


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


def stored_messages(value: list[dict[str, Any]] | None) -> str | None:
    """A request's messages as a turn stores them (None: the request has none)."""
    return compact_json(value) if value is not None else None


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

    def said(self) -> ClientTurn:
        """The turn as the service stores it (its messages as compact JSON)."""
        said = self.model_dump(exclude={"messages"})
        return ClientTurn(**said, messages=stored_messages(self.messages))


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


class TurnEnvelope(_Envelope):
    turn: TurnOut


class MessageEnvelope(TurnEnvelope):
    answer: TurnOut | None = Field(
        default=None,
        description=(
            "When this message was answered together with messages sent after it: the turn "
            "that holds the answer (turn.answered_by)."
        ),
    )


class MessageList(_Listing):
    messages: list[TurnOut]
    next_token: str | None = None
