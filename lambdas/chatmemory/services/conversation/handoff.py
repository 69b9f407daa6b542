"""Hand-off to a person: a session goes to a human agent without ending, and comes back.

A session is handed off on the user's request (POST /sessions/{id}/handoff, or the chat command
`/human [note]`), or by an automatic rule (off by default): `/verified` found nothing relevant,
or N consecutive user turns were negative. While it is handed off (state WAITING until an agent
replies, then ACTIVE) the user's messages are stored for the agent, unanswered (`for_agent`),
and the agents' replies are turns of their own (origin `agent`). When the agent hands it back,
the bot answers again with the whole conversation in its prompt (agent turns on an "Agent"
line). Each hand-off and hand-back publishes an event (EventBridge in AWS).

The state is on the session item and every change is one conditional write: a hand-off only
of an OPEN session with the bot, a hand-back only of a handed-off one, an agent's reply only
while handed off. Every turn's write is also conditional on the state it needs
(domain.needs_handoff): a bot's answer only while the session is with the bot, a message for the
agent only while it is handed off. So whatever interleaves, a user's message is answered by the
bot before the hand-off, or stored for the agent, never both and never lost:

* a hand-off that commits while the bot answers a message fails the answer's write; the message
  is then stored (or marked, if it was written first) for the agent and the answer dropped;
* a hand-back that commits while a message is stored for the agent fails that write; the bot
  then answers the message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from chatmemory.clock import iso
from chatmemory.domain import Handoff, Page, Session, Turn, caller_of
from chatmemory.errors import (
    BadRequest,
    ChatMemoryError,
    Conflict,
    HandoffChanged,
    SessionEnded,
    SessionNotFound,
)
from chatmemory.ports import (
    Clock,
    EventPublisher,
    HandoffStore,
    SentimentAnalyzer,
    ShortTermMemory,
    UserSessions,
)
from chatmemory.schema import (
    HANDBACK_EVENT,
    HANDOFF_EVENT,
    HandoffReason,
    HandoffState,
    Intent,
    SessionStatus,
    TurnOrigin,
)
from chatmemory.services.access import owned_session, visible_to_its_user
from chatmemory.services.conversation.routing import parse_prefix
from chatmemory.services.conversation.sentiment import analyze_input
from chatmemory.services.conversation.turns import (
    Stored,
    TurnWriting,
    append_next,
    check_text,
)
from chatmemory.services.pages import TurnPage, turn_page

# The reply to `/human`: fixed, no model writes it (and it is not made into memory).
HUMAN_REPLY = (
    "I have asked a person to take over this conversation. They will answer you here; "
    "your messages until then go to them."
)
# Added to the answer of a turn that an automatic rule hands off.
TAKEOVER = "A person will take over this conversation and answer you here shortly."
MAX_NOTE_CHARS = 1000
MAX_AGENT_REPLY_CHARS = 20_000


class HandoffPolicy(NamedTuple):
    """The automatic rules (filled from Settings by the wiring; both off by default)."""

    # Hand off when /verified finds no relevant passage.
    on_nothing_verified: bool = False
    # Hand off after this many consecutive user turns whose sentiment score is at most
    # `negative_score` (0: never).
    negative_turns: int = 0
    negative_score: float = -0.5


@dataclass
class Outcome:
    """What a hand-off route did: the session as it is now, and whether this request changed
    it (an event was published then: `event_error` says why that failed, if it did)."""

    session: Session
    changed: bool = False
    event_error: str = ""


@dataclass
class AgentReply:
    turn: Turn
    replayed: bool = False


# --- events ------------------------------------------------------------------------------------


def publish(events: EventPublisher | None, detail_type: str, detail: dict[str, Any]) -> str:
    """Publish one event; "" when it was published (or there is nowhere to publish), else why
    it failed. A failed event never fails the hand-off: the handler logs it and counts it."""
    if events is None:
        return ""
    try:
        events.publish(detail_type, detail)
    except ChatMemoryError as error:
        return str(error) or error.code
    except Exception as error:  # noqa: BLE001 - an adapter's bug must not undo a hand-off
        return f"{type(error).__name__}: {error}"
    return ""


def handoff_detail(
    session: Session, *, caller: str, reason: str, turn: int, at: str
) -> dict[str, Any]:
    """The detail of a HANDOFF_EVENT: ids, a reason and times, never what anyone wrote (an
    event lands where deleting a session or forgetting a user cannot reach: a rule's target,
    its logs). `user_id` is the caller's id (not the owner key); the note is on the session,
    for the agent (GET /agent/sessions/{id})."""
    return {
        "session_id": session.session_id,
        "user_id": caller,
        "reason": reason,
        "turn": turn,
        "handoff_at": at,
    }


def handoff_event(events: EventPublisher | None, session: Session, caller: str) -> str:
    """Publish the hand-off `session` is in (as the write that handed it off left it)."""
    detail = handoff_detail(
        session,
        caller=caller,
        reason=session.handoff_reason or "",
        turn=session.handoff_turn or 0,
        at=session.handoff_at or "",
    )
    return publish(events, HANDOFF_EVENT, detail)


# --- the user's side ----------------------------------------------------------------------------


def request_handoff(
    memory: ShortTermMemory,
    events: EventPublisher | None,
    *,
    user_id: str,
    session_id: str,
    note: str | None,
    clock: Clock,
) -> Outcome:
    """POST /sessions/{id}/handoff: hand the caller's open session to a person (reason
    user_request). Idempotent: a session already handed off is answered as it is."""
    if note is not None and len(note) > MAX_NOTE_CHARS:
        raise BadRequest(f"note is longer than {MAX_NOTE_CHARS} characters")
    for _ in range(3):
        session = owned_session(memory, user_id, session_id)
        if session.handoff_state:
            return Outcome(session)
        if session.status != SessionStatus.OPEN:
            raise SessionEnded(f"session {session_id} is {session.status.lower()}; start a new one")
        handed = memory.hand_off(
            session_id,
            reason=HandoffReason.USER_REQUEST,
            at=iso(clock()),
            note=(note or "").strip() or None,
        )
        if handed is not None:
            error = handoff_event(events, handed, user_id)
            return Outcome(handed, changed=True, event_error=error)
        # Ended, deleted or handed off meanwhile: read again to say which.
    raise Conflict("the session kept changing; retry the request")


def answered_with_handoff(turn: Turn, reason: str, at: str) -> Handoff:
    """The change a turn that hands its session off writes with it (the /human command, or an
    automatic rule on a turn the bot answered)."""
    if reason != HandoffReason.USER_REQUEST:
        turn.response = f"{(turn.response or '').rstrip()}\n\n{TAKEOVER}".lstrip()
    return Handoff(HandoffState.WAITING, reason=reason, at=at)


def human_command(turn: Turn, at: str) -> Handoff:
    """`/human [note]`: the turn's reply is fixed (no model call) and hands the session off."""
    turn.response, turn.model, turn.remember_response = HUMAN_REPLY, "none", False
    return answered_with_handoff(turn, HandoffReason.USER_REQUEST, at)


