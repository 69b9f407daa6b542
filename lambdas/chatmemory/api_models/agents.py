"""The models of a hand-off to a person and of the agents' side (routes/agents.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import (
    Field,
)

from chatmemory.api_models.base import (
    MAX_STORED_RESPONSE_CHARS,
    ClientMessageId,
    _Envelope,
    _Listing,
    _Model,
    _Strict,
)
from chatmemory.api_models.sessions import SessionOut
from chatmemory.api_models.turns import TurnOut
from chatmemory.domain import (
    Page,
    Session,
    Turn,
    caller_of,
)

if TYPE_CHECKING:
    pass


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


class AgentSessionList(_Listing):
    sessions: list[AgentSessionOut]
    next_token: str | None = None


class AgentSessionEnvelope(_Envelope):
    session: AgentSessionOut


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
