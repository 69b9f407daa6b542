"""Decide what a message calls for: a message sent again is taken where its state left it
(services/conversation/turn_states.py); a new one is for the person the session is handed to,
or is routed (chat or a command), its sentiment read, and then handed off (/human, or the
negative-sentiment rule), stacked with the messages waiting with it, or answered at once.
"""

from __future__ import annotations

import time

from chatmemory.domain import Turn
from chatmemory.errors import Conflict
from chatmemory.schema import HandoffReason, Intent, TurnOrigin
from chatmemory.services.conversation import handoff
from chatmemory.services.conversation.routing import Routed, route
from chatmemory.services.conversation.sentiment import analyze_input
from chatmemory.services.conversation.turn.answer import answer, answer_now
from chatmemory.services.conversation.turn.context import (
    Flow,
    Part,
    TurnContext,
    TurnResult,
)
from chatmemory.services.conversation.turn.gather import start_long_term_reads
from chatmemory.services.conversation.turn.settle import append, replayed, store_answer, unanswered
from chatmemory.services.conversation.turn.stacked import retry, stack_then_answer, stacks
from chatmemory.services.conversation.turn_states import SETTLED, TurnState, state_of


def again(ctx: TurnContext, stored: Turn) -> Flow:
    """A message sent again with its client_message_id: what its turn's state calls for."""
    if stored.origin == TurnOrigin.CLIENT:
        raise Conflict(
            f"client_message_id was used to store turn {stored.turn} with POST /turns; "
            "use a new id to have this service answer"
        )
    state = state_of(stored, session_status=ctx.session.status)
    if state in SETTLED:
        return replayed(ctx, stored)
    if state == TurnState.UNANSWERED:
        raise unanswered(ctx, stored.turn)
    if ctx.session.handoff_state:
        # Handed to a person since: the message still waiting for the bot is theirs.
        handoff.give_to_agent(ctx.memory, ctx.session, [stored.turn])
        current = ctx.memory.get_turn(ctx.session.session_id, stored.turn)
        return TurnResult(current or stored, replayed=True)
    return (yield from retry(ctx, stored))


def for_agent(ctx: TurnContext) -> TurnResult:
    """A message while the session is handed to a person: stored for the agent, unanswered
    (HandoffChanged when it was handed back meanwhile: the bot answers it then)."""
    turn, sentiment_error = handoff.for_agent_turn(
        ctx.session,
        content=ctx.content,
        client_message_id=ctx.client_message_id,
        sentiment=ctx.deps.stored_sentiment,  # no model call while a person answers
        created_at=ctx.now(),
        expires_at=ctx.expiry(),
    )
    result = append(ctx, turn)
    result.sentiment_error = "" if result.replayed else sentiment_error
    return result


def new_message(ctx: TurnContext) -> Part[TurnResult | None]:
    """A message not seen before, in an open session with the bot: routed, its sentiment read,
    then handed off, stacked or answered. None of the flows: a concurrent request with the same
    client_message_id wrote it first (the pipeline takes it as a retry)."""
    classifier = ctx.deps.generator if ctx.policy.use_classifier else None
    routed = route(ctx.content, generator=classifier)
    if routed.intent == Intent.CHAT:
        # Its prompt's profile block and auto-recall's search, beside what comes first.
        start_long_term_reads(ctx, routed)
    # Of what the user said (a command is not scored), before the model answers: a turn kept
    # pending because the model failed carries it too.
    with ctx.before_answer():
        sentiment, sentiment_error = analyze_input(ctx.deps.sentiment, ctx.content)
    turn = Turn(
        session_id=ctx.session.session_id,
        turn=0,
        user_id=ctx.session.user_id,  # the owner key, as the session's
        input=ctx.content,
        response=None,
        intent=routed.intent,
        created_at=ctx.now(),
        client_message_id=ctx.client_message_id,
        expires_at=ctx.expiry(),
        sentiment=sentiment,
    )
    result = yield from _handed_off(ctx, routed, turn)
    if result is None and stacks(ctx, turn):
        result = yield from stack_then_answer(ctx, turn)
        if result is None:
            return None  # a concurrent retry wrote it first: the pipeline takes it as one
    elif result is None:
        result = yield from answer_now(ctx, routed, turn)
        if result.replayed:
            return result
    result.sentiment_error = sentiment_error
    return result


def _handed_off(ctx: TurnContext, routed: Routed, turn: Turn) -> Part[TurnResult | None]:
    """`/human`, or a message that makes the negative-sentiment rule hand the session off:
    answered alone (not stacked) and stored with the hand-off in one write. None otherwise."""
    if routed.intent == Intent.HUMAN:
        handoff.human_command(turn, turn.created_at)
        # Its note is the turn's input: the agent reads it there, and no event carries it.
        return store_answer(ctx, turn, HandoffReason.USER_REQUEST)
    if routed.intent != Intent.CHAT or not handoff.is_negative(ctx.policy.handoff, turn):
        return None
    # The window the answer needs anyway, and the turns the rule looks at, in one query.
    wanted = max(ctx.window, handoff.history_for_rules(ctx.policy.handoff))
    history = ctx.memory.recent_turns(ctx.session.session_id, wanted) if wanted else []
    if not handoff.negative_streak(ctx.policy.handoff, ctx.session, turn, history):
        return None
    started = time.perf_counter()
    used = yield from answer(
        ctx, routed, turn, history=history[-ctx.window :] if ctx.window else []
    )
    turn.latency_ms = int((time.perf_counter() - started) * 1000)
    result = store_answer(ctx, turn, HandoffReason.NEGATIVE_SENTIMENT)
    return result if result.replayed else result.used(used)
