"""The states a turn can be in, and the transitions between them: the one place that names them.

A turn's state is not stored as such: it follows from the flags its item carries (`pending`,
`answered_by`, `answering_until`, `for_agent`, `origin`) and from its session's status. This
module reads it (`state_of`) for chat, stacking, hand-off and retries, and lists every transition
(`TRANSITIONS`: who may cause it, which write of the `ShortTermMemory` port makes it, what the
request that causes it answers). The docs' diagram of the turn is generated from `TRANSITIONS`
(`mermaid()`, by scripts/docs_pages.py), and a test checks that each write named here is a
method of the port.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import NamedTuple

from chatmemory.domain import Turn
from chatmemory.schema import SessionStatus, TurnOrigin


class TurnState(StrEnum):
    # Written, waiting for an answer: a stacked message, a message whose model call failed or
    # whose request died, or a stored turn (POST /turns) whose answer comes later.
    PENDING = "pending"
    # Pending, and a request is answering it now (until answering_until): the request that
    # wrote it (a stacked message), or a retry with its client_message_id that claimed it;
    # other retries wait for that answer instead of calling the model.
    CLAIMED = "claimed"
    # Has its own answer (the model's, or the client's for a stored turn).
    ANSWERED = "answered"
    # A stacked message answered together with later ones: the answer is on a later turn.
    COVERED = "covered"
    # A user's message while the session is handed to a person: no model answers it.
    FOR_AGENT = "for_agent"
    # A person's reply from the agent desk (origin agent; it has no input).
    AGENT_REPLY = "agent_reply"
    # Pending when its session ended: it stays unanswered (a retry answers 409 session_ended).
    UNANSWERED = "unanswered"


# A retry of a turn in one of these states returns it as stored: nothing is written.
SETTLED = frozenset(
    {TurnState.ANSWERED, TurnState.COVERED, TurnState.FOR_AGENT, TurnState.AGENT_REPLY}
)


def state_of(turn: Turn, *, session_status: str | None = None, now: str | None = None) -> TurnState:
    """The state of `turn`; with its session's status, a waiting turn of an ended session is
    UNANSWERED, and with `now` (stored time), a claim that ran out is PENDING again."""
    if turn.origin == TurnOrigin.AGENT:
        return TurnState.AGENT_REPLY
    if turn.for_agent:
        return TurnState.FOR_AGENT
    if turn.answered_by is not None:
        return TurnState.COVERED
    if not turn.pending:
        return TurnState.ANSWERED
    if session_status is not None and session_status != SessionStatus.OPEN:
        return TurnState.UNANSWERED
    if turn.answering_until is not None and (now is None or turn.answering_until >= now):
        return TurnState.CLAIMED
    return TurnState.PENDING


class Transition(NamedTuple):
    source: TurnState | None  # None: the turn is written by this transition
    target: TurnState
    cause: str  # what happens
    actor: str  # who may cause it
    write: str  # the ShortTermMemory method that makes it ("" when no turn is written)
    answer: str  # what the request causing it answers


_NEW = None


def _covered(state: TurnState) -> Transition:
    """A stacked message (pending, or claimed by a retry) that a later message's answer covers."""
    return Transition(
        state,
        TurnState.COVERED,
        "a later message's answer covers it",
        "the caller's request",
        "complete_stack",
        "201 with the answer on the later turn",
    )


