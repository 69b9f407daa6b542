"""One chat turn: route, build the prompt from short-term memory, call the model, store the turn.

DynamoDB work per turn is constant: read the session, query the last N turns, write the turn
and the session counters in one transaction. A retry with the same client_message_id finds its
turn through the session item and never calls the model twice for a completed turn.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from chatmemory import deadline
from chatmemory.clock import iso, parse_time, utc_now
from chatmemory.domain import Handoff, Session, Source, Turn
from chatmemory.errors import (
    BadRequest,
    ChatMemoryError,
    Conflict,
    HandoffChanged,
    LongTermMemoryUnavailable,
    SessionEnded,
    SessionNotFound,
)
from chatmemory.ports import (
    Clock,
    Embedder,
    EventPublisher,
    GenerationOptions,
    LongTermIndex,
    SentimentAnalyzer,
    ShortTermMemory,
    TextGenerator,
    VectorCache,
    collect,
)
from chatmemory.schema import (
    HANDOFF_EVENT,
    MAX_INPUT_CHARS_DEFAULT,
    HandoffReason,
    Intent,
    SessionStatus,
    SourceKind,
    TurnOrigin,
)
from chatmemory.services.access import continued, owned_session
from chatmemory.services.conversation import handoff
from chatmemory.services.conversation.handoff import HandoffPolicy
from chatmemory.services.conversation.routing import Routed, parse_prefix, route
from chatmemory.services.conversation.sentiment import analyze_input
from chatmemory.services.conversation.sessions import title_from
from chatmemory.services.conversation.stacking import (
    StackPolicy,
    joined_input,
    plan,
    settled,
    wait_for_answer,
    wait_while_claimed,
)
from chatmemory.services.conversation.turn_states import SETTLED, TurnState, state_of
from chatmemory.services.conversation.turns import (
    AppendPolicy,
    append_next,
    check_text,
    earlier_turn,
)
from chatmemory.services.longterm.auto_recall import AutoRecallPolicy, Recalled, recall_for_turn
from chatmemory.services.longterm.recall import (
    Answer,
    RecallWeights,
    answer_from_past,
    answer_from_verified,
    search_passages,
    search_sessions,
)
from chatmemory.services.profile.block import ProfileBlock, ProfileBlockPolicy
from chatmemory.services.profile.block import candidates as profile_candidates
from chatmemory.services.profile.block import checked as checked_profile
from chatmemory.services.profile.profile import state_record
from chatmemory.services.prompt import Roles, build_chat_prompt, clean_output

NO_LONG_TERM_MEMORY = (
    "No long-term memory is configured for this deployment, so past conversations and "
    "verified documents cannot be searched yet."
)


class ChatPolicy(NamedTuple):
    """The knobs of a chat turn (filled from Settings by the wiring)."""

    window_turns: int = 6
    max_window_turns: int = 50
    prompt_token_budget: int = 512
    max_new_tokens: int = 256
    max_input_chars: int = MAX_INPUT_CHARS_DEFAULT
    roles: Roles = Roles()
    system_prompt: str = "You are a helpful assistant."
    use_classifier: bool = False
    store_prompt: bool = False
    keep_message_ids: int = 50
    turn_ttl_days: int = 0
    # Optimistic-concurrency retries when parallel turns race for the same turn number.
    append_attempts: int = 30
    recall_weights: RecallWeights = RecallWeights()
    recall_sessions: int = 3
    # A recalled session below this share of the best one's score is noise, not a source.
    recall_relative_floor: float = 0.25
    verified_passages: int = 4
    # Below this fused score a verified passage does not count as relevant.
    verified_min_score: float = 0.35
    auto_recall: AutoRecallPolicy = AutoRecallPolicy()
    # The user's lasting facts and preferences in every chat prompt (services/profile/block.py),
    # within a budget of their own (at most a quarter of the model's context).
    profile: ProfileBlockPolicy = ProfileBlockPolicy()
    # After this long without a message the prompt says how long it has been (0: never).
    long_gap_hours: float = 6.0
    # With a text model: make follow-ups standalone with it before auto-recall searches.
    rewrite_follow_ups: bool = False
    # Messages sent before the bot answered are answered together
    # (services/conversation/stacking.py).
    stack: StackPolicy = StackPolicy()
    # What the optional model calls before the answer (sentiment, a follow-up's rewrite, the
    # embedding of auto-recall) leave of the request's deadline for the answer itself: past
    # it they give up (the turn goes on without them) rather than starve the answer.
    answer_reserve_seconds: float = 10.0

    @property
    def append(self) -> AppendPolicy:
        """How a turn is written as the session's next (services/conversation/turns.append_next)."""
        return AppendPolicy(self.keep_message_ids, self.append_attempts)

    # Hand-off to a person: the automatic rules (services/conversation/handoff.py).
    handoff: HandoffPolicy = HandoffPolicy()


