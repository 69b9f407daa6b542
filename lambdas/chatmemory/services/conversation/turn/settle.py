"""Settle: the turn stored. A message with its answer in one write (and a hand-off in the same
write, then its event), a message written before its answer (stacked, or kept pending when the
model failed), an answer that completes a stack or a pending message; what a retry of an
answered message gets back.
"""

from __future__ import annotations

from chatmemory.domain import Handoff, Turn
from chatmemory.errors import HandoffChanged, SessionEnded
from chatmemory.schema import HANDOFF_EVENT
from chatmemory.services.conversation import handoff
from chatmemory.services.conversation.turn.context import TurnContext, TurnResult
from chatmemory.services.conversation.turns import append_next


def append(
    ctx: TurnContext, turn: Turn, change: Handoff | None = None, *, stack: bool = False
) -> TurnResult:
    """Write `turn` as the session's next (services/conversation/turns.append_next)."""
    stored = append_next(
        ctx.memory,
        ctx.caller,
        ctx.session,
        turn,
        policy=ctx.policy.append,
        sleep=ctx.deps.sleep,
        handoff=change,
        stack=stack,
    )
    return TurnResult(stored.turn, replayed=stored.replayed)


def store_answer(ctx: TurnContext, turn: Turn, reason: str | None) -> TurnResult:
    """Store an answered turn (with `reason`: and hand the session off in the same write, then
    publish the event). A hand-off that committed while the bot answered wins: the answer is
    dropped and the message stored for the agent."""
    change = handoff.answered_with_handoff(turn, reason, turn.created_at) if reason else None
    try:
        result = append(ctx, turn, change)
    except HandoffChanged as changed:
        if not changed.session.handoff_state:
            raise
        ctx.session = changed.session
        return append(ctx, handoff.as_for_agent(turn))
    if change is not None and reason is not None and not result.replayed:
        detail = handoff.handoff_detail(
            ctx.session, caller=ctx.caller, reason=reason, turn=result.turn.turn, at=turn.created_at
        )
        result.event_error = handoff.publish(ctx.deps.events, HANDOFF_EVENT, detail)
    return result


def replayed(ctx: TurnContext, stored: Turn) -> TurnResult:
    """A retried message that is answered: its turn (and the turn holding its answer, for a
    message answered together with later ones)."""
    if stored.answered_by is None:
        return TurnResult(stored, replayed=True)
    answer = ctx.memory.get_turn(stored.session_id, stored.answered_by)
    return TurnResult(stored, replayed=True, answer=answer)


def stacked_result(ctx: TurnContext, mine: Turn, tail: list[Turn]) -> TurnResult:
    """A message answered by another request: its turn, with the turn that holds the answer."""
    if mine.answered_by is None:
        return TurnResult(mine)
    answer = next((t for t in tail if t.turn == mine.answered_by), None)
    if answer is None:
        answer = ctx.memory.get_turn(mine.session_id, mine.answered_by)
    return TurnResult(mine, answer=answer)


def unanswered(ctx: TurnContext, number: int) -> SessionEnded:
    """The refusal of a message its session ended before anyone answered: the turn stays
    stored, unanswered (TurnState.UNANSWERED)."""
    return SessionEnded(
        f"session {ctx.session.session_id} ended before turn {number} was answered; "
        "the message is kept unanswered: ask it again in a new session"
    )