def for_agent_turn(
    session: Session,
    *,
    content: str,
    client_message_id: str | None,
    sentiment: SentimentAnalyzer | None,
    created_at: str,
    expires_at: int | None,
) -> tuple[Turn, str]:
    """A user's message for the agent: no model answers it; its sentiment is still analyzed
    (by the analyzer that calls no model; a command is not scored). Commands are not run, the
    agent reads them as typed. Returns the turn and why its sentiment is missing, if it is."""
    try:
        routed = parse_prefix(content)
    except BadRequest:
        routed = None
    found, error = analyze_input(sentiment, content)
    turn = Turn(
        session_id=session.session_id,
        turn=0,
        user_id=session.user_id,
        input=content,
        response=None,
        intent=routed.intent if routed is not None else Intent.CHAT,
        created_at=created_at,
        client_message_id=client_message_id,
        expires_at=expires_at,
        sentiment=found,
        for_agent=True,
    )
    return turn, error


def as_for_agent(turn: Turn) -> Turn:
    """A message whose bot answer lost the race with a hand-off: the answer is dropped and the
    message is stored for the agent instead."""
    turn.response, turn.sources, turn.model, turn.prompt = None, [], "", None
    turn.input_tokens = turn.output_tokens = None
    turn.degraded, turn.pending, turn.remember_response = False, False, True
    turn.for_agent = True
    return turn


def give_to_agent(memory: HandoffStore, session: Session, numbers: Sequence[int]) -> None:
    """Messages written before a hand-off and still waiting for the bot become the agent's
    (conditional on each still waiting and the session still handed off: if not, the caller
    reads again and finds them answered, or answers them with the bot)."""
    with contextlib.suppress(Conflict):
        memory.mark_for_agent(session.session_id, numbers)


# --- the automatic rules -------------------------------------------------------------------------


def nothing_verified(policy: HandoffPolicy, intent: str, turn: Turn) -> bool:
    """HANDOFF_ON_NOTHING_VERIFIED: a /verified question whose search ran and found nothing
    relevant (not one that could not search: no long-term memory, or an outage)."""
    if not (
        policy.on_nothing_verified
        and intent == Intent.VERIFIED
        and not turn.degraded
        and not turn.sources
    ):
        return False
    # /verified's module, imported by the first /verified question rather than at cold start
    from chatmemory.services.longterm.recall import NOTHING_VERIFIED

    return turn.response == NOTHING_VERIFIED


def is_negative(policy: HandoffPolicy, turn: Turn) -> bool:
    return (
        policy.negative_turns > 0
        and turn.sentiment is not None
        and turn.sentiment.score <= policy.negative_score
    )