@dataclass
class ChatDeps:
    memory: ShortTermMemory
    generator: TextGenerator
    embedder: Embedder | None = None
    long_term: LongTermIndex | None = None
    clock: Clock = utc_now
    sleep: Callable[[float], None] = time.sleep
    # The sentiment of a chat turn's input, and of a stored turn's (POST /turns calls no model,
    # so this one never asks the text model); None: turns carry none.
    sentiment: SentimentAnalyzer | None = None
    stored_sentiment: SentimentAnalyzer | None = None
    # Where hand-off events go (None: nowhere).
    events: EventPublisher | None = None
    # Where auto-recall keeps its small-talk phrasings' vectors across cold starts (None: each
    # process embeds them).
    vector_cache: VectorCache | None = None


class Memory(NamedTuple):
    """What long-term memory put in a turn's prompt (None: nothing was asked of it)."""

    recalled: Recalled | None = None
    profile: ProfileBlock | None = None


@dataclass
class TurnResult:
    turn: Turn
    # True for a retried request: its turn was stored by an earlier request with the same
    # client_message_id (which may still have been waiting for its answer).
    replayed: bool = False
    # What auto-recall put in the prompt (None when it did not run: a replay, a command).
    recalled: Recalled | None = None
    # What the profile block put in the prompt (None when no prompt was built: a replay, a
    # command).
    profile: ProfileBlock | None = None
    # Why the input has no sentiment although an analyzer is configured (for the log).
    sentiment_error: str = ""
    # Stacked messages: the later turn whose answer covered this message too.
    answer: Turn | None = None
    # Hand-off to a person: why this turn's hand-off event was not published (for the log).
    event_error: str = ""


def post_message(
    deps: ChatDeps,
    policy: ChatPolicy,
    *,
    user_id: str,
    session_id: str,
    content: str,
    client_message_id: str | None = None,
    window_turns: int | None = None,
) -> TurnResult:
    """Answer one message and store it as the session's next turn, in named steps: a message
    sent again (its client_message_id known) is taken where its state left it
    (services/conversation/turn_states.py); a new one goes to the person the session is handed to,
    or is routed and then handed off, stacked, or answered by the model."""
    window = _check_request(policy, content, window_turns)
    session = owned_session(deps.memory, user_id, session_id)
    stored = earlier_turn(deps.memory, session, client_message_id, content)
    if stored is not None:
        return _again(deps, policy, user_id, session, stored, window)
    if session.status != SessionStatus.OPEN:
        raise SessionEnded(f"session {session_id} is {session.status.lower()}; start a new one")
    if session.handoff_state:
        try:
            return _for_agent(deps, policy, user_id, session, content, client_message_id)
        except HandoffChanged as changed:
            session = changed.session  # handed back meanwhile: the bot answers it
    return _new_message(
        deps, policy, user_id, session, content, client_message_id, window, window_turns
    )


