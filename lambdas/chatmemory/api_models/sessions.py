"""The models of a session (routes/sessions.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import (
    Field,
)

from chatmemory.api_models.base import _Envelope, _Listing, _Out, _Strict, identifier
from chatmemory.schema import (
    HandoffReason,
    HandoffState,
    SessionStatus,
)

if TYPE_CHECKING:
    pass


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


class SessionEnvelope(_Envelope):
    session: SessionOut


class SessionList(_Listing):
    sessions: list[SessionOut]
    next_token: str | None = None
