"""The export and import documents of a session (routes/sessions.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
)

from chatmemory.api_models.base import (
    MAX_STORED_RESPONSE_CHARS,
    Score,
    Timestamp,
    _Model,
    answer_bytes,
)
from chatmemory.api_models.sessions import SessionOut
from chatmemory.api_models.turns import Metadata, TurnMessages, TurnOut, stored_messages
from chatmemory.domain import (
    Feedback,
    ImportedSession,
    Sentiment,
    Session,
    Source,
    Turn,
)
from chatmemory.schema import (
    EXPORT_FORMAT,
    MAX_INPUT_CHARS_LIMIT,
    Intent,
    Rating,
    SentimentLabel,
    SourceKind,
    TurnOrigin,
)

if TYPE_CHECKING:
    pass


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
            messages=stored_messages(self.messages),
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
