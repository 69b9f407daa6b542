"""Stacked messages and retries (services/conversation/stacking.py says why): a chat message is
written first, pending and claimed by its request, then answered alone or with the others
waiting with it, by this request or the one of a newer message; a retry of a waiting message
claims it (one conditional write) so that retries arriving together call the model once.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import NamedTuple, TypeVar

from chatmemory import deadline
from chatmemory.beside import run_beside
from chatmemory.clock import iso
from chatmemory.domain import CoveredTurns, Turn
from chatmemory.errors import Conflict, SessionNotFound
from chatmemory.schema import Intent, SessionStatus, TurnOrigin
from chatmemory.services.access import owned_session
from chatmemory.services.conversation import handoff
from chatmemory.services.conversation.routing import Routed
from chatmemory.services.conversation.sessions import title_from
from chatmemory.services.conversation.stacking import (
    Waiting,
    joined_input,
    plan,
    settled,
    wait_for_answer,
    wait_while_claimed,
)
from chatmemory.services.conversation.turn.answer import answer, complete_pending
from chatmemory.services.conversation.turn.context import (
    Delta,
    Flow,
    Memory,
    MemoryUsed,
    Part,
    TurnContext,
    TurnResult,
)
from chatmemory.services.conversation.turn.settle import (
    append,
    replayed,
    stacked_result,
    unanswered,
)

# How often a retry tries to claim a message, waiting after each claim another retry holds.
_RETRY_CLAIMS = 3

R = TypeVar("R")


def stacks(ctx: TurnContext, turn: Turn) -> bool:
    """Whether this message waits for others to be answered with (chat messages only: a
    command is answered on its own)."""
    return (
        ctx.policy.stack.enabled and turn.intent == Intent.CHAT and turn.origin == TurnOrigin.CHAT
    )


def stack_then_answer(ctx: TurnContext, turn: Turn) -> Part[TurnResult | None]:
    """A stacked message: written first (pending), answered with whatever else the user sends
    before the answer, by this request or a later one. It is written claimed by this request
    (answering_until, as a retry claims it): a re-send of it while this request answers (a
    client that timed out, the same message posted twice) waits for the answer instead of
    calling the model again; the claim is given up at once if this request fails, and runs
    out after `patience_seconds` if it dies. None: a concurrent request with the same
    client_message_id wrote it first (the caller takes it from there as a retry).

    A message the session's last turns, read before the write, show to be answered alone and
    at once is written beside its prompt and the model's call (`_beside_the_write`)."""
    turn.pending = True
    until = iso(ctx.deps.clock() + timedelta(seconds=ctx.policy.stack.patience_seconds))
    turn.answering_until = until
    ahead = _alone_ahead(ctx, turn)
    if ahead is not None:
        return (yield from _beside_the_write(ctx, turn, ahead, until))
    appended = append(ctx, turn, stack=True)
    if appended.replayed:
        return None
    number = appended.turn.turn
    with _claim(ctx, number, until):
        if ctx.policy.stack.wait_seconds > 0:
            # Not into the time the answer needs: a burst arriving later is answered anyway.
            spare = deadline.current().remaining() - ctx.policy.answer_reserve_seconds
            ctx.deps.sleep(max(0.0, min(ctx.policy.stack.wait_seconds, spare)))
        return (yield from settle_stack(ctx, number))


@contextlib.contextmanager
def _claim(ctx: TurnContext, number: int, until: str) -> Iterator[None]:
    """The claim this request wrote with its message `number`, given up at once if it fails."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            ctx.memory.release_answer(ctx.session.session_id, number, until=until)
        raise


class _Ahead(NamedTuple):
    """A message to be answered alone, as its write will number it (a copy: the write goes on
    another thread with the message itself), and the session's last turns up to it."""

    mine: Turn
    tail: list[Turn]


