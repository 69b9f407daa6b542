"""What the API answers, as frozen dataclasses. Parsing is tolerant: fields the API adds later
are ignored and optional fields it leaves out take their defaults, so an older client keeps
working against a newer server. Times stay ISO 8601 strings, as the API sends them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MetadataValue = str | int | float | bool


def _str(data: Mapping[str, Any], key: str, default: str = "") -> str:
    value = data.get(key)
    return default if value is None else str(value)


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return None if value is None else str(value)


def _int(data: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = data.get(key)
    return default if value is None or isinstance(value, bool) else int(value)


def _opt_int(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    return None if value is None or isinstance(value, bool) else int(value)


def _opt_float(data: Mapping[str, Any], key: str) -> float | None:
    value = data.get(key)
    return None if value is None or isinstance(value, bool) else float(value)


def _float(data: Mapping[str, Any], key: str) -> float:
    value = _opt_float(data, key)
    return 0.0 if value is None else value


def _items(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


@dataclass(frozen=True)
class Session:
    """A conversation: status OPEN, ENDED, CONSOLIDATED or FAILED. While it is handed to a
    person, handoff_state is "WAITING" (no agent answered yet) or "ACTIVE"."""

    session_id: str
    name: str = ""
    status: str = "OPEN"
    started_at: str = ""
    last_active_at: str = ""
    ended_at: str | None = None
    num_turns: int = 0
    # The session this one continues (create_session(continue_from=...)).
    continued_from: str | None = None
    # Hand-off to a person: the state (None: the bot answers), why, since when, who answered.
    handoff_state: str | None = None
    handoff_reason: str | None = None
    handoff_at: str | None = None
    handoff_agent: str | None = None
    # What the user asked a person for (request_handoff's note), while handed off.
    handoff_note: str | None = None
    # The user the session belongs to (the agents' views only).
    user_id: str | None = None
    # Your own id of the conversation (ensure_session), which names its newest session.
    client_id: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Session:
        """A Session from the API's JSON object."""
        return cls(
            session_id=_str(data, "session_id"),
            name=_str(data, "name"),
            status=_str(data, "status", "OPEN"),
            started_at=_str(data, "started_at"),
            last_active_at=_str(data, "last_active_at"),
            ended_at=_opt_str(data, "ended_at"),
            num_turns=_int(data, "num_turns"),
            continued_from=_opt_str(data, "continued_from"),
            handoff_state=_opt_str(data, "handoff_state"),
            handoff_reason=_opt_str(data, "handoff_reason"),
            handoff_at=_opt_str(data, "handoff_at"),
            handoff_agent=_opt_str(data, "handoff_agent"),
            handoff_note=_opt_str(data, "handoff_note"),
            user_id=_opt_str(data, "user_id"),
            client_id=_opt_str(data, "client_id"),
        )


@dataclass(frozen=True)
class Source:
    """A memory an answer used: a past session, a record or a verified passage (`kind`
    "session", "record", "passage"), or a record of the profile block the prompt held
    ("profile": no score, it was not chosen by similarity)."""

    kind: str
    id: str
    title: str | None = None
    date: str | None = None
    score: float | None = None
    doc_id: str | None = None
    passage_id: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Source:
        """A Source from the API's JSON object."""
        return cls(
            kind=_str(data, "kind"),
            id=_str(data, "id"),
            title=_opt_str(data, "title"),
            date=_opt_str(data, "date"),
            score=_opt_float(data, "score"),
            doc_id=_opt_str(data, "doc_id"),
            passage_id=_opt_str(data, "passage_id"),
        )


@dataclass(frozen=True)
class Feedback:
    """A caller's rating of a turn's answer: "up" or "down", with an optional comment."""

    rating: str
    comment: str | None = None
    at: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Feedback:
        """A Feedback from the API's JSON object."""
        return cls(
            rating=_str(data, "rating"), comment=_opt_str(data, "comment"), at=_str(data, "at")
        )


@dataclass(frozen=True)
class Sentiment:
    """The sentiment of what the user said: "positive", "negative" or "neutral", and a score
    from -1 to 1."""

    label: str
    score: float = 0.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Sentiment:
        """A Sentiment from the API's JSON object."""
        return cls(
            label=_str(data, "label"),
            score=_float(data, "score"),
        )