def negative_streak(
    policy: HandoffPolicy, session: Session, turn: Turn, history: Sequence[Turn]
) -> bool:
    """HANDOFF_NEGATIVE_TURNS=N: `turn` is the N-th consecutive user turn whose sentiment is at
    most HANDOFF_NEGATIVE_SCORE. `history` is the turns before it (oldest first). Only turns
    since the last hand-off count, and a person's reply or a message for one ends a streak (a
    session handed back does not go straight back for the sorrows that sent it there)."""
    if not is_negative(policy, turn):
        return False
    count = 1
    since = session.handoff_turn or 0
    for earlier in reversed(history):
        if count >= policy.negative_turns:
            break
        if earlier.turn <= since or earlier.origin == TurnOrigin.AGENT or earlier.for_agent:
            break
        if earlier.intent == Intent.HUMAN or not is_negative(policy, earlier):
            break
        count += 1
    return count >= policy.negative_turns


def history_for_rules(policy: HandoffPolicy) -> int:
    """How many turns before a negative message the sentiment rule looks at."""
    return max(policy.negative_turns - 1, 0)


# --- the agent's side ----------------------------------------------------------------------------


def handed_off_session(memory: UserSessions, session_id: str) -> Session:
    """A session an agent may read: one that is handed to a person now (any other answers 404:
    agents see what was handed to them, not the users' conversations)."""
    session = visible_to_its_user(memory, session_id)
    if not session.handoff_state:
        raise SessionNotFound(f"session {session_id} is not handed to a person")
    return session


def list_queue(
    memory: HandoffStore, *, state: str, limit: int, next_token: str | None
) -> Page[Session]:
    """GET /agent/sessions: sessions in `state` (WAITING or ACTIVE), longest waiting first."""
    return memory.handoff_queue(HandoffState(state), limit, next_token)


def read_session_for_agent(
    memory: ShortTermMemory, session_id: str, asked: TurnPage
) -> tuple[Session, Page[Turn]]:
    """GET /agent/sessions/{id}: the handed-off session and the page of its turns `asked`."""
    session = handed_off_session(memory, session_id)
    return session, turn_page(memory, session_id, asked)


def agent_reply(
    memory: ShortTermMemory,
    writing: TurnWriting,
    *,
    agent_id: str,
    session_id: str,
    content: str,
    client_message_id: str | None,
) -> AgentReply:
    """POST /agent/sessions/{id}/messages: the agent's reply, the session's next turn (origin
    agent, no input), written with the state ACTIVE and the agent as the one who answers. A
    retry with the same client_message_id returns the stored turn."""
    check_text(content, "content", MAX_AGENT_REPLY_CHARS)
    session = visible_to_its_user(memory, session_id)
    known = session.turn_of(client_message_id)
    if known is not None:
        stored = memory.get_turn(session_id, known)
        if stored is not None:
            if stored.origin != TurnOrigin.AGENT or stored.response != content:
                raise Conflict(
                    f"client_message_id was already used for another message (turn {known}); "
                    "use a new id for a new message"
                )
            return AgentReply(stored, replayed=True)
    if session.status != SessionStatus.OPEN:
        raise SessionEnded(f"session {session_id} is {session.status.lower()}")
    if not session.handoff_state:
        raise Conflict(f"session {session_id} is not handed to a person")
    turn = Turn(
        session_id=session_id,
        turn=0,
        user_id=session.user_id,
        input="",
        response=content,
        created_at=iso(writing.clock()),
        client_message_id=client_message_id,
        expires_at=writing.expires_at,
        origin=TurnOrigin.AGENT,
        agent_id=agent_id,
    )
    try:
        stored_turn: Stored = append_next(
            memory,
            caller_of(session.user_id),  # re-reads resolve the owner's current key
            session,
            turn,
            policy=writing.policy,
            sleep=writing.sleep,
            handoff=Handoff(HandoffState.ACTIVE, agent=agent_id),
        )
    except HandoffChanged:
        raise Conflict(f"session {session_id} was handed back meanwhile") from None
    return AgentReply(stored_turn.turn, replayed=stored_turn.replayed)


def hand_back(
    memory: ShortTermMemory,
    events: EventPublisher | None,
    *,
    agent_id: str,
    session_id: str,
    clock: Clock,
) -> Outcome:
    """POST /agent/sessions/{id}/handback: the bot answers the session's next message again,
    with the whole conversation (the agent's turns included) in its prompt."""
    session = visible_to_its_user(memory, session_id)
    if session.status != SessionStatus.OPEN:
        raise SessionEnded(f"session {session_id} is {session.status.lower()}")
    if not session.handoff_state:
        raise Conflict(f"session {session_id} is not handed to a person")
    at = iso(clock())
    back = memory.hand_back(session_id, at=at)
    if back is None:
        raise Conflict(f"session {session_id} was handed back or ended meanwhile")
    detail = {
        "session_id": session_id,
        "user_id": caller_of(session.user_id),
        "agent_id": agent_id,
        "reason": session.handoff_reason,
        "turn": back.num_turns,
        "handoff_at": session.handoff_at,
        "handed_back_at": at,
    }
    return Outcome(back, changed=True, event_error=publish(events, HANDBACK_EVENT, detail))
