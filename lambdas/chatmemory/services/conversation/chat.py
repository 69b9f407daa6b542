"""One chat turn (services/conversation/turn/: a pipeline of named stages over one context).

This module is what the rest of the code imports a turn by: the turn's settings and
dependencies, what it answers, and `post_message` (the buffered answer) and `open_turn` (the
same turn as events, for a streamed answer).

DynamoDB work per turn is constant: read the session, query the last N turns, write the turn
and the session counters in one transaction. A retry with the same client_message_id finds its
turn through the session item and never calls the model twice for a completed turn.
"""

from __future__ import annotations

from chatmemory.services.conversation.turn.context import (
    ChatDeps,
    ChatPolicy,
    Delta,
    Memory,
    MemoryUsed,
    Message,
    StopSignal,
    Stored,
    TurnEvent,
    TurnResult,
    expiry,
    store_client_turn,
    writing,
)
from chatmemory.services.conversation.turn.gather import NO_LONG_TERM_MEMORY, REMEMBERED, gap_note
from chatmemory.services.conversation.turn.pipeline import (
    collected,
    on_current_session,
    open_turn,
    post_message,
)

__all__ = [
    "NO_LONG_TERM_MEMORY",
    "REMEMBERED",
    "ChatDeps",
    "ChatPolicy",
    "Delta",
    "Memory",
    "MemoryUsed",
    "Message",
    "StopSignal",
    "Stored",
    "TurnEvent",
    "TurnResult",
    "collected",
    "expiry",
    "gap_note",
    "on_current_session",
    "open_turn",
    "post_message",
    "store_client_turn",
    "writing",
]