def _alone_ahead(ctx: TurnContext, turn: Turn) -> _Ahead | None:
    """The session's last turns read before the message is written, when they show that its
    request answers it alone and at once, as the read after the write would (None: write it
    first, then read). They are all the turns before it: the write is conditional on the
    session's count of turns as this request read it, before this read. Of them, only a
    waiting message can change by the time of the write (answered, or given to an agent),
    and if one is waiting this message is not answered alone; one that does not wait never
    waits again. What only the read after the write would see, a newer message written after
    this one, is decided as when it is written during the model's call: its request answers
    both, and this answer's write (conditional on this message being the stack's head) is
    refused (services/conversation/stacking.py)."""
    policy = ctx.policy.stack
    count = ctx.window + policy.read_ahead - 1  # the turns the read after the write holds
    if policy.wait_seconds > 0 or count <= 0:
        return None
    number = ctx.session.num_turns + 1
    before = ctx.memory.recent_turns(ctx.session.session_id, count)
    if any(t.turn >= number for t in before):
        return None  # written since the session was read: this write is refused and retried
    mine = replace(turn, turn=number)
    tail = [*before, mine]
    chosen = plan(tail, mine, now=ctx.deps.clock(), policy=policy)
    if chosen.wait or len(chosen.batch) != 1 or chosen.batch[0] is not mine:
        return None
    return _Ahead(mine, tail)


def _beside_the_write(
    ctx: TurnContext, turn: Turn, ahead: _Ahead, until: str
) -> Part[TurnResult | None]:
    """The message written (claimed, on a thread of chatmemory.beside) while its prompt is
    built and the model is asked: the model's first words wait for the write, so that the
    write's time is hidden behind the model's own until the first word. Nothing is shown before
    the write is known: refused (the session ended, say) or numbered otherwise (a message
    written meanwhile), the model's call is dropped and the message goes the way of a message
    written first; a model that failed fails the request as when it was called after the
    write."""
    mine = ahead.mine
    writing = run_beside(append, ctx, turn, stack=True)
    flow = _answer_batch(ctx, [mine], ahead.tail)
    failure: Exception | None = None
    held: list[Delta | MemoryUsed] = []
    ended: tuple[tuple[Turn, Memory]] | None = None
    try:
        held, ended = _first_words(flow)
    except Exception as error:  # the model's: raised once the write is known
        failure = error
    try:
        appended = writing.result()
    except BaseException:
        flow.close()
        raise
    if appended.replayed or appended.turn.turn != mine.turn:
        flow.close()
        if appended.replayed:
            return None
        number = appended.turn.turn
        with _claim(ctx, number, until):
            return (yield from settle_stack(ctx, number))
    with _claim(ctx, mine.turn, until):
        yield from held
        if failure is not None:
            raise failure
        answer_turn, used = ended[0] if ended is not None else (yield from flow)
        computed = ((mine.turn,), answer_turn, used)
        done = _complete(ctx, [mine], computed, force=False, mine=mine, number=mine.turn)
        if done is not None:
            return done
        # A newer message, or another request, came first: as after any refused answer.
        return (yield from settle_stack(ctx, mine.turn, computed))


def _first_words(flow: Part[R]) -> tuple[list[Delta | MemoryUsed], tuple[R] | None]:
    """The events of `flow` up to its first delta, held; or all of them and what it returned,
    when it ends before one."""
    held: list[Delta | MemoryUsed] = []
    while True:
        try:
            event = next(flow)
        except StopIteration as end:
            return held, (end.value,)
        held.append(event)
        if isinstance(event, Delta):
            return held, None


def settle_stack(
    ctx: TurnContext, number: int, computed: tuple[tuple[int, ...], Turn, Memory] | None = None
) -> Flow:
    """Answer the waiting message `number`, alone or with the others waiting with it, or wait
    for the request that answers them all (see services/conversation/stacking.py). `computed`:
    an answer this request has of some of them already, written again if the same messages
    are still to be answered."""
    takeover = False
    for _ in range(ctx.policy.append_attempts):
        tail = ctx.memory.recent_turns(
            ctx.session.session_id, ctx.window + ctx.policy.stack.read_ahead
        )
        mine = _own(ctx, tail, number)
        if settled(mine):
            return stacked_result(ctx, mine, tail)
        if ctx.session.status != SessionStatus.OPEN:
            raise unanswered(ctx, number)
        chosen = plan(tail, mine, now=ctx.deps.clock(), policy=ctx.policy.stack, takeover=takeover)
        if chosen.wait:
            answered = wait_for_answer(_waiting(ctx, number))
            takeover = answered is None  # the head's request is gone: answer them ourselves
            continue
        batch = list(chosen.batch)
        numbers = tuple(t.turn for t in batch)
        if computed is None or computed[0] != numbers:
            # Not the same messages as before a write that failed for another reason (a
            # transaction conflict), whose answer would still stand.
            answer_turn, used = yield from _answer_batch(ctx, batch, tail)
            computed = (numbers, answer_turn, used)
        done = _complete(ctx, batch, computed, force=chosen.force, mine=mine, number=number)
        if done is not None:
            return done
    raise Conflict("the session is busy with other messages; retry with the same client_message_id")