@dataclass(frozen=True)
class Turn:
    """One exchange of a session: the user's input and the answer (None while `pending`).

    origin is "chat" for a message the server's model answered, "client" for a turn stored
    by the caller (store_turn), "agent" for a person's reply while the session was handed off
    (its text is the response; for_agent marks the user's messages sent meanwhile)."""

    turn: int
    input: str
    response: str | None = None
    intent: str = "chat"
    sources: tuple[Source, ...] = ()
    created_at: str = ""
    client_message_id: str | None = None
    pending: bool = False
    degraded: bool = False
    # The answer was stopped while it was written (the reader closed its stream): the response
    # is what had been written by then.
    stopped: bool = False
    origin: str = "chat"
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    feedback: Feedback | None = None
    sentiment: Sentiment | None = None
    agent_id: str | None = None
    for_agent: bool = False
    # Stacked messages: the later turn whose one answer covered this message too (this turn
    # then has no response), and, as send_message returns it, that turn itself.
    answered_by: int | None = None
    answer: Turn | None = None
    # Your framework's own messages stored with the turn (store_turn(messages=...)), verbatim.
    messages: tuple[Mapping[str, Any], ...] | None = None

    @property
    def reply(self) -> str | None:
        """The answer to this message: its own response, or the one of the turn that answered
        it together with the messages sent after it."""
        if self.response is None and self.answer is not None:
            return self.answer.response
        return self.response

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Turn:
        """A Turn from the API's JSON object."""
        feedback = data.get("feedback")
        metadata = data.get("metadata")
        sentiment = data.get("sentiment")
        return cls(
            turn=_int(data, "turn"),
            input=_str(data, "input"),
            response=_opt_str(data, "response"),
            intent=_str(data, "intent", "chat"),
            sources=tuple(Source.from_json(s) for s in _items(data, "sources")),
            created_at=_str(data, "created_at"),
            client_message_id=_opt_str(data, "client_message_id"),
            pending=bool(data.get("pending", False)),
            degraded=bool(data.get("degraded", False)),
            stopped=bool(data.get("stopped", False)),
            origin=_str(data, "origin", "chat"),
            metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
            feedback=Feedback.from_json(feedback) if isinstance(feedback, Mapping) else None,
            sentiment=Sentiment.from_json(sentiment) if isinstance(sentiment, Mapping) else None,
            agent_id=_opt_str(data, "agent_id"),
            for_agent=bool(data.get("for_agent", False)),
            answered_by=_opt_int(data, "answered_by"),
            messages=(
                tuple(m for m in messages if isinstance(m, Mapping))
                if isinstance(messages := data.get("messages"), list)
                else None
            ),
        )


@dataclass(frozen=True)
class HandoffView:
    """What an agent reads of a handed-off session: the session, a page of its turns (newest
    first unless asked otherwise) and the token of the next page."""

    session: Session
    messages: tuple[Turn, ...] = ()
    next_token: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HandoffView:
        """A HandoffView from the API's JSON object."""
        session = data.get("session")
        return cls(
            session=Session.from_json(session if isinstance(session, Mapping) else {}),
            messages=tuple(Turn.from_json(t) for t in _items(data, "messages")),
            next_token=_opt_str(data, "next_token"),
        )


@dataclass(frozen=True)
class Memory:
    """A consolidated past session that matched a search, with its best snippets."""

    session_id: str
    score: float = 0.0
    similarity: float = 0.0
    recency: float = 0.0
    date: str = ""
    title: str = ""
    snippets: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Memory:
        """A Memory from the API's JSON object."""
        return cls(
            session_id=_str(data, "session_id"),
            score=_float(data, "score"),
            similarity=_float(data, "similarity"),
            recency=_float(data, "recency"),
            date=_str(data, "date"),
            title=_str(data, "title"),
            snippets=tuple(str(s) for s in _items(data, "snippets")),
        )


@dataclass(frozen=True)
class Provenance:
    """Where a record was drawn from: a session's turn, and its date."""

    session_id: str
    turn: int
    date: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Provenance:
        """A Provenance from the API's JSON object."""
        return cls(
            session_id=_str(data, "session_id"), turn=_int(data, "turn"), date=_str(data, "date")
        )


@dataclass(frozen=True)
class Record:
    """A fact, preference or session summary of the caller's profile; a SUPERSEDED one is
    history (valid_until, superseded_by)."""

    record_id: str
    type: str
    text: str
    subject: str = ""
    status: str = "ACTIVE"
    origin: str = ""
    created_at: str = ""
    updated_at: str = ""
    provenance: tuple[Provenance, ...] = ()
    superseded_by: str | None = None
    valid_until: str | None = None
    # The namespace it is in: ("profile",) is the profile's own (what chats taught).
    namespace: tuple[str, ...] = ("profile",)
    # With a search query: how close it is (meaning and words), higher is closer.
    score: float | None = None
    # When it expires (ISO 8601, UTC), if it was stated with ttl_seconds; None: never.
    expires_at: str | None = None
    # The agent (and run) its namespace is of, when stated with agent_id (and run_id).
    agent_id: str | None = None
    run_id: str | None = None
    # A fact's or a preference's place in the profile block every chat prompt holds ("health",
    # "identity", "people", "preference", "other"; "event": not in it); None for the others.
    category: str | None = None
    # False when it was stated with index=False: search by meaning skips it.
    indexed: bool = True

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        """A Record from the API's JSON object."""
        return cls(
            record_id=_str(data, "record_id"),
            type=_str(data, "type"),
            text=_str(data, "text"),
            subject=_str(data, "subject"),
            status=_str(data, "status", "ACTIVE"),
            origin=_str(data, "origin"),
            created_at=_str(data, "created_at"),
            updated_at=_str(data, "updated_at"),
            provenance=tuple(Provenance.from_json(p) for p in _items(data, "provenance")),
            superseded_by=_opt_str(data, "superseded_by"),
            valid_until=_opt_str(data, "valid_until"),
            namespace=tuple(str(label) for label in data.get("namespace") or ("profile",)),
            score=_opt_float(data, "score"),
            expires_at=_opt_str(data, "expires_at"),
            agent_id=_opt_str(data, "agent_id"),
            run_id=_opt_str(data, "run_id"),
            category=_opt_str(data, "category"),
            indexed=data.get("indexed") is not False,
        )


@dataclass(frozen=True)
class DeletionStatus:
    """Whether the physical removal of what the caller deleted or forgot has finished."""

    complete: bool
    sessions_pending: int = 0
    forget_requests_pending: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeletionStatus:
        """A DeletionStatus from the API's JSON object."""
        return cls(
            complete=bool(data.get("complete", False)),
            sessions_pending=_int(data, "sessions_pending"),
            forget_requests_pending=_int(data, "forget_requests_pending"),
        )
