"""Stacked messages: several messages a user sends before the bot answered are answered together.

People type the way they speak: "hi", "my order didn't arrive", "it's #1234", three messages in
a few seconds. Answered one by one, the bot greets, then asks for the order number it is about
to be given, and each answer is computed without the messages after it. Here every chat message
is written first, waiting for its answer (`pending`), and the request of the newest waiting
message (the stack's `head`) answers all the waiting messages in one model call; the earlier
requests learn which turn answered them (`answered_by`) and return that answer.

Per message, in order:
1. The message is written as the session's next turn, pending, and becomes the session's
   `stack_head` (the same transaction that numbers it, so numbering stays contiguous).
2. After `wait_seconds` (0 by default; see README "Stacked messages"), the session's last
   turns are read: the window of the prompt and the messages still waiting. Without a wait
   they are read before the write instead (they are all the turns before it: the write is
   conditional on the count of turns read with the session), and a message with nothing
   waiting before it is answered at once, the model asked beside its write and its first
   words held until the write is stored (services/conversation/turn/stacked.py).
3. If a newer message is waiting, its request answers this one too: this request polls its own
   turn until it is answered (one GetItem per poll), and takes over after `patience_seconds`
   if that request died (a Lambda that timed out).
4. Otherwise it answers every waiting message (of the last `span_seconds`) with one model call,
   and writes the answer and `answered_by` in one transaction conditional on each of them
   still waiting and on `stack_head` being unchanged. A message that arrived during the model
   call changed the head: the answer is dropped unwritten and the newer request answers them
   all. After `force_after_seconds` of waiting (someone typing without pause) the answer is
   written whatever arrived since, so every message is answered in bounded time.

Whatever the interleaving, each message is answered once: every write of an answer is
conditional on the messages it covers being unanswered, so of two requests answering the same
message, one write fails and that request re-reads and returns the winner's answer. A message
whose model call failed stays pending; a retry with its client_message_id runs this again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import NamedTuple

from chatmemory import deadline
from chatmemory.clock import parse_time
from chatmemory.domain import Turn
from chatmemory.ports import TurnStore
from chatmemory.schema import Intent, TurnOrigin
from chatmemory.services.conversation.turn_states import SETTLED, state_of


class StackPolicy(NamedTuple):
    enabled: bool = True
    # How long a new message waits for more before it is answered (0: answer at once; messages
    # that arrive while the model answers are still answered together).
    wait_seconds: float = 0.0
    # Messages waiting longer than this before the head are not its to answer (a message whose
    # model call failed long ago waits for its own client's retry).
    span_seconds: float = 120.0
    # The oldest message of a stack waited this long: answer now even if more arrive meanwhile.
    force_after_seconds: float = 20.0
    # At most this many messages in one answer.
    max_messages: int = 8
    # Turns read past the window to find the messages waiting with this one: a stack longer
    # than this shortens the prompt's window by the difference (rather than every turn paying
    # to read `max_messages` more turns).
    read_ahead: int = 2
    # A covered message's request waits this long for its answer before answering itself.
    patience_seconds: float = 20.0
    poll_seconds: float = 0.25


def waiting(turn: Turn) -> bool:
    """A chat message written before its answer and not answered yet."""
    return (
        turn.pending
        and turn.answered_by is None
        and turn.origin == TurnOrigin.CHAT
        and turn.intent == Intent.CHAT
        and not turn.for_agent
    )


def settled(turn: Turn) -> bool:
    """Whether a message needs no answer any more (services/conversation/turn_states.py: answered,
    covered, the agent's, or an agent's reply)."""
    return state_of(turn) in SETTLED


class Plan(NamedTuple):
    """What a request does with the messages waiting in its session."""

    # The messages one answer covers, oldest first; the answer is stored on the last one.
    batch: tuple[Turn, ...]
    # True: another request (the head's) answers `batch`; wait for it.
    wait: bool
    # Write the answer even if the head moved (the stack waited long enough, or a takeover).
    force: bool


def plan(
    tail: Sequence[Turn],
    mine: Turn,
    *,
    now: datetime,
    policy: StackPolicy,
    takeover: bool = False,
) -> Plan:
    """Who answers `mine` (a waiting message) and with which others, from the session's last
    turns (`tail`, oldest first)."""
    queue = [t for t in tail if waiting(t)]
    if not queue or all(t.turn != mine.turn for t in queue):
        # Not among the turns read (a long stack): its own, as a message alone.
        return Plan((mine,), wait=False, force=True)
    head = queue[-1]
    head_at = parse_time(head.created_at) or now
    batch = [t for t in queue if _age(t, head_at) <= policy.span_seconds]
    batch = batch[-policy.max_messages :]
    if all(t.turn != mine.turn for t in batch):
        # Too old to go with the newest messages: answered alone, like a retried failure.
        return Plan((mine,), wait=False, force=True)
    oldest = parse_time(batch[0].created_at) or now
    overdue = (now - oldest).total_seconds() >= policy.force_after_seconds
    full = len(batch) >= policy.max_messages
    if head.turn != mine.turn and not takeover:
        return Plan(tuple(batch), wait=True, force=False)
    return Plan(tuple(batch), wait=False, force=takeover or overdue or full)


def _age(turn: Turn, head_at: datetime) -> float:
    at = parse_time(turn.created_at)
    return 0.0 if at is None else (head_at - at).total_seconds()


class Waiting(NamedTuple):
    """A stored message a request waits on (turn `number` of the session), polled every
    `policy.poll_seconds` for at most `policy.patience_seconds`."""

    memory: TurnStore
    session_id: str
    number: int
    policy: StackPolicy
    sleep: Callable[[float], None]

    def polled(self, *, within_deadline: bool = False) -> Iterator[Turn | None]:
        """The message as read after each poll's sleep (None: it is gone); `within_deadline`:
        no poll starts that the request's deadline cannot wait for (DeadlineExceeded)."""
        poll = self.policy.poll_seconds
        for _ in range(max(1, round(self.policy.patience_seconds / poll))):
            if within_deadline:
                deadline.current().require(poll, "wait for the answer to this message")
            self.sleep(poll)
            yield self.memory.get_turn(self.session_id, self.number)


def wait_for_answer(waiting: Waiting) -> Turn | None:
    """Poll a waiting message until another request answered it; None after `patience_seconds`
    (or if the turn is gone: a deleted session). Polling stops at the request's deadline
    (DeadlineExceeded): the message keeps waiting, and a retry of it returns its answer."""
    for turn in waiting.polled(within_deadline=True):
        if turn is None or settled(turn):
            return turn
    return None


def wait_while_claimed(waiting: Waiting, now: Callable[[], str]) -> Turn | None:
    """Poll a message another retry claimed (Turn.answering_until) until it is answered or no
    longer claimed (that retry's model call failed, or its claim ran out at `now()`); at most
    `patience_seconds`. The turn as last read; None if it is gone (a deleted session)."""
    turn = None
    for turn in waiting.polled():
        if turn is None or settled(turn) or not claimed(turn, now()):
            return turn
    return turn


def claimed(turn: Turn, now: str) -> bool:
    """Whether a retry is answering this waiting message now."""
    return turn.answering_until is not None and turn.answering_until >= now


def joined_input(batch: Sequence[Turn]) -> str:
    """What the model is asked: the stacked messages in the order they were sent."""
    return "\n".join(t.input.strip() for t in batch)
