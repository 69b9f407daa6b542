"""Admit: what is decided before the answer's first byte. The message's fields (its length, the
window asked for), the caller's session (another caller's, or none, answers 404), and whether
this message was sent before (its client_message_id known: the turn it stored is taken where its
state left it). A message to a session that has ended is refused here.
"""

from __future__ import annotations

from typing import NamedTuple

from chatmemory.domain import Turn
from chatmemory.errors import BadRequest, ConfigurationError, SessionEnded
from chatmemory.schema import SessionStatus
from chatmemory.services.access import owned_session
from chatmemory.services.conversation.turn.context import (
    ChatDeps,
    ChatPolicy,
    Message,
    TurnContext,
)
from chatmemory.services.conversation.turns import check_text, earlier_turn


class Admitted(NamedTuple):
    """A message admitted: its turn's context, and the turn an earlier request with its
    client_message_id stored (None: a new message)."""

    context: TurnContext
    stored: Turn | None


def admit(deps: ChatDeps, policy: ChatPolicy, message: Message) -> Admitted:
    """The message's turn context once its fields, its session and its id are checked (its
    text as the input transforms leave it)."""
    content = transformed(policy, message.content)
    window = check_request(policy, content, message.window_turns)
    session = owned_session(deps.memory, message.user_id, message.session_id, found=message.found)
    stored = earlier_turn(deps.memory, session, message.client_message_id, content)
    if stored is None and session.status != SessionStatus.OPEN:
        raise SessionEnded(
            f"session {message.session_id} is {session.status.lower()}; start a new one"
        )
    context = TurnContext(
        deps,
        policy,
        message.user_id,
        session,
        content,
        message.client_message_id,
        window,
        message.window_turns,
        message.stream,
        message.stop,
    )
    return Admitted(context, stored)


def transformed(policy: ChatPolicy, content: str) -> str:
    """The message's text through the deployer's input transforms, in order."""
    for transform in policy.input_transforms:
        content = transform(content)
        if not isinstance(content, str):
            raise ConfigurationError(f"an input transform gave {type(content).__name__}, not text")
    return content


def check_request(policy: ChatPolicy, content: str, window_turns: int | None) -> int:
    """The window the prompt holds, once the message's fields are within their limits."""
    check_text(content, "content", policy.max_input_chars)
    window = policy.window_turns if window_turns is None else window_turns
    if not 0 <= window <= policy.max_window_turns:
        raise BadRequest(f"window_turns must be between 0 and {policy.max_window_turns}")
    return window