def _unanswered(session: Session, number: int) -> SessionEnded:
    """The refusal of a message its session ended before anyone answered: the turn stays
    stored, unanswered (TurnState.UNANSWERED)."""
    return SessionEnded(
        f"session {session.session_id} ended before turn {number} was answered; "
        "the message is kept unanswered: ask it again in a new session"
    )


def _again(
    deps: ChatDeps, policy: ChatPolicy, user_id: str, session: Session, stored: Turn, window: int
) -> TurnResult:
    """A message sent again with its client_message_id: what its turn's state calls for."""
    if stored.origin == TurnOrigin.CLIENT:
        raise Conflict(
            f"client_message_id was used to store turn {stored.turn} with POST /turns; "
            "use a new id to have this service answer"
        )
    state = state_of(stored, session_status=session.status)
    if state in SETTLED:
        return _replayed(deps, stored)
    if state == TurnState.UNANSWERED:
        raise _unanswered(session, stored.turn)
    if session.handoff_state:
        # Handed to a person since: the message still waiting for the bot is theirs.
        handoff.give_to_agent(deps.memory, session, [stored.turn])
        again = deps.memory.get_turn(session.session_id, stored.turn)
        return TurnResult(again or stored, replayed=True)
    return _retry(deps, policy, user_id, session, stored, window)


def _new_message(
    deps: ChatDeps,
    policy: ChatPolicy,
    user_id: str,
    session: Session,
    content: str,
    client_message_id: str | None,
    window: int,
    window_turns: int | None,
) -> TurnResult:
    """A message not seen before, in an open session with the bot: routed, its sentiment read,
    then handed off, stacked or answered."""
    classifier = deps.generator if policy.use_classifier else None
    routed = route(content, generator=classifier)
    started = time.perf_counter()
    # Of what the user said (a command is not scored), before the model answers: a turn kept
    # pending because the model failed carries it too.
    with _before_answer(policy):
        sentiment, sentiment_error = analyze_input(deps.sentiment, content)
    turn = Turn(
        session_id=session.session_id,
        turn=0,
        user_id=session.user_id,  # the owner key, as the session's
        input=content,
        response=None,
        intent=routed.intent,
        created_at=iso(deps.clock()),
        client_message_id=client_message_id,
        expires_at=expiry(deps, policy),
        sentiment=sentiment,
    )
    handed = _handoff_turn(deps, policy, user_id, session, routed, turn, window)
    if handed is not None:
        handed.sentiment_error = sentiment_error
        return handed
    if _stacks(policy, turn):
        result = _stack_then_answer(deps, policy, user_id, session, turn, window, window_turns)
        result.sentiment_error = sentiment_error
        return result
    result = _answer_now(deps, policy, user_id, session, routed, turn, window, started)
    if not result.replayed:
        result.sentiment_error = sentiment_error
    return result


def _stack_then_answer(
    deps: ChatDeps,
    policy: ChatPolicy,
    user_id: str,
    session: Session,
    turn: Turn,
    window: int,
    window_turns: int | None,
) -> TurnResult:
    """A stacked message: written first (pending), answered with whatever else the user sends
    before the answer, by this request or a later one. It is written claimed by this request
    (answering_until, as a retry claims it): a re-send of it while this request answers (a
    client that timed out, the same message posted twice) waits for the answer instead of
    calling the model again; the claim is given up at once if this request fails, and runs
    out after `patience_seconds` if it dies."""
    turn.pending = True
    until = iso(deps.clock() + timedelta(seconds=policy.stack.patience_seconds))
    turn.answering_until = until
    appended = _append(deps, policy, user_id, session, turn, stack=True)
    if appended.replayed:  # a concurrent retry of this message wrote it first
        return post_message(
            deps,
            policy,
            user_id=user_id,
            session_id=session.session_id,
            content=turn.input,
            client_message_id=turn.client_message_id,
            window_turns=window_turns,
        )
    number = appended.turn.turn
    try:
        if policy.stack.wait_seconds > 0:
            # Not into the time the answer needs: a burst arriving later is answered anyway.
            spare = deadline.current().remaining() - policy.answer_reserve_seconds
            deps.sleep(max(0.0, min(policy.stack.wait_seconds, spare)))
        return _settle_stack(deps, policy, user_id, session, number, window)
    except BaseException:
        with contextlib.suppress(Exception):
            deps.memory.release_answer(session.session_id, number, until=until)
        raise


