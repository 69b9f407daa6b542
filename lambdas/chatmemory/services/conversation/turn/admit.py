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
from chatmemory.services.access import Found, owned_session
from chatmemory.services.conversation.turn.context import (
    ChatDeps,
    ChatPolicy,
    StopSignal,
    TurnContext,
)
from chatmemory.services.conversation.turns import check_text, earlier_turn


class Admitted(NamedTuple):
    """A message admitted: its turn's context, and the turn an earlier request with its
    client_message_id stored (None: a new message)."""

    context: TurnContext
    stored: Turn | None


def admit(
    deps: ChatDeps,
    policy: ChatPolicy,
    *,
    user_id: str,
    session_id: str,
    content: str,
    client_message_id: str | None = None,
    window_turns: int | None = None,
    stream: bool = False,
    stop: StopSignal | None = None,
    found: Found = None,
) -> Admitted:
    """The message's turn context once its fields, its session and its id are checked (its
    text as the input transforms leave it); `found`: the session and the caller's state as
    this request read them already (None: read them now)."""
    content = transformed(policy, content)
    window = check_request(policy, content, window_turns)
    session = owned_session(deps.memory, user_id, session_id, found=found)
    stored = earlier_turn(deps.memory, session, client_message_id, content)
    if stored is None and session.status != SessionStatus.OPEN:
        raise SessionEnded(f"session {session_id} is {session.status.lower()}; start a new one")
    context = TurnContext(
        deps,
        policy,
        user_id,
        session,
        content,
        client_message_id,
        window,
        window_turns,
        stream,
        stop,
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
