"""A message answered: gather, then generate (or a command's answer from long-term memory); and
the two ways a single message's answer is settled: a new message stored with its answer (or kept
pending when the model failed), and a stored message completed by the retry that claimed it.
"""

from __future__ import annotations

import time
from typing import Unpack

from chatmemory.domain import CoveredTurns, Turn
from chatmemory.errors import ChatMemoryError, Conflict, SessionEnded
from chatmemory.schema import HandoffReason, Intent, SessionStatus
from chatmemory.services.conversation import handoff
from chatmemory.services.conversation.routing import Routed, parse_prefix
from chatmemory.services.conversation.turn.context import (
    Delta,
    Flow,
    Memory,
    MemoryUsed,
    Part,
    TurnContext,
    TurnResult,
)
from chatmemory.services.conversation.turn.gather import Window, answer_command, gather
from chatmemory.services.conversation.turn.generate import generate
from chatmemory.services.conversation.turn.settle import append, store_answer, unanswered

Answering = Part[Memory]


def answer(ctx: TurnContext, routed: Routed, turn: Turn, **window: Unpack[Window]) -> Answering:
    """Fill in `turn`'s answer for its routed intent, yielding what memory the prompt holds
    and the answer's text as it is written; returns what long-term memory put in the prompt
    (nothing for a command). `window`: as gather takes it."""
    if routed.intent != Intent.CHAT and answer_command(ctx, routed, turn):
        yield Delta(turn.response or "")
        return Memory()
    gathered = gather(ctx, routed, turn, **window)
    yield MemoryUsed(gathered.memory)
    yield from generate(ctx, gathered.prompt, turn)
    return gathered.memory


def answer_now(ctx: TurnContext, routed: Routed, turn: Turn) -> Flow:
    """Ask the model, then store the message with its answer in one write. A model that fails
    leaves the message stored, pending: a retry with its client_message_id completes it."""
    started = time.perf_counter()
    try:
        used = yield from answer(ctx, routed, turn)
    except ChatMemoryError as failure:
        if failure.status < 500:
            raise
        turn.pending = True
        append(ctx, turn)
        raise
    turn.latency_ms = int((time.perf_counter() - started) * 1000)
    reason = None
    if handoff.nothing_verified(ctx.policy.handoff, routed.intent, turn):
        reason = HandoffReason.NOTHING_VERIFIED
    result = store_answer(ctx, turn, reason)
    return result if result.replayed else result.used(used)


def complete_pending(ctx: TurnContext, turn: Turn) -> Flow:
    """A retry of a message whose model call failed: answer it now and fill in the stored turn.

    Only while the session is open: once it ended, consolidation has taken (or is taking) the
    session into long-term memory with this message unanswered, and an answer added later
    would never reach it. The message stays, marked pending, and the retry is told why."""
    if ctx.session.status != SessionStatus.OPEN:
        raise unanswered(ctx, turn.turn)
    routed = Routed(turn.intent, parse_prefix(turn.input).text, "stored")
    started = time.perf_counter()
    used = yield from answer(ctx, routed, turn, before_turn=turn.turn)
    turn.pending = False
    turn.latency_ms = int((time.perf_counter() - started) * 1000)
    try:
        # As a stack of one: only while the message waits and the session is open and with
        # the bot (a hand-off during this model call makes the message the agent's).
        ctx.memory.complete_stack(turn, CoveredTurns())
    except Conflict as conflict:
        return _lost_completion(ctx, turn, conflict)
    return TurnResult(turn).used(used)


def _lost_completion(ctx: TurnContext, turn: Turn, conflict: Conflict) -> TurnResult:
    """The completion of a pending message was refused: a concurrent retry completed it, the
    session ended, or it was handed to a person meanwhile."""
    stored = ctx.memory.get_turn(turn.session_id, turn.turn)
    if stored is not None and not stored.pending:
        # A concurrent retry of the same message completed it first: its answer is the
        # one stored, so it is the one this retry returns too.
        return TurnResult(stored, replayed=True)
    current = ctx.memory.get_session(turn.session_id)
    if stored is None or current is None or current.status != SessionStatus.OPEN:
        raise SessionEnded(f"session {turn.session_id} ended before turn {turn.turn} was answered")
    if not current.handoff_state:
        raise conflict
    handoff.give_to_agent(ctx.memory, current, [turn.turn])
    given = ctx.memory.get_turn(turn.session_id, turn.turn)
    return TurnResult(given or stored, replayed=True)