def _answer_now(
    deps: ChatDeps,
    policy: ChatPolicy,
    user_id: str,
    session: Session,
    routed: Routed,
    turn: Turn,
    window: int,
    started: float,
) -> TurnResult:
    """Ask the model, then store the message with its answer in one write. A model that fails
    leaves the message stored, pending: a retry with its client_message_id completes it."""
    try:
        used = _answer(deps, policy, session, routed, turn, window)
    except ChatMemoryError as failure:
        if failure.status < 500:
            raise
        turn.pending = True
        _append(deps, policy, user_id, session, turn)
        raise
    turn.latency_ms = int((time.perf_counter() - started) * 1000)
    reason = None
    if handoff.nothing_verified(policy.handoff, routed.intent, turn):
        reason = HandoffReason.NOTHING_VERIFIED
    result = _store_answer(deps, policy, user_id, session, turn, reason)
    if not result.replayed:
        result.recalled, result.profile = used
    return result


def _replayed(deps: ChatDeps, stored: Turn) -> TurnResult:
    """A retried message that is answered: its turn (and the turn holding its answer, for a
    message answered together with later ones)."""
    if stored.answered_by is None:
        return TurnResult(stored, replayed=True)
    answer = deps.memory.get_turn(stored.session_id, stored.answered_by)
    return TurnResult(stored, replayed=True, answer=answer)


# How often a retry tries to claim a message, waiting after each claim another retry holds.
_RETRY_CLAIMS = 3


def _retry(
    deps: ChatDeps,
    policy: ChatPolicy,
    caller: str,
    session: Session,
    stored: Turn,
    window: int,
) -> TurnResult:
    """A retry of a message still waiting for its answer (its model call failed, or the request
    answering it died). Of retries arriving together, one claims the message (one conditional
    write) and calls the model; the others wait for its answer, so the model is called once.
    A claim lasts `patience_seconds`; a claimer whose model call fails gives it up at once."""
    number = stored.turn
    for _ in range(_RETRY_CLAIMS):
        now = deps.clock()
        until = iso(now + timedelta(seconds=policy.stack.patience_seconds))
        if deps.memory.claim_answer(session.session_id, number, until=until, now=iso(now)):
            try:
                if _stacks(policy, stored):
                    retried = _settle_stack(deps, policy, caller, session, number, window)
                    retried.replayed = True  # its turn was stored by an earlier request
                    return retried
                return _complete_pending(deps, policy, session, stored, window)
            except BaseException:
                with contextlib.suppress(Exception):
                    deps.memory.release_answer(session.session_id, number, until=until)
                raise
        current = wait_while_claimed(
            deps.memory,
            session.session_id,
            number,
            policy=policy.stack,
            sleep=deps.sleep,
            now=lambda: iso(deps.clock()),
        )
        if current is None:  # deleted meanwhile
            raise SessionNotFound(f"session {session.session_id} not found")
        if settled(current):
            return _replayed(deps, current)
        stored = current
    raise Conflict(
        "another request is answering this message; retry with the same client_message_id"
    )


def _check_request(policy: ChatPolicy, content: str, window_turns: int | None) -> int:
    check_text(content, "content", policy.max_input_chars)
    window = policy.window_turns if window_turns is None else window_turns
    if not 0 <= window <= policy.max_window_turns:
        raise BadRequest(f"window_turns must be between 0 and {policy.max_window_turns}")
    return window


