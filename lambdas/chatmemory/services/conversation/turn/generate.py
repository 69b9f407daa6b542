"""Generate: the model's answer as it is written, text deltas after the output filters (an echoed
role prefix, anti-prompts split across pieces), then the turn's answer fields from the last
piece. The only place a chat turn calls the text model.
"""

from __future__ import annotations

from collections.abc import Generator

from chatmemory import deadline
from chatmemory.domain import Turn
from chatmemory.ports import Finish, GenerationOptions
from chatmemory.services.conversation.turn.context import Delta, TurnContext
from chatmemory.services.prompt import BuiltPrompt, clean_pieces


def generate(ctx: TurnContext, prompt: BuiltPrompt, turn: Turn) -> Generator[Delta, None, None]:
    """Yield the answer's text as it comes and fill in `turn`'s answer (response, model, token
    counts, the prompt when kept). With `ctx.stream`, the backend's streaming call; without, its
    whole-answer call (the same request a buffered answer always made)."""
    deps, policy = ctx.deps, ctx.policy
    deadline.current().require(deadline.MIN_CALL_SECONDS, "answer this message")
    options = GenerationOptions(
        policy.max_new_tokens,
        tuple(policy.roles.stop_words()),
        constant_prefix=prompt.constant_prefix,
    )
    text: list[str] = []
    finish = Finish()
    pieces = clean_pieces(
        deps.generator.pieces(prompt.text, options, stream=ctx.stream), policy.roles
    )
    try:
        for piece in pieces:
            if ctx.stop is not None and ctx.stop.is_set():
                break
            if isinstance(piece, str):
                text.append(piece)
                yield Delta(piece)
            else:
                finish = piece
    finally:
        # Stopped (or failed): the model's connection is let go now.
        getattr(pieces, "close", lambda: None)()
    turn.response = "".join(text)
    if ctx.stop is not None and ctx.stop.is_set():
        # What the reader showed is the answer; the model's count of it is unknown.
        turn.response, turn.stopped = ctx.stop.shown or turn.response, True
    turn.remember_response = finish.remember
    turn.model = finish.model or deps.generator.name
    turn.input_tokens = finish.input_tokens or prompt.tokens
    turn.output_tokens = finish.output_tokens
    if policy.store_prompt:
        turn.prompt = prompt.text
