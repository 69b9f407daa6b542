"""Storing turns: the next number of a session, atomically with its counters, for a chat turn
(answered by our model, see chat.py) and for a turn a client stores as it is (POST /turns:
an agent that answers with its own model and uses this service as its memory).

A stored turn costs what a chat turn costs without the model and the window: one read of the
session and the caller's state, one transaction for the turn and the session counters. A retry
with the same client_message_id finds its turn through the session item it reads anyway.
A turn stored without its response waits for it (`pending`) and gets it with PATCH, the way
OpenSearch's conversation memory pairs a message's input with its response; until then the
turn is memory like any other (consolidation and the rolling summary take its input).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from chatmemory.clock import iso
from chatmemory.domain import Feedback, Handoff, Session, Turn, TurnWrite, needs_handoff
from chatmemory.errors import (
    BadRequest,
    Conflict,
    HandoffChanged,
    PayloadTooLarge,
    SessionEnded,
    TurnNotFound,
)
from chatmemory.ports import Clock, SentimentAnalyzer, SessionTurns, TurnStore
from chatmemory.schema import Intent, Rating, SessionStatus, TurnOrigin
from chatmemory.services.access import Found, owned_session
from chatmemory.services.conversation.sentiment import analyze_input
from chatmemory.services.conversation.sessions import title_from


class AppendPolicy(NamedTuple):
    keep_message_ids: int = 50
    # Optimistic-concurrency retries when parallel turns race for the same turn number.
    attempts: int = 30


@dataclass
class Stored:
    turn: Turn
    # True when the turn was stored by an earlier request with the same client_message_id.
    replayed: bool = False
    # Why the input has no sentiment although an analyzer is configured (for the log).
    sentiment_error: str = ""


def append_next(
    memory: SessionTurns,
    caller: str,
    session: Session,
    turn: Turn,
    *,
    policy: AppendPolicy,
    sleep: Callable[[float], None],
    at: str | None = None,
    stack: bool = False,
    handoff: Handoff | None = None,
) -> Stored:
    """Write the turn as the session's next number; on a lost race, re-read and try the next
    number (a session deleted or forgotten meanwhile then answers 404). With `stack`, a chat
    message written before its answer (services/conversation/stacking.py). With `handoff`, the write
    changes the session's hand-off state too; a session handed off (or back) meanwhile so that the
    turn may not be written as it is raises HandoffChanged (services/conversation/handoff.py)."""
    for attempt in range(policy.attempts):
        turn.turn = session.num_turns + 1
        rename = None
        answered_or_own = not turn.pending or turn.origin == TurnOrigin.CLIENT
        if session.auto_named and turn.intent == Intent.CHAT and answered_or_own:
            rename = title_from(turn.input)  # the first message with something in it
        try:
            write = TurnWrite(policy.keep_message_ids, rename, at, stack, handoff)
            memory.append_turn(session, turn, write)
            return Stored(turn)
        except Conflict:
            session = owned_session(memory, caller, turn.session_id)
            # A concurrent request with the same client_message_id may have stored it first.
            stored = earlier_turn(memory, session, turn.client_message_id, turn.input)
            if stored is not None:
                return Stored(stored, replayed=True)
            if session.status != SessionStatus.OPEN:
                raise SessionEnded(f"session {session.session_id} ended meanwhile") from None
            handed_off = needs_handoff(turn)
            if handed_off is not None and bool(session.handoff_state) != handed_off:
                what = "handed to a person" if session.handoff_state else "handed back"
                raise HandoffChanged(f"the session was {what} meanwhile", session) from None
            sleep(random.uniform(0, min(0.2, 0.005 * 2**attempt)))  # full jitter
    raise Conflict("the session is busy with other messages; retry with the same client_message_id")


def earlier_turn(
    memory: TurnStore, session: Session, client_message_id: str | None, content: str
) -> Turn | None:
    """The turn an earlier request with this client_message_id stored, if the session still
    remembers the id. A retry must carry the message it retries: one id reused for another
    text is a client bug that would otherwise silently answer with the first message's turn."""
    known = session.turn_of(client_message_id)
    stored = memory.get_turn(session.session_id, known) if known is not None else None
    if stored is not None and stored.input != content:
        raise Conflict(
            f"client_message_id was already used for a different message (turn {stored.turn}); "
            "use a new id for a new message"
        )
    return stored


def check_text(text: str, name: str, max_chars: int) -> None:
    """What the user said, as a request carries it: not blank, not over the configured limit."""
    if not text or not text.strip():
        raise BadRequest(f"{name} must not be empty")
    if len(text) > max_chars:
        raise PayloadTooLarge(f"{name} is longer than {max_chars} characters")


class TurnWriting(NamedTuple):
    """How a turn is written now: the clock, the append's retries (`policy`, `sleep` between
    them) and when the turn expires (None: kept)."""

    clock: Clock
    sleep: Callable[[float], None]
    policy: AppendPolicy = AppendPolicy()
    expires_at: int | None = None


