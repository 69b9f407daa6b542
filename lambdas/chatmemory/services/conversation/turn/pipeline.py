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

from collections.abc import Generator, Iterator
from typing import NamedTuple

from chatmemory.errors import HandoffChanged
from chatmemory.services.access import Found
from chatmemory.services.conversation.turn.admit import Admitted, admit
from chatmemory.services.conversation.turn.context import (
    ChatDeps,
    ChatPolicy,
    Delta,
    MemoryUsed,
    StopSignal,
    Stored,
    TurnEvent,
    TurnResult,
)
from chatmemory.services.conversation.turn.decide import again, for_agent, new_message
from chatmemory.services.conversation.turn_states import TRANSITIONS, Transition


def open_turn(
    deps: ChatDeps,
    policy: ChatPolicy,
    *,
    user_id: str,
    session_id: str,
    content: str,
    client_message_id: str | None = None,
    window_turns: int | None = None,
    stream: bool = False,
    stop: StopSignal | None = None,
    found: Found = None,
) -> Iterator[TurnEvent]:
    """The turn of one message, as events (admitted now: its errors are raised here). With
    `stream`, the model's streaming call; `stop` lets the reader stop the answer; `found`,
    the session and the caller's state as this request read them already."""
    admitted = admit(
        deps,
        policy,
        user_id=user_id,
        session_id=session_id,
        content=content,
        client_message_id=client_message_id,
        window_turns=window_turns,
        stream=stream,
        stop=stop,
        found=found,
    )
    return _events(admitted)


def post_message(
    deps: ChatDeps,
    policy: ChatPolicy,
    *,
    user_id: str,
    session_id: str,
    content: str,
    client_message_id: str | None = None,
    window_turns: int | None = None,
    found: Found = None,
) -> TurnResult:
    """Answer one message and store it as the session's next turn: its events, collected."""
    events = open_turn(
        deps,
        policy,
        user_id=user_id,
        session_id=session_id,
        content=content,
        client_message_id=client_message_id,
        window_turns=window_turns,
        found=found,
    )
    return collected(events)


def collected(events: Iterator[TurnEvent]) -> TurnResult:
    """What a turn's events stored."""
    for event in events:
        if isinstance(event, Stored):
            return event.result
    raise AssertionError("a turn ends with its stored turn")


def _events(admitted: Admitted) -> Iterator[TurnEvent]:
    result = yield from _decided(admitted)
    yield Stored(result)


def _decided(admitted: Admitted) -> Generator[Delta | MemoryUsed, None, TurnResult]:
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
        again_admitted = admit(
            ctx.deps,
            ctx.policy,
            user_id=ctx.caller,
            session_id=ctx.session.session_id,
            content=ctx.content,
            client_message_id=ctx.client_message_id,
            window_turns=ctx.window_turns,
            stream=ctx.stream,
            stop=ctx.stop,
        )
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
    lines = ["flowchart LR"]
    for stage in STAGES:
        lines.append(f'    {stage.name}["{stage.name}<br/><small>{stage.does}</small>"]')
    for before, after in zip(STAGES, STAGES[1:], strict=False):
        lines.append(f"    {before.name} --> {after.name}")
    return "\n".join(lines)
