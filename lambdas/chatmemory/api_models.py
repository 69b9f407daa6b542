"""Request and response models of the chat API: they validate requests and generate the OpenAPI
document (`make openapi`), so the published contract is the code that runs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateSessionRequest(_Strict):
    name: str | None = Field(default=None, max_length=200, description="Display name.")
    end_previous: bool = Field(
        default=False,
        description="End the caller's open sessions first (which consolidates them).",
    )


class PostMessageRequest(_Strict):
    content: str = Field(
        description="The message. `/past ...` recalls past conversations, "
        "`/verified ...` answers from verified documents; anything else is chat."
    )
    client_message_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="Idempotency key: a retry with the same id returns the stored turn.",
    )
    window_turns: int | None = Field(
        default=None, ge=0, description="How many recent turns the model sees."
    )


class SourceOut(BaseModel):
    kind: Literal["session", "passage"] | str
    id: str
    title: str | None = None
    date: str | None = None
    score: float | None = None
    doc_id: str | None = None
    passage_id: str | None = None


class SessionOut(BaseModel):
    session_id: str
    name: str
    status: Literal["OPEN", "ENDED", "CONSOLIDATED", "FAILED"]
    started_at: str
    last_active_at: str
    ended_at: str | None = None
    num_turns: int


class SessionEnvelope(BaseModel):
    session: SessionOut


class SessionList(BaseModel):
    sessions: list[SessionOut]
    next_token: str | None = None


class TurnOut(BaseModel):
    turn: int
    input: str
    response: str | None = None
    intent: Literal["chat", "past", "verified"]
    sources: list[SourceOut] = []
    created_at: str
    client_message_id: str | None = None
    pending: bool = Field(
        default=False, description="The model failed; retry with the same client_message_id."
    )
    degraded: bool = Field(
        default=False, description="Answered without a component that was unavailable."
    )


class TurnEnvelope(BaseModel):
    turn: TurnOut


class MessageList(BaseModel):
    messages: list[TurnOut]
    next_token: str | None = None


class ExportedSession(SessionOut):
    running_summary: str = ""
    summary_through_turn: int = 0


class ExportDocument(BaseModel):
    format: str = "chatmemory.session.v1"
    session: ExportedSession
    messages: list[TurnOut]


class ImportMessage(BaseModel):
    input: str
    response: str | None = None
    intent: Literal["chat", "past", "verified"] = "chat"
    sources: list[dict[str, Any]] = []
    created_at: str | None = None


class ImportSession(BaseModel):
    name: str | None = None
    started_at: str | None = None
    running_summary: str | None = None
    summary_through_turn: int | None = None


class ImportDocument(BaseModel):
    """An exported session (extra fields of the export are accepted and ignored)."""

    format: str | None = None
    session: ImportSession = ImportSession()
    messages: list[ImportMessage]


class MemoryOut(BaseModel):
    session_id: str
    score: float
    similarity: float
    recency: float
    date: str
    title: str
    snippets: list[str]


class MemoryList(BaseModel):
    memories: list[MemoryOut]


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorEnvelope(BaseModel):
    error: ErrorBody