class ClientTurn(NamedTuple):
    """A turn as a client hands it over to be stored (POST /turns, the earlier exchanges of a
    chat completion): what the user said and, if there is one yet, the answer; `messages`: the
    client framework's own messages it stands for, as compact JSON."""

    input: str
    response: str | None = None
    client_message_id: str | None = None
    created_at: str | None = None
    metadata: Mapping[str, Any] = MappingProxyType({})
    messages: str | None = None


def store_turn(
    memory: SessionTurns,
    said: ClientTurn,
    writing: TurnWriting,
    *,
    user_id: str,
    session_id: str,
    max_input_chars: int,
    sentiment: SentimentAnalyzer | None = None,
    found: Found = None,
) -> Stored:
    """Store the turn a client `said` (no model call) as the session's next turn, with
    the sentiment of its input; `found`: the session and the caller's state as this request
    read them already (None: read them now)."""
    check_text(said.input, "input", max_input_chars)
    session = owned_session(memory, user_id, session_id, found=found)
    stored = earlier_turn(memory, session, said.client_message_id, said.input)
    if stored is not None:
        return Stored(stored, replayed=True)
    if session.status != SessionStatus.OPEN:
        raise SessionEnded(f"session {session_id} is {session.status.lower()}; start a new one")
    now = iso(writing.clock())
    scored, sentiment_error = analyze_input(sentiment, said.input)
    turn = Turn(
        session_id=session_id,
        turn=0,
        user_id=session.user_id,
        input=said.input,
        response=said.response or None,
        created_at=said.created_at or now,
        client_message_id=said.client_message_id,
        pending=not said.response,
        origin=TurnOrigin.CLIENT,
        metadata=dict(said.metadata),
        sentiment=scored,
        expires_at=writing.expires_at,
        messages=said.messages,
    )
    appended = append_next(
        memory, user_id, session, turn, policy=writing.policy, sleep=writing.sleep, at=now
    )
    if not appended.replayed:
        appended.sentiment_error = sentiment_error
    return appended


def get_turn(memory: SessionTurns, user_id: str, session_id: str, number: int) -> Turn:
    owned_session(memory, user_id, session_id)
    return _stored_turn(memory, session_id, number)


def _stored_turn(memory: TurnStore, session_id: str, number: int) -> Turn:
    turn = memory.get_turn(session_id, number) if number >= 1 else None
    if turn is None:
        raise TurnNotFound(f"turn {number} of session {session_id} not found")
    return turn


def update_turn(
    memory: SessionTurns,
    *,
    user_id: str,
    session_id: str,
    number: int,
    response: str | None,
    metadata: dict[str, Any] | None,
    messages: str | None = None,
) -> Turn:
    """Give a turn stored without a response its response, and/or replace its metadata.

    A response is accepted once, only for a turn a client stored, and only while the session
    is open (after it ended, consolidation has taken it without the answer). Sending the same
    response again is a no-op, so a retried PATCH is safe; another one is a conflict."""
    if response is None and metadata is None and messages is None:
        raise BadRequest("send a response, metadata, messages or some of them")
    session = owned_session(memory, user_id, session_id)
    turn = _stored_turn(memory, session_id, number)
    if response is not None and turn.response != response:
        if turn.origin != TurnOrigin.CLIENT:
            raise Conflict(
                f"turn {number} is answered by this service's model; only a turn stored with "
                "POST /turns takes a response"
            )
        if not turn.pending:
            raise Conflict(f"turn {number} already has a response")
        if session.status != SessionStatus.OPEN:
            raise SessionEnded(f"session {session_id} ended before turn {number} got its response")
        turn.response, turn.pending = response, False
        if metadata is not None:
            turn.metadata = dict(metadata)
        if messages is not None:
            turn.messages = messages
        try:
            memory.complete_turn(turn)
        except Conflict:
            return _settled(memory, session_id, number, response)
        return turn
    values: dict[str, Any] = {}
    if metadata is not None:
        values["metadata"] = turn.metadata = dict(metadata)
    if messages is not None:
        values["messages"] = turn.messages = messages
    if values:
        memory.update_turn(session_id, number, values)
    return turn


def _settled(memory: TurnStore, session_id: str, number: int, response: str) -> Turn:
    """A concurrent PATCH answered the turn first: the same answer is this request's too."""
    stored = _stored_turn(memory, session_id, number)
    if stored.response != response:
        raise Conflict(f"turn {number} already has a response")
    return stored


def rate_turn(
    memory: SessionTurns,
    *,
    user_id: str,
    session_id: str,
    number: int,
    rating: Rating,
    comment: str | None,
    clock: Clock,
) -> Turn:
    """The caller's feedback on a turn's answer (replacing an earlier one), in any visible
    session: people rate answers after the conversation too."""
    turn = get_turn(memory, user_id, session_id, number)
    turn.feedback = Feedback(rating=str(rating), at=iso(clock()), comment=comment or None)
    memory.update_turn(session_id, number, {"feedback": asdict(turn.feedback)})
    return turn
