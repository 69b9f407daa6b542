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

    def end_session(
        self, session_id: str, ended_at: str, *, idle_before: str | None = None
    ) -> Session:
        """OPEN -> ENDED (conditional). Raises SessionNotFound or Conflict if not OPEN (or,
        with idle_before, active since then)."""
        ...

    def idle_sessions(self, shard: int, before: str, limit: int) -> list[str]: ...

    def record_consolidation_failure(self, session_id: str, reason: str) -> int:
        """Count a failed consolidation attempt; returns the attempts so far."""
        ...

    def mark_failed(self, session_id: str, reason: str) -> None: ...

    def mark_consolidated(self, session_id: str, summary: str, at: str) -> None: ...

    def failed_sessions(self) -> list[str]: ...

    def reset_consolidation(self, session_id: str) -> None: ...

    def update_running_summary(
        self, session_id: str, summary: str, through_turn: int, expected_through: int
    ) -> bool: ...

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

    def turns_between(self, session_id: str, after: int, through: int) -> list[Turn]: ...

    def append_turn(self, session: Session, turn: Turn, *, keep_message_ids: int) -> Session:
        """Write `turn` as number num_turns + 1 together with the session counters, atomically.

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


class Clock(Protocol):
    def __call__(self) -> datetime: ...


@dataclass
class MemoryDoc:
    """One entry of a long-term index: a session summary, a transcript chunk or a passage.

    `doc_key` is deterministic (session id + part), so re-indexing overwrites."""

    doc_key: str
    user_id: str
    kind: str  # "summary" | "chunk" | "passage"
    text: str
    created_at: str
    embedding: list[float] = field(default_factory=list)
    session_id: str | None = None
    title: str = ""
    doc_id: str | None = None
    passage_id: str | None = None
    source: str | None = None
    turn_from: int | None = None
    turn_to: int | None = None


@dataclass
class Candidate:
    """A raw hit of one retrieval method; the shared ranking code fuses them."""

    doc: MemoryDoc
    vector_score: float | None = None  # cosine similarity of unit vectors
    lexical_score: float | None = None  # BM25


class LongTermIndex(Protocol):
    """What the OpenSearch adapter and the embedded index both do. `user_id=None` searches
    the shared index of verified passages."""

    def ensure_indexes(self) -> None: ...

    def upsert(self, index: str, docs: Sequence[MemoryDoc]) -> None: ...

    def vector_search(
        self, index: str, vector: Sequence[float], k: int, user_id: str | None
    ) -> list[Candidate]: ...

    def lexical_search(
        self, index: str, text: str, k: int, user_id: str | None
    ) -> list[Candidate]: ...

    def delete_session(self, user_id: str, session_id: str) -> None: ...

    def delete_user(self, user_id: str) -> None: ...


class Summarizer(Protocol):
    name: str

    def summarize(self, text: str) -> str: ...
