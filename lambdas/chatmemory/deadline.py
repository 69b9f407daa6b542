"""The time one request may still take, shared by everything it waits for.

API Gateway stops waiting for the chat function 29 s after it received the request (whatever
the function's own timeout), and a chat turn may call the model several times in a row
(sentiment, a follow-up's rewrite, the embedding, the answer), each with its own timeout, and
may wait for another request's answer. The handler sets one Deadline per request (from the
gateway's request time and the Lambda context); model calls and waits take their time from it,
and what cannot finish in time raises DeadlineExceeded, a JSON 503, instead of being cut off
by the gateway's 504 while the work carries on. Outside a request there is no deadline.

A context variable, so services and adapters read it without passing it through every call;
threads started inside a request (none on the chat path) do not inherit it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from chatmemory.errors import DeadlineExceeded

# API Gateway's integration timeout (REST APIs, the default and the usual maximum).
GATEWAY_SECONDS = 29.0
# Kept free at the end of a request: writing the turn and shaping the answer.
ANSWER_MARGIN_SECONDS = 2.0
# A model call with less time than this is not started: it could not finish.
MIN_CALL_SECONDS = 1.0


@dataclass(frozen=True)
class Deadline:
    """`at` on the `clock` (seconds); math.inf: none."""

    at: float = math.inf
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    def remaining(self) -> float:
        return self.at - self.clock()

    def require(self, seconds: float, what: str) -> float:
        """The time left, if at least `seconds`; else DeadlineExceeded naming `what`."""
        left = self.remaining()
        if left < seconds:
            raise DeadlineExceeded(
                f"not enough time left in this request to {what} ({max(left, 0.0):.1f} s); "
                "retry it (a message is kept: retry with the same client_message_id)"
            )
        return left

    def less(self, seconds: float) -> Deadline:
        """This deadline `seconds` earlier: what an optional step may use while keeping
        `seconds` for what must follow it."""
        return Deadline(self.at - seconds, self.clock)


NO_DEADLINE = Deadline()
_current: ContextVar[Deadline] = ContextVar("chatmemory_deadline", default=NO_DEADLINE)


def current() -> Deadline:
    """The deadline of the request being served (NO_DEADLINE outside one)."""
    return _current.get()


@contextmanager
def within(deadline: Deadline) -> Iterator[Deadline]:
    """Make `deadline` the current one while the block runs."""
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


def of_request(
    *,
    remaining_ms: int | None,
    received_epoch_ms: int | None,
    now_epoch_ms: float,
    clock: Callable[[], float] = time.monotonic,
    gateway_seconds: float = GATEWAY_SECONDS,
    margin_seconds: float = ANSWER_MARGIN_SECONDS,
) -> Deadline:
    """A request's deadline: the earlier of the function's own timeout and the gateway's
    (counted from when the gateway received the request, so a cold start counts), less the
    margin for answering."""
    left = math.inf
    if remaining_ms is not None:
        left = remaining_ms / 1000
    if received_epoch_ms:
        left = min(left, gateway_seconds - max(0.0, now_epoch_ms - received_epoch_ms) / 1000)
    return Deadline(clock() + left - margin_seconds, clock)