TRANSITIONS: tuple[Transition, ...] = (
    Transition(
        _NEW,
        TurnState.ANSWERED,
        "a message the model answers at once",
        "the caller",
        "append_turn",
        "201 with the turn",
    ),
    Transition(
        _NEW,
        TurnState.CLAIMED,
        "a stacked message, written before its answer, claimed by its own request",
        "the caller",
        "append_turn",
        "201 once its stack is answered; 409 if the session ended before it was",
    ),
    Transition(
        _NEW,
        TurnState.PENDING,
        "a message whose model call failed or ran out of time",
        "the caller",
        "append_turn",
        "502/503 (deadline_exceeded): retry with its id",
    ),
    Transition(
        _NEW,
        TurnState.PENDING,
        "a turn stored without its answer (POST /turns)",
        "the caller",
        "append_turn",
        "201 with the pending turn",
    ),
    Transition(
        _NEW,
        TurnState.ANSWERED,
        "a turn stored with its answer (POST /turns)",
        "the caller",
        "append_turn",
        "201 with the turn",
    ),
    Transition(
        _NEW,
        TurnState.FOR_AGENT,
        "a message while the session is handed to a person",
        "the caller",
        "append_turn",
        "201 with the turn, no answer",
    ),
    Transition(
        _NEW,
        TurnState.AGENT_REPLY,
        "a person replies from the agent desk",
        "an agent",
        "append_turn",
        "201 with the reply",
    ),
    Transition(
        TurnState.PENDING,
        TurnState.ANSWERED,
        "the request that stacked it answers its batch",
        "the caller's request",
        "complete_stack",
        "201 with the answer",
    ),
    _covered(TurnState.PENDING),
    Transition(
        TurnState.CLAIMED,
        TurnState.ANSWERED,
        "the request that stacked it answers its batch",
        "the caller's request",
        "complete_stack",
        "201 with the answer; a re-send meanwhile waits for it",
    ),
    _covered(TurnState.CLAIMED),
    Transition(
        TurnState.PENDING,
        TurnState.CLAIMED,
        "a retry with its client_message_id claims it",
        "the caller's retry",
        "claim_answer",
        "(the retry goes on to answer it)",
    ),
    Transition(
        TurnState.CLAIMED,
        TurnState.ANSWERED,
        "the claiming retry's model answers",
        "the caller's retry",
        "complete_stack",
        "201 with the turn (replayed)",
    ),
    Transition(
        TurnState.CLAIMED,
        TurnState.PENDING,
        "the claiming request's model call fails",
        "the caller's request or retry",
        "release_answer",
        "502/503: retry again",
    ),
    Transition(
        TurnState.CLAIMED,
        TurnState.PENDING,
        "the claim runs out (its request died)",
        "time",
        "",
        "(the next retry claims it)",
    ),
    Transition(
        TurnState.PENDING,
        TurnState.ANSWERED,
        "its answer is stored (PATCH /turns/{n})",
        "the caller",
        "complete_turn",
        "200 with the turn",
    ),
    Transition(
        TurnState.PENDING,
        TurnState.FOR_AGENT,
        "the session is handed to a person",
        "the caller (/human, POST /handoff) or the bot (nothing verified)",
        "mark_for_agent",
        "a retry answers 201 with the turn, no answer",
    ),
    Transition(
        TurnState.PENDING,
        TurnState.UNANSWERED,
        "its session ends",
        "the caller (/end, a new session with end_previous) or the idle sweeper",
        "",
        "a retry answers 409 session_ended",
    ),
)


def diagram(kind: str, lines: Iterable[str]) -> str:
    """A Mermaid diagram: its kind ("stateDiagram-v2", "flowchart LR"), then its lines, indented
    (this module's and the turn pipeline's, drawn on the docs' pages by scripts/docs_pages.py)."""
    return "\n".join([kind, *(f"    {line}" for line in lines)])


def mermaid() -> str:
    """The turn's state diagram (Mermaid), from TRANSITIONS."""
    arrows = []
    for t in TRANSITIONS:
        source = "[*]" if t.source is None else t.source.value
        via = f"{t.cause} ({t.write})" if t.write else t.cause
        arrows.append(f"{source} --> {t.target.value}: {via}")
    return diagram("stateDiagram-v2", arrows)


def table() -> str:
    """The transitions as a Markdown table, from TRANSITIONS."""
    rows = ["| from | to | when | who | write | the request answers |", "|---|---|---|---|---|---|"]
    for t in TRANSITIONS:
        source = "(new)" if t.source is None else f"`{t.source.value}`"
        write = f"`{t.write}`" if t.write else "none on the turn"
        rows.append(
            f"| {source} | `{t.target.value}` | {t.cause} | {t.actor} | {write} | {t.answer} |"
        )
    return "\n".join(rows)
