"""What every stage of a turn reads and what a turn gives back.

`TurnContext` is the one object the stages share (the caller, their session, the message, the
turn's settings and dependencies), instead of the same seven arguments passed down. A turn is a
sequence of events (`TurnEvent`): text deltas of the answer as the model writes it, what long-term
memory put in the prompt, and the stored turn last; the buffered answer is that sequence
collected (services/conversation/turn/pipeline.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from chatmemory import deadline
from chatmemory.clock import iso, utc_now
from chatmemory.domain import Session, Turn
from chatmemory.ports import (
    Clock,
    Embedder,
    EventPublisher,
    LongTermIndex,
    SentimentAnalyzer,
    ShortTermMemory,
    TextGenerator,
    VectorCache,
)
from chatmemory.schema import MAX_INPUT_CHARS_DEFAULT
from chatmemory.services.access import Found
from chatmemory.services.conversation import turns
from chatmemory.services.conversation.handoff import HandoffPolicy
from chatmemory.services.conversation.stacking import StackPolicy
from chatmemory.services.conversation.turns import AppendPolicy, ClientTurn, TurnWriting
from chatmemory.services.longterm.auto_recall import AutoRecallPolicy, Recalled, SearchFound
from chatmemory.services.longterm.scoring import RecallWeights
from chatmemory.services.profile.block import Candidates, ProfileBlock, ProfileBlockPolicy
from chatmemory.services.prompt import OutputFilter, ResponseFilter, Roles


class ChatPolicy(NamedTuple):
    """The knobs of a chat turn (filled from Settings by the wiring)."""

    window_turns: int = 6
    max_window_turns: int = 50
    prompt_token_budget: int = 512
    max_new_tokens: int = 256
    # A request's own sampling temperature (None: the backend's default) and stop sequences
    # (beside the roles' own): the OpenAI-compatible route's (handlers/routes/openai.py).
    temperature: float | None = None
    stop: tuple[str, ...] = ()
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
    # A deployer's transforms (INPUT_TRANSFORMS, OUTPUT_TRANSFORMS: chatmemory/plugins.py): of
    # the message's text when it is taken, and the makers of the filters an answer's pieces
    # pass through as the model writes them.
    input_transforms: tuple[Callable[[str], str], ...] = ()
    output_transforms: tuple[Callable[[Roles], OutputFilter], ...] = (ResponseFilter,)
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

    def used(self, memory: Memory) -> TurnResult:
        """This result, with what long-term memory put in its prompt."""
        self.recalled, self.profile = memory
        return self


# --- the events of a turn ------------------------------------------------------------------------


class Delta(NamedTuple):
    """A piece of the answer's text, as the model writes it (after the output filters)."""

    text: str


class MemoryUsed(NamedTuple):
    """What long-term memory put in the prompt, before the model answers."""

    memory: Memory


class Stored(NamedTuple):
    """The turn stored, last: what the buffered route answers."""

    result: TurnResult


TurnEvent = Delta | MemoryUsed | Stored
R = TypeVar("R")
# A part of a turn: yields deltas and memory as they come, returns R (what it settled: Flow).
Part = Generator[Delta | MemoryUsed, None, R]
Flow = Part[TurnResult]


class StopSignal:
    """A streamed answer's reader asking its model to stop (the user's Stop, a client gone):
    what it had shown, the answer as stored (services/conversation/turn/generate.py)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.shown: str | None = None

    def stop(self, shown: str | None = None) -> None:
        self.shown = shown
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


class Message(NamedTuple):
    """One chat message as its caller sent it: to the session the caller's id names, with what
    the API takes beside its text. `stream`: answer with the backend's streaming call; `stop`
    lets a streamed answer's reader stop it. `found`: the session and the caller's state as
    the read that resolved the session found them (sessions.resolve_current), or None: read
    them when the message is admitted."""

    user_id: str
    session_id: str
    content: str
    client_message_id: str | None = None
    window_turns: int | None = None
    stream: bool = False
    stop: StopSignal | None = None
    found: Found = None


@dataclass
class TurnContext:
    """One turn: who asks, in which session, with what, under which settings and with which
    stores and models. Stages read it; `session` follows the session as it changes (a hand-off
    or a conflict read it again)."""

    deps: ChatDeps
    policy: ChatPolicy
    caller: str
    session: Session
    content: str
    client_message_id: str | None
    # The recent turns the prompt holds, and what the caller asked for (None: the default).
    window: int
    window_turns: int | None
    # Answer with the backend's streaming call (the text as it is written) rather than its
    # whole-answer call; the stored turn is the same either way.
    stream: bool = False
    # A streamed answer's reader may stop it (None: a buffered answer runs to its end).
    stop: StopSignal | None = None
    # The profile block's candidates and auto-recall's search of the message (its query, what
    # it found), started from when the message is known to be chat
    # (gather.start_long_term_reads), beside the turn's own write and window read; gather
    # takes them (None: gather reads and searches itself).
    profile_read: Future[Candidates] | None = None
    recall_search: tuple[str, Future[SearchFound]] | None = None

    @property
    def memory(self) -> ShortTermMemory:
        return self.deps.memory

    def now(self) -> str:
        return iso(self.deps.clock())

    def expiry(self) -> int | None:
        return expiry(self.deps, self.policy)

    def message(self) -> Message:
        """The message again, as admitted (its text as the input transforms left it)."""
        return Message(
            self.caller,
            self.session.session_id,
            self.content,
            self.client_message_id,
            self.window_turns,
            self.stream,
            self.stop,
        )

    def before_answer(self) -> AbstractContextManager[deadline.Deadline]:
        """The request's deadline less the answer's reserve, for an optional step before it."""
        return deadline.within(deadline.current().less(self.policy.answer_reserve_seconds))


def expiry(deps: ChatDeps, policy: ChatPolicy) -> int | None:
    """When a turn written now expires (TURN_TTL_DAYS; None: kept)."""
    if policy.turn_ttl_days <= 0:
        return None
    return int(deps.clock().timestamp()) + policy.turn_ttl_days * 86_400


def writing(deps: ChatDeps, policy: ChatPolicy) -> TurnWriting:
    """How a turn is written now under the chat's settings (its clock, retries and expiry)."""
    return TurnWriting(deps.clock, deps.sleep, policy.append, expiry(deps, policy))


def store_client_turn(
    deps: ChatDeps,
    policy: ChatPolicy,
    user_id: str,
    session_id: str,
    said: ClientTurn,
    found: Found = None,
) -> turns.Stored:
    """The turn a client `said` stored as the session's next, under the chat's settings and
    without a model call (services/conversation/turns.store_turn): POST /turns, and the earlier
    exchanges a chat completion brings along."""
    return turns.store_turn(
        deps.memory,
        said,
        writing(deps, policy),
        user_id=user_id,
        session_id=session_id,
        max_input_chars=policy.max_input_chars,
        sentiment=deps.stored_sentiment,
        found=found,
    )
