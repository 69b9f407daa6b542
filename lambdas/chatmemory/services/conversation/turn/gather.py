"""Gather: what the model is asked with. For an ordinary message, the prompt from short-term
memory (the window of recent turns, the rolling summary, a continued conversation's last turns,
how long ago the user last wrote) and long-term memory (the profile block, auto-recall's
episodic memory); for a command (/past, /verified, /remember), its own answer from long-term
memory.

Long-term memory is read in this order: the profile's candidates (one Query) and auto-recall's
embedding and search of the message, both started as soon as the message is known to be chat,
beside the turn's own write and window read (a follow-up, whose query needs the window, is
searched after it); then the liveness of what the search found and of the profile's records,
last before the prompt is built, so that a delete that returns during the search keeps what it
deleted out of the prompt.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple, TypedDict, Unpack

from chatmemory.beside import run_beside
from chatmemory.clock import parse_time
from chatmemory.domain import Source, Turn
from chatmemory.errors import LongTermMemoryUnavailable
from chatmemory.schema import Intent, SourceKind
from chatmemory.services.access import continued
from chatmemory.services.conversation.routing import Routed
from chatmemory.services.conversation.turn.context import Memory, TurnContext
from chatmemory.services.longterm.auto_recall import (
    Asked,
    AutoRecallPolicy,
    RecallSources,
    Searched,
    query_without_history,
    recall_for_turn,
    search_memories,
)
from chatmemory.services.profile.block import Candidates
from chatmemory.services.profile.block import candidates as profile_candidates
from chatmemory.services.profile.block import checked as checked_profile
from chatmemory.services.prompt import BuiltPrompt, build_chat_prompt

if TYPE_CHECKING:
    from chatmemory.services.longterm.recall import Answer

NO_LONG_TERM_MEMORY = (
    "No long-term memory is configured for this deployment, so past conversations and "
    "verified documents cannot be searched yet."
)
REMEMBERED = "Noted: I will remember that ({type})."


class Gathered(NamedTuple):
    """An ordinary message's prompt, and what long-term memory put in it."""

    prompt: BuiltPrompt
    memory: Memory


class Window(TypedDict, total=False):
    """What a caller says of the window of recent turns a prompt holds (none: the window read
    here)."""

    # The window, when the caller read it already.
    history: list[Turn]
    # Leave out the turns from this one on (a retry of a stored message).
    before_turn: int


def gather(ctx: TurnContext, routed: Routed, turn: Turn, **window: Unpack[Window]) -> Gathered:
    """The prompt of an ordinary message (`turn`, or the stack it ends), its window as the
    caller says (Window). Fills in the turn's sources and `degraded`."""
    deps, policy = ctx.deps, ctx.policy
    history = window.get("history")
    if history is None:
        history = deps.memory.recent_turns(ctx.session.session_id, ctx.window) if ctx.window else []
    if (before_turn := window.get("before_turn")) is not None:
        history = [t for t in history if t.turn < before_turn]
    # A continued conversation: the previous session's rolling summary, and its last turns
    # until this one has a window of its own, while that session exists (access.continued).
    short = len(history) < ctx.window and _from_the_start(history)
    carried = continued(deps.memory, ctx.session, ctx.window - len(history) if short else 0)
    history = carried.turns + history
    memory = Memory()
    if not turn.degraded and deps.long_term is not None and deps.embedder is not None:
        memory = _long_term(ctx, routed, history)
        assert memory.recalled is not None and memory.profile is not None
        turn.degraded = memory.recalled.degraded or memory.profile.degraded
        turn.sources = memory.recalled.sources + memory.profile.sources
    recalled, profile = memory
    memory_tokens = (recalled.tokens if recalled else 0) + (profile.tokens if profile else 0)
    prompt = build_chat_prompt(
        system=policy.system_prompt,
        summary=_summary(carried.summary, ctx.session.running_summary),
        window=history,
        message=routed.text,
        roles=policy.roles,
        token_budget=min(policy.prompt_token_budget, _context(ctx) - memory_tokens),
        memory=recalled.block if recalled else "",
        profile=profile.text if profile else "",
        note=gap_note(history, deps.clock(), policy.long_gap_hours),
    )
    return Gathered(prompt, memory)


