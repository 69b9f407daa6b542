"""Ports: the interfaces services depend on. Adapters implement them; tests pass fakes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from chatmemory.domain import Page, Session, Turn


class SessionStore(Protocol):
    def create_session(self, session: Session) -> None: ...

    def get_session(self, session_id: str, *, consistent: bool = True) -> Session | None: ...

    def list_sessions(self, user_id: str, limit: int, next_token: str | None) -> Page: ...

    def open_sessions_of(self, user_id: str) -> list[Session]: ...

    def end_session(self, session_id: str, ended_at: str) -> Session:
        """OPEN -> ENDED (conditional). Raises SessionNotFound or Conflict if not OPEN."""
        ...

    def delete_session(self, session_id: str) -> None:
        """Delete the session and every turn of it."""
        ...


class TurnStore(Protocol):
    def recent_turns(self, session_id: str, count: int) -> list[Turn]:
        """The last `count` turns, oldest first: one Query, however long the session."""
        ...

    def get_turn(self, session_id: str, turn: int) -> Turn | None: ...

    def list_turns(
        self, session_id: str, limit: int, next_token: str | None, ascending: bool
    ) -> Page: ...

    def all_turns(self, session_id: str) -> Iterator[Turn]:
        """Every turn, oldest first, paginated underneath."""
        ...

    def append_turn(self, session: Session, turn: Turn, *, keep_message_ids: int) -> Session:
        """Write `turn` as number session.num_turns + 1 together with the session counters, atomically.

        Raises Conflict when the session changed since it was read (another turn won the race),
        SessionEnded when it is no longer OPEN. Returns the updated session.
        """
        ...

    def complete_turn(self, turn: Turn) -> None:
        """Fill in the response of a pending turn (conditional on it still being pending)."""
        ...

    def import_session(self, session: Session, turns: Sequence[Turn]) -> None: ...


class ShortTermMemory(SessionStore, TurnStore, Protocol):
    """Both tables behind one adapter, because a turn is written atomically with its session."""


@dataclass
class Generation:
    text: str
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None


class TextGenerator(Protocol):
    name: str
    # The model's input limit in tokens; prompts are clipped to fit it.
    context_tokens: int

    def generate(
        self, prompt: str, *, max_new_tokens: int, stop: Sequence[str] = ()
    ) -> Generation: ...


class Embedder(Protocol):
    name: str
    dimension: int
    # How many texts one request may carry (1 for endpoints without batch input).
    max_batch: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@dataclass
class MemoryHit:
    """One retrieved long-term memory: a past session or a verified passage."""

    id: str
    text: str
    score: float
    session_id: str | None = None
    date: str | None = None
    title: str = ""
    doc_id: str | None = None
    passage_id: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


class LongTermMemory(Protocol):
    """Searchable memory that outlives a session (OpenSearch k-NN, or the embedded index)."""

    def search_sessions(self, user_id: str, query: str, k: int) -> list[MemoryHit]: ...

    def search_passages(self, query: str, k: int) -> list[MemoryHit]: ...

    def delete_session(self, user_id: str, session_id: str) -> None: ...

    def delete_user(self, user_id: str) -> None: ...


class Clock(Protocol):
    def __call__(self) -> datetime: ...
