"""Domain types: sessions, turns and what a chat turn returns. Plain dataclasses, no I/O."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any


class Intent:
    CHAT = "chat"
    PAST = "past"
    VERIFIED = "verified"
    ALL = ("chat", "past", "verified")


def message_key(client_message_id: str) -> str:
    """A short fixed-size key for a client_message_id (12 characters of its SHA-256). The session
    item keeps the last 50 and every turn's write pays for the item's size: 50 UUIDs would add
    about 2 KB, that is 2 more write units per turn."""
    digest = hashlib.sha256(client_message_id.encode("utf-8")).digest()[:9]
    return base64.urlsafe_b64encode(digest).decode("ascii")


def owner_key(user_id: str, generation: int) -> str:
    """The key a caller's data is stored under: their id, then "<id>#<n>" after their n-th
    "forget everything". Caller ids never contain "#" (handlers.http.caller_id refuses them),
    so two callers never share a key."""
    return user_id if generation == 0 else f"{user_id}#{generation}"


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
    status: str
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

    def turn_of(self, client_message_id: str | None) -> int | None:
        """The turn that stored this client message, if it is among the recent ones."""
        if not client_message_id:
            return None
        return self.recent_messages.get(message_key(client_message_id))

    def public(self) -> dict[str, Any]:
        """The session object the API returns."""
        return {
            "session_id": self.session_id,
            "name": self.name,
            "status": self.status,
            "started_at": self.started_at,
            "last_active_at": self.last_active_at,
            "ended_at": self.ended_at,
            "num_turns": self.num_turns,
        }


@dataclass
class Source:
    """Where an answer came from: a past session or a verified passage."""

    kind: str  # "session" | "passage"
    id: str
    title: str = ""
    date: str | None = None
    score: float | None = None
    doc_id: str | None = None
    passage_id: str | None = None

    def public(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Turn:
    session_id: str
    turn: int
    user_id: str
    input: str
    response: str | None
    intent: str = Intent.CHAT
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
    degraded: bool = False
    expires_at: int | None = None

    def public(self) -> dict[str, Any]:
        """The turn object the API returns."""
        body: dict[str, Any] = {
            "turn": self.turn,
            "input": self.input,
            "response": self.response,
            "intent": self.intent,
            "sources": [s.public() for s in self.sources],
            "created_at": self.created_at,
            "client_message_id": self.client_message_id,
            "pending": self.pending,
            "degraded": self.degraded,
        }
        return body


@dataclass
class Page:
    """One page of a listing; `next_token` is opaque to clients."""

    items: list[Any]
    next_token: str | None = None