def start_long_term_reads(ctx: TurnContext, routed: Routed) -> None:
    """Start what long-term memory gives a chat message's prompt on threads beside the turn
    (chatmemory.beside): the profile's candidates, and auto-recall's embedding and search of
    the message when its query does not need the window. They depend on nothing the turn writes
    or reads before its prompt, so they run beside the turn's own write and window read instead
    of after them. Nothing without long-term memory."""
    deps = ctx.deps
    if deps.long_term is None or deps.embedder is None or ctx.profile_read is not None:
        return
    # With the request's context (its deadline), as any read of the turn.
    ctx.profile_read = run_beside(_profile_candidates, ctx)
    query = query_without_history(routed.text, _recall_policy(ctx))
    if query is not None:
        with ctx.before_answer():  # as when the search is made with the prompt
            ctx.recall_search = (query, run_beside(search_memories, query, *_recall_with(ctx)))


def _profile_candidates(ctx: TurnContext) -> Candidates:
    return profile_candidates(
        ctx.session.user_id,
        records=ctx.deps.memory,
        policy=ctx.policy.profile,
        budget=min(ctx.policy.profile.token_budget, _context(ctx) // 4),
    )


def _long_term(ctx: TurnContext, routed: Routed, history: list[Turn]) -> Memory:
    """The profile block and auto-recall's memories for an ordinary message."""
    # Started early (start_long_term_reads) or read now; taken once: a later prompt of the same
    # request (a stack answered again after a conflict) reads them again, as it always did.
    started, ctx.profile_read = ctx.profile_read, None
    found = started.result() if started is not None else _profile_candidates(ctx)
    with ctx.before_answer():
        sources, recall = _recall_with(ctx)
        asked = Asked(routed.text, history, found.held, _searched(ctx, routed.text))
        recalled = recall_for_turn(asked, sources, recall)
    # Last before the prompt: a delete that returned during the search is seen.
    return Memory(recalled, checked_profile(found, ctx.deps.memory))


def _recall_policy(ctx: TurnContext) -> AutoRecallPolicy:
    budget = min(ctx.policy.auto_recall.token_budget, _context(ctx) // 2)
    return ctx.policy.auto_recall._replace(token_budget=budget)


def _recall_with(ctx: TurnContext) -> tuple[RecallSources, AutoRecallPolicy]:
    """Where auto-recall searches for this turn, and its policy within the model's context."""
    deps = ctx.deps
    assert deps.long_term is not None and deps.embedder is not None
    sources = RecallSources(
        owner=ctx.session.user_id,
        memory=deps.memory,
        embedder=deps.embedder,
        index=deps.long_term,
        now=deps.clock(),
        rewriter=deps.generator if ctx.policy.rewrite_follow_ups else None,
        cache=deps.vector_cache,
    )
    return sources, _recall_policy(ctx)


def _searched(ctx: TurnContext, message: str) -> Searched | None:
    """The search started beside the turn, when it was of this message (a stack of several
    messages is searched for all of them, with the prompt); taken once, as the profile's."""
    started, ctx.recall_search = ctx.recall_search, None
    if started is None or started[0] != message:
        return None
    return Searched(started[0], started[1].result())


def _context(ctx: TurnContext) -> int:
    return ctx.deps.generator.context_tokens


def _summary(carried: str, own: str) -> str:
    """The prompt's summary of a continued conversation: the previous session's, then this
    one's (a session continued before summaries were kept apart began with a copy of it)."""
    if not carried or own.startswith(carried):
        return own
    return f"{carried}\n{own}" if own else carried


def _from_the_start(history: list[Turn]) -> bool:
    """The window holds the session from its first turn (it has no full window of its own)."""
    return not history or history[0].turn == 1


def gap_note(history: list[Turn], now: datetime, long_gap_hours: float) -> str:
    """ "The user's previous message was 3 days ago." when the last turn the model sees is
    older than `long_gap_hours`: a model cannot tell time from a transcript, and "as you said
    just now" about last month's message is the wrong answer."""
    if not history or long_gap_hours <= 0 or not history[-1].created_at:
        return ""
    last = parse_time(history[-1].created_at)
    if last is None:
        return ""
    gap = now - last
    if gap < timedelta(hours=long_gap_hours):
        return ""
    return f"The user's previous message was {_ago(gap)} ago; this conversation resumes now."


def _ago(gap: timedelta) -> str:
    hours = gap.total_seconds() / 3600
    for size, unit in ((24 * 365, "year"), (24 * 30, "month"), (24 * 7, "week"), (24, "day")):
        if hours >= size:
            count = int(hours // size)
            return f"{count} {unit}{'s' if count > 1 else ''}"
    count = int(hours)
    return f"{count} hour{'s' if count > 1 else ''}"


# --- commands: /past, /verified, /remember -----------------------------------------------------


def answer_command(ctx: TurnContext, routed: Routed, turn: Turn) -> bool:
    """Answer a command into `turn` from long-term memory. False when long-term memory could
    not be reached for a recall (the turn is marked degraded and the message is answered as
    ordinary chat from short-term memory instead)."""
    deps = ctx.deps
    if deps.long_term is None or deps.embedder is None:
        turn.response = NO_LONG_TERM_MEMORY
        turn.model = "none"
        turn.remember_response = False
        return True
    try:
        answer = _command(ctx, routed)
    except LongTermMemoryUnavailable:
        if routed.intent == Intent.REMEMBER:
            raise  # "noted" must not be said of what was not stored: a retry completes it
        # Degrade to short-term memory rather than fail the turn; the reply says so.
        turn.degraded = True
        return False
    turn.response, turn.sources, turn.model = answer.text, answer.sources, answer.model
    turn.remember_response = answer.remember
    return True


def _command(ctx: TurnContext, routed: Routed) -> Answer:
    # A command's modules (the profile's edits, /past's and /verified's search) are imported by
    # the first command, not at every chat function's cold start.
    from chatmemory.services.longterm.recall import Answer
    from chatmemory.services.profile.edits import Editing, state_record

    deps = ctx.deps
    if routed.intent == Intent.REMEMBER:
        assert deps.long_term is not None and deps.embedder is not None
        edit = Editing(deps.memory, deps.embedder, deps.long_term, deps.clock())
        record = state_record(ctx.session.user_id, routed.text, edit, record_type=None)
        source = Source(
            kind=SourceKind.RECORD, id=record.record_id, title=record.text, date=record.created_at
        )
        return Answer(REMEMBERED.format(type=record.type), [source], "none", remember=False)
    return _recall(ctx, routed)


def _recall(ctx: TurnContext, routed: Routed) -> Answer:
    from chatmemory.services.longterm.recall import (
        answer_grounded,
        past_grounding,
        search_passages,
        search_sessions,
        verified_grounding,
    )

    deps, policy, user_id = ctx.deps, ctx.policy, ctx.session.user_id
    assert deps.long_term is not None and deps.embedder is not None
    budget = min(policy.prompt_token_budget, _context(ctx))
    if routed.intent == Intent.PAST:
        found = search_sessions(
            routed.text,
            user_id=user_id,
            embedder=deps.embedder,
            index=deps.long_term,
            weights=policy.recall_weights,
            now=deps.clock(),
            k=policy.recall_sessions,
            live=lambda sessions, records: deps.memory.live(user_id, sessions, records),
        )
        floor = found[0].score * policy.recall_relative_floor if found else 0.0
        return answer_grounded(
            routed.text,
            past_grounding([s for s in found if s.score >= floor]),
            generator=deps.generator,
            max_new_tokens=policy.max_new_tokens,
            token_budget=budget,
        )
    passages = search_passages(
        routed.text,
        embedder=deps.embedder,
        index=deps.long_term,
        weights=policy.recall_weights,
        k=policy.verified_passages,
        min_score=policy.verified_min_score,
    )
    return answer_grounded(
        routed.text,
        verified_grounding(passages),
        generator=deps.generator,
        max_new_tokens=policy.max_new_tokens,
        token_budget=budget,
    )