def expiry(deps: ChatDeps, policy: ChatPolicy) -> int | None:
    """When a turn written now expires (TURN_TTL_DAYS; None: kept)."""
    if policy.turn_ttl_days <= 0:
        return None
    return int(deps.clock().timestamp()) + policy.turn_ttl_days * 86_400


def _answer(
    deps: ChatDeps,
    policy: ChatPolicy,
    session: Session,
    routed: Routed,
    turn: Turn,
    window: int,
    before_turn: int | None = None,
    history: list[Turn] | None = None,
) -> Memory:
    """Fill in turn.response (and sources/model/tokens) for the routed intent; returns what
    long-term memory put in an ordinary turn's prompt: the profile block and auto-recall's."""
    if routed.intent != Intent.CHAT:
        if deps.long_term is None or deps.embedder is None:
            turn.response = NO_LONG_TERM_MEMORY
            turn.model = "none"
            turn.remember_response = False
            return Memory()
        try:
            answer = _command(deps, policy, session, routed)
        except LongTermMemoryUnavailable:
            if routed.intent == Intent.REMEMBER:
                raise  # "noted" must not be said of what was not stored: a retry completes it
            # Degrade to short-term memory rather than fail the turn; the reply says so.
            turn.degraded = True
        else:
            turn.response, turn.sources, turn.model = answer.text, answer.sources, answer.model
            turn.remember_response = answer.remember
            return Memory()
    if history is None:
        history = deps.memory.recent_turns(session.session_id, window) if window else []
    if before_turn is not None:
        history = [t for t in history if t.turn < before_turn]
    # A continued conversation: the previous session's rolling summary, and its last turns
    # until this one has a window of its own, while that session exists (access.continued).
    short = len(history) < window and _from_the_start(history)
    carried = continued(deps.memory, session, window - len(history) if short else 0)
    history = carried.turns + history
    note = gap_note(history, deps.clock(), policy.long_gap_hours)
    context = deps.generator.context_tokens
    recalled = None
    profile = None
    if turn.degraded:
        pass  # a command that could not reach long-term memory: no second try
    elif deps.long_term is not None and deps.embedder is not None:
        found = profile_candidates(
            session.user_id,
            records=deps.memory,
            policy=policy.profile,
            budget=min(policy.profile.token_budget, context // 4),
        )
        with _before_answer(policy):
            recalled = _recall_for_turn(deps, policy, session, routed, history, found.held)
        # Last before the prompt: a delete that returned during the search is seen.
        profile = checked_profile(found, deps.memory)
        turn.degraded = recalled.degraded or profile.degraded
        turn.sources = recalled.sources + profile.sources
    memory_tokens = (recalled.tokens if recalled else 0) + (profile.tokens if profile else 0)
    prompt = build_chat_prompt(
        system=policy.system_prompt,
        summary=_summary(carried.summary, session.running_summary),
        window=history,
        message=routed.text,
        roles=policy.roles,
        token_budget=min(policy.prompt_token_budget, context - memory_tokens),
        memory=recalled.block if recalled else "",
        profile=profile.text if profile else "",
        note=note,
    )
    deadline.current().require(deadline.MIN_CALL_SECONDS, "answer this message")
    options = GenerationOptions(
        policy.max_new_tokens,
        tuple(policy.roles.stop_words()),
        constant_prefix=prompt.constant_prefix,
    )
    generation = collect(deps.generator.pieces(prompt.text, options))
    turn.response = clean_output(generation.text, policy.roles)
    turn.remember_response = generation.remember
    turn.model = generation.model or deps.generator.name
    turn.input_tokens = generation.input_tokens or prompt.tokens
    turn.output_tokens = generation.output_tokens
    if policy.store_prompt:
        turn.prompt = prompt.text
    return Memory(recalled, profile)


def _before_answer(policy: ChatPolicy) -> AbstractContextManager[deadline.Deadline]:
    """The request's deadline less the answer's reserve, for an optional step before it."""
    return deadline.within(deadline.current().less(policy.answer_reserve_seconds))


def _recall_for_turn(
    deps: ChatDeps,
    policy: ChatPolicy,
    session: Session,
    routed: Routed,
    history: list[Turn],
    held: dict[str, str],
) -> Recalled:
    """Auto-recall's memories for an ordinary turn (services/longterm/auto_recall.py), but the
    records the profile block holds (`held`)."""
    assert deps.long_term is not None and deps.embedder is not None
    context = deps.generator.context_tokens
    return recall_for_turn(
        routed.text,
        history,
        owner=session.user_id,
        memory=deps.memory,
        embedder=deps.embedder,
        index=deps.long_term,
        policy=policy.auto_recall._replace(
            token_budget=min(policy.auto_recall.token_budget, context // 2)
        ),
        now=deps.clock(),
        rewriter=deps.generator if policy.rewrite_follow_ups else None,
        cache=deps.vector_cache,
        held=held,
    )


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


REMEMBERED = "Noted: I will remember that ({type})."


def _command(deps: ChatDeps, policy: ChatPolicy, session: Session, routed: Routed) -> Answer:
    if routed.intent == Intent.REMEMBER:
        assert deps.long_term is not None and deps.embedder is not None
        record = state_record(
            session.user_id,
            routed.text,
            record_type=None,
            memory=deps.memory,
            embedder=deps.embedder,
            index=deps.long_term,
            now=deps.clock(),
        )
        source = Source(
            kind=SourceKind.RECORD, id=record.record_id, title=record.text, date=record.created_at
        )
        return Answer(REMEMBERED.format(type=record.type), [source], "none", remember=False)
    return _recall(deps, policy, session.user_id, routed)


def _recall(deps: ChatDeps, policy: ChatPolicy, user_id: str, routed: Routed) -> Answer:
    assert deps.long_term is not None and deps.embedder is not None
    budget = min(policy.prompt_token_budget, deps.generator.context_tokens)
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
        return answer_from_past(
            routed.text,
            [s for s in found if s.score >= floor],
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
    return answer_from_verified(
        routed.text,
        passages,
        generator=deps.generator,
        max_new_tokens=policy.max_new_tokens,
        token_budget=budget,
    )


def _append(
    deps: ChatDeps,
    policy: ChatPolicy,
    caller: str,
    session: Session,
    turn: Turn,
    change: Handoff | None = None,
    *,
    stack: bool = False,
) -> TurnResult:
    stored = append_next(
        deps.memory,
        caller,
        session,
        turn,
        policy=policy.append,
        sleep=deps.sleep,
        handoff=change,
        stack=stack,
    )
    return TurnResult(stored.turn, replayed=stored.replayed)


def _stacks(policy: ChatPolicy, turn: Turn) -> bool:
    """Whether this message waits for others to be answered with (chat messages only: a
    command is answered on its own)."""
    return policy.stack.enabled and turn.intent == Intent.CHAT and turn.origin == TurnOrigin.CHAT


def _settle_stack(
    deps: ChatDeps, policy: ChatPolicy, caller: str, session: Session, number: int, window: int
) -> TurnResult:
    """Answer the waiting message `number`, alone or with the others waiting with it, or wait
    for the request that answers them all (see services/conversation/stacking.py)."""
    stack = policy.stack
    takeover = False
    computed: tuple[tuple[int, ...], Turn, Memory] | None = None
    for _ in range(policy.append_attempts):
        tail = deps.memory.recent_turns(session.session_id, window + stack.read_ahead)
        mine = next((t for t in tail if t.turn == number), None)
        if mine is None:
            mine = deps.memory.get_turn(session.session_id, number)
            if mine is None:  # deleted meanwhile
                raise SessionNotFound(f"session {session.session_id} not found")
        if settled(mine):
            return _stacked_result(deps, mine, tail)
        if session.status != SessionStatus.OPEN:
            raise _unanswered(session, number)
        chosen = plan(tail, mine, now=deps.clock(), policy=stack, takeover=takeover)
        if chosen.wait:
            answered = wait_for_answer(
                deps.memory, session.session_id, number, policy=stack, sleep=deps.sleep
            )
            takeover = answered is None  # the head's request is gone: answer them ourselves
            continue
        batch = list(chosen.batch)
        numbers = tuple(t.turn for t in batch)
        text = joined_input(batch)
        if computed is not None and computed[0] == numbers:
            # The same messages as before a write that failed for another reason (a
            # transaction conflict): the answer computed then still stands.
            _, answer, used = computed
        else:
            answer = batch[-1]
            earlier = [t for t in tail if t.turn < answer.turn and t.turn not in numbers]
            started = time.perf_counter()
            used = _answer(
                deps,
                policy,
                session,
                Routed(Intent.CHAT, text, "stacked"),
                answer,
                window,
                history=earlier[-window:] if window else [],
            )
            answer.latency_ms = int((time.perf_counter() - started) * 1000)
            computed = (numbers, answer, used)
        rename = title_from(text) if session.auto_named else None
        try:
            deps.memory.complete_stack(
                answer,
                [t.turn for t in batch[:-1]],
                head=None if chosen.force else answer.turn,
                rename=rename,
            )
        except Conflict:
            # A newer message arrived (its request answers this one too), another request
            # answered first, or the session ended: read again. An ended session refuses the
            # message only if nobody answered it before the end (the loop's first check).
            session = owned_session(deps.memory, caller, session.session_id)
            if session.status == SessionStatus.OPEN and session.handoff_state:
                # Handed to a person while the model answered: the messages are theirs.
                handoff.give_to_agent(deps.memory, session, [t.turn for t in batch])
            continue
        answer.pending = False
        if answer.turn == number:
            return TurnResult(answer, recalled=used.recalled, profile=used.profile)
        mine.pending, mine.answered_by = False, answer.turn
        return TurnResult(mine, answer=answer, recalled=used.recalled, profile=used.profile)
    raise Conflict("the session is busy with other messages; retry with the same client_message_id")


def _stacked_result(deps: ChatDeps, mine: Turn, tail: list[Turn]) -> TurnResult:
    """A message answered by another request: its turn, with the turn that holds the answer."""
    if mine.answered_by is None:
        return TurnResult(mine)
    answer = next((t for t in tail if t.turn == mine.answered_by), None)
    if answer is None:
        answer = deps.memory.get_turn(mine.session_id, mine.answered_by)
    return TurnResult(mine, answer=answer)


def _complete_pending(
    deps: ChatDeps, policy: ChatPolicy, session: Session, turn: Turn, window: int
) -> TurnResult:
    """A retry of a message whose model call failed: answer it now and fill in the stored turn.

    Only while the session is open: once it ended, consolidation has taken (or is taking) the
    session into long-term memory with this message unanswered, and an answer added later
    would never reach it. The message stays, marked pending, and the retry is told why."""
    if session.status != SessionStatus.OPEN:
        raise _unanswered(session, turn.turn)
    routed = Routed(turn.intent, parse_prefix(turn.input).text, "stored")
    started = time.perf_counter()
    used = _answer(deps, policy, session, routed, turn, window, before_turn=turn.turn)
    turn.pending = False
    turn.latency_ms = int((time.perf_counter() - started) * 1000)
    try:
        # As a stack of one: only while the message waits and the session is open and with
        # the bot (a hand-off during this model call makes the message the agent's).
        deps.memory.complete_stack(turn, [], head=None)
    except Conflict:
        stored = deps.memory.get_turn(turn.session_id, turn.turn)
        if stored is not None and not stored.pending:
            # A concurrent retry of the same message completed it first: its answer is the
            # one stored, so it is the one this retry returns too.
            return TurnResult(stored, replayed=True)
        current = deps.memory.get_session(turn.session_id)
        if stored is None or current is None or current.status != SessionStatus.OPEN:
            raise SessionEnded(
                f"session {turn.session_id} ended before turn {turn.turn} was answered"
            ) from None
        if not current.handoff_state:
            raise
        handoff.give_to_agent(deps.memory, current, [turn.turn])
        given = deps.memory.get_turn(turn.session_id, turn.turn)
        return TurnResult(given or stored, replayed=True)
    return TurnResult(turn, recalled=used.recalled, profile=used.profile)


# --- hand-off to a person (services/conversation/handoff.py) --------------------------------------


def _for_agent(
    deps: ChatDeps,
    policy: ChatPolicy,
    caller: str,
    session: Session,
    content: str,
    client_message_id: str | None,
) -> TurnResult:
    """A message while the session is handed to a person: stored for the agent, unanswered
    (HandoffChanged when it was handed back meanwhile: the bot answers it then)."""
    turn, sentiment_error = handoff.for_agent_turn(
        session,
        content=content,
        client_message_id=client_message_id,
        sentiment=deps.stored_sentiment,  # no model call while a person answers
        created_at=iso(deps.clock()),
        expires_at=expiry(deps, policy),
    )
    result = _append(deps, policy, caller, session, turn)
    result.sentiment_error = "" if result.replayed else sentiment_error
    return result


def _handoff_turn(
    deps: ChatDeps,
    policy: ChatPolicy,
    caller: str,
    session: Session,
    routed: Routed,
    turn: Turn,
    window: int,
) -> TurnResult | None:
    """`/human`, or a message that makes the negative-sentiment rule hand the session off:
    answered alone (not stacked) and stored with the hand-off in one write. None otherwise."""
    if routed.intent == Intent.HUMAN:
        handoff.human_command(turn, turn.created_at)
        # Its note is the turn's input: the agent reads it there, and no event carries it.
        return _store_answer(deps, policy, caller, session, turn, HandoffReason.USER_REQUEST)
    if routed.intent != Intent.CHAT or not handoff.is_negative(policy.handoff, turn):
        return None
    # The window the answer needs anyway, and the turns the rule looks at, in one query.
    wanted = max(window, handoff.history_for_rules(policy.handoff))
    history = deps.memory.recent_turns(session.session_id, wanted) if wanted else []
    if not handoff.negative_streak(policy.handoff, session, turn, history):
        return None
    started = time.perf_counter()
    used = _answer(
        deps, policy, session, routed, turn, window, history=history[-window:] if window else []
    )
    turn.latency_ms = int((time.perf_counter() - started) * 1000)
    result = _store_answer(deps, policy, caller, session, turn, HandoffReason.NEGATIVE_SENTIMENT)
    if not result.replayed:
        result.recalled, result.profile = used
    return result


def _store_answer(
    deps: ChatDeps,
    policy: ChatPolicy,
    caller: str,
    session: Session,
    turn: Turn,
    reason: str | None,
) -> TurnResult:
    """Store an answered turn (with `reason`: and hand the session off in the same write, then
    publish the event). A hand-off that committed while the bot answered wins: the answer is
    dropped and the message stored for the agent."""
    change = handoff.answered_with_handoff(turn, reason, turn.created_at) if reason else None
    try:
        result = _append(deps, policy, caller, session, turn, change)
    except HandoffChanged as changed:
        if not changed.session.handoff_state:
            raise
        return _append(deps, policy, caller, changed.session, handoff.as_for_agent(turn))
    if change is not None and reason is not None and not result.replayed:
        detail = handoff.handoff_detail(
            session,
            caller=caller,
            reason=reason,
            turn=result.turn.turn,
            at=turn.created_at,
        )
        result.event_error = handoff.publish(deps.events, HANDOFF_EVENT, detail)
    return result
