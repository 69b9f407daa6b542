"""One chat turn as a pipeline of named stages over one context (turn/context.TurnContext):

    admit -> decide -> gather -> generate -> settle

`open_turn` admits the message at once (so that a bad request is refused before the answer's
first byte) and returns the turn as a sequence of events: what memory the prompt holds, the
answer's text as the model writes it, and the stored turn last. `post_message`, the buffered
answer, is that sequence collected: streamed or buffered, the same code stores the same turn.

`STAGES` names each stage, what it does and the transitions of a turn's state it causes
(services/conversation/turn_states.TRANSITIONS, the one place that names them); the docs'
diagram of the pipeline is made from it (`mermaid()`, by scripts/docs_pages.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import NamedTuple, TypeVar

from chatmemory.errors import HandoffChanged
from chatmemory.services.conversation.sessions import current_session_attempts
from chatmemory.services.conversation.turn.admit import Admitted, admit
from chatmemory.services.conversation.turn.context import (
    ChatDeps,
    ChatPolicy,
    Flow,
    Message,
    Stored,
    TurnEvent,
    TurnResult,
)
from chatmemory.services.conversation.turn.decide import again, for_agent, new_message
from chatmemory.services.conversation.turn_states import TRANSITIONS, Transition, diagram

T = TypeVar("T")


def open_turn(deps: ChatDeps, policy: ChatPolicy, message: Message) -> Iterator[TurnEvent]:
    """The turn of one message, as events (admitted now: its errors are raised here). With
    `message.stream`, the model's streaming call; `message.stop` lets the reader stop it."""
    return _events(admit(deps, policy, message))


def post_message(deps: ChatDeps, policy: ChatPolicy, message: Message) -> TurnResult:
    """Answer one message and store it as the session's next turn: its events, collected."""
    return collected(open_turn(deps, policy, message))


def on_current_session(deps: ChatDeps, message: Message, run: Callable[[Message], T]) -> T:
    """`run` (post_message, open_turn) on the session the caller's id names: a client id whose
    session has ended is continued (sessions.current_session_attempts), in this module so that
    a message goes from its handler to the stages without another module between."""
    attempts = current_session_attempts(
        deps.memory, message.user_id, message.session_id, clock=deps.clock
    )
    for attempt in attempts:
        with attempt:
            return run(message._replace(session_id=attempt.session_id, found=attempt.found))
    raise AssertionError("current_session_attempts raises when the attempts run out")


def collected(events: Iterator[TurnEvent]) -> TurnResult:
    """What a turn's events stored."""
    for event in events:
        if isinstance(event, Stored):
            return event.result
    raise AssertionError("a turn ends with its stored turn")


def _events(admitted: Admitted) -> Iterator[TurnEvent]:
    result = yield from _decided(admitted)
    yield Stored(result)


def _decided(admitted: Admitted) -> Flow:
    ctx, stored = admitted
    if stored is not None:
        return (yield from again(ctx, stored))
    if ctx.session.handoff_state:
        try:
            return for_agent(ctx)
        except HandoffChanged as changed:
            ctx.session = changed.session  # handed back meanwhile: the bot answers it
    result = yield from new_message(ctx)
    if result is None:
        # A concurrent request with the same client_message_id stored it first: this one is
        # its retry.
        again_admitted = admit(ctx.deps, ctx.policy, ctx.message())
        return (yield from _decided(again_admitted))
    return result


# --- the stages, named ------------------------------------------------------------------------


class Stage(NamedTuple):
    name: str
    module: str  # where it is (services/conversation/turn/)
    does: str
    transitions: tuple[Transition, ...] = ()


def _caused(*causes: str) -> tuple[Transition, ...]:
    """The transitions of turn_states.TRANSITIONS with these causes (a cause may name more than
    one: a stacked message claimed or not; each must name at least one)."""
    found = tuple(t for t in TRANSITIONS if t.cause in causes)
    missing = set(causes) - {t.cause for t in found}
    if missing:
        raise ValueError(f"not transitions of turn_states: {sorted(missing)}")
    return found


STAGES: tuple[Stage, ...] = (
    Stage(
        "admit",
        "admit.py",
        "checks the message, the caller's session and whether it was sent before",
    ),
    Stage(
        "decide",
        "decide.py, stacked.py",
        "a retry by its turn's state; a new message routed, its sentiment read, then for a "
        "person, handed off, stacked or answered at once; a retry's claim",
        _caused(
            "a stacked message, written before its answer, claimed by its own request",
            "a message while the session is handed to a person",
            "a retry with its client_message_id claims it",
            "the session is handed to a person",
        ),
    ),
    Stage(
        "gather",
        "gather.py",
        "the prompt: the window, the rolling summary, the profile block, auto-recall; or a "
        "command's answer from long-term memory",
    ),
    Stage(
        "generate",
        "generate.py",
        "the model's answer as it is written, through the output filters",
    ),
    Stage(
        "settle",
        "settle.py, answer.py, stacked.py",
        "the turn stored with its answer (and a hand-off, then its event), a stack or a "
        "pending message completed, or a message kept pending when the model failed",
        _caused(
            "a message the model answers at once",
            "a message whose model call failed or ran out of time",
            "the request that stacked it answers its batch",
            "a later message's answer covers it",
            "the claiming retry's model answers",
            "the claiming request's model call fails",
        ),
    ),
)


def mermaid() -> str:
    """The pipeline's diagram (Mermaid), from STAGES."""
    boxes = [f'{stage.name}["{stage.name}<br/><small>{stage.does}</small>"]' for stage in STAGES]
    arrows = [f"{before.name} --> {after.name}" for before, after in pairwise(STAGES)]
    return diagram("flowchart LR", boxes + arrows)