def _own(ctx: TurnContext, tail: list[Turn], number: int) -> Turn:
    mine = next((t for t in tail if t.turn == number), None)
    if mine is None:
        mine = ctx.memory.get_turn(ctx.session.session_id, number)
        if mine is None:  # deleted meanwhile
            raise SessionNotFound(f"session {ctx.session.session_id} not found")
    return mine


def _answer_batch(
    ctx: TurnContext, batch: list[Turn], tail: list[Turn]
) -> Part[tuple[Turn, Memory]]:
    """One model call for the messages of the batch, into its last turn."""
    answer_turn = batch[-1]
    numbers = {t.turn for t in batch}
    earlier = [t for t in tail if t.turn < answer_turn.turn and t.turn not in numbers]
    started = time.perf_counter()
    used = yield from answer(
        ctx,
        Routed(Intent.CHAT, joined_input(batch), "stacked"),
        answer_turn,
        history=earlier[-ctx.window :] if ctx.window else [],
    )
    answer_turn.latency_ms = int((time.perf_counter() - started) * 1000)
    return answer_turn, used


def _complete(
    ctx: TurnContext,
    batch: list[Turn],
    computed: tuple[tuple[int, ...], Turn, Memory],
    *,
    force: bool,
    mine: Turn,
    number: int,
) -> TurnResult | None:
    """Write the batch's answer (one conditional transaction); None when it lost to a newer
    message, another request or the session's end (the caller reads again)."""
    _, answer_turn, used = computed
    rename = title_from(joined_input(batch)) if ctx.session.auto_named else None
    try:
        covered = CoveredTurns([t.turn for t in batch[:-1]], None if force else answer_turn.turn)
        ctx.memory.complete_stack(answer_turn, covered, rename)
    except Conflict:
        # A newer message arrived (its request answers this one too), another request
        # answered first, or the session ended: read again. An ended session refuses the
        # message only if nobody answered it before the end (the loop's first check).
        ctx.session = owned_session(ctx.memory, ctx.caller, ctx.session.session_id)
        if ctx.session.status == SessionStatus.OPEN and ctx.session.handoff_state:
            # Handed to a person while the model answered: the messages are theirs.
            handoff.give_to_agent(ctx.memory, ctx.session, [t.turn for t in batch])
        return None
    answer_turn.pending = False
    if answer_turn.turn == number:
        return TurnResult(answer_turn).used(used)
    mine.pending, mine.answered_by = False, answer_turn.turn
    return TurnResult(mine, answer=answer_turn).used(used)


def retry(ctx: TurnContext, stored: Turn) -> Flow:
    """A retry of a message still waiting for its answer (its model call failed, or the request
    answering it died). Of retries arriving together, one claims the message (one conditional
    write) and calls the model; the others wait for its answer, so the model is called once.
    A claim lasts `patience_seconds`; a claimer whose model call fails gives it up at once."""
    number = stored.turn
    for _ in range(_RETRY_CLAIMS):
        now = ctx.deps.clock()
        until = iso(now + timedelta(seconds=ctx.policy.stack.patience_seconds))
        if ctx.memory.claim_answer(ctx.session.session_id, number, until=until, now=iso(now)):
            with _claim(ctx, number, until):
                if stacks(ctx, stored):
                    retried = yield from settle_stack(ctx, number)
                    retried.replayed = True  # its turn was stored by an earlier request
                    return retried
                return (yield from complete_pending(ctx, stored))
        current = wait_while_claimed(_waiting(ctx, number), now=ctx.now)
        if current is None:  # deleted meanwhile
            raise SessionNotFound(f"session {ctx.session.session_id} not found")
        if settled(current):
            return replayed(ctx, current)
        stored = current
    raise Conflict(
        "another request is answering this message; retry with the same client_message_id"
    )


def _waiting(ctx: TurnContext, number: int) -> Waiting:
    """This request waiting on its message `number` (for another request's answer or claim)."""
    return Waiting(ctx.memory, ctx.session.session_id, number, ctx.policy.stack, ctx.deps.sleep)
