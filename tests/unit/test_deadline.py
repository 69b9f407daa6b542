"""A deadline per chat request: every model call and wait of a turn takes its time from it, and a
turn that cannot finish in time answers a JSON 503 with the message kept for the retry, before
API Gateway's 29 s would have answered 504 while the work carried on.

Time is a fake clock moved by the fake model and the fake sleep: deterministic, never slow."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from chatmemory import deadline
from chatmemory.adapters.retry import DeadlineClients
from chatmemory.domain import TurnWrite
from chatmemory.errors import DeadlineExceeded, ModelUnavailable
from chatmemory.ports import Generation, GenerationOptions, Piece, TextGenerator, whole
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.conversation.sentiment import ModelSentimentAnalyzer
from chatmemory.services.conversation.sessions import create_session
from chatmemory.services.conversation.stacking import StackPolicy
from tests.fakes import FixedClock
from tests.memory_fake import InMemoryShortTermMemory


@dataclass
class Seconds:
    """A monotonic clock the test moves."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class TimedModel(TextGenerator):
    """A text model as the adapters call it: no call starts with less than a second left, and
    a call slower than the time left times out when the time is up (adapters/retry.py)."""

    clock: Seconds
    seconds: list[float]  # what each call takes, in order
    name: str = "model"
    context_tokens: int = 2048
    prompts: list[str] = field(default_factory=list)

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        left = deadline.current().require(deadline.MIN_CALL_SECONDS, "call the model")
        takes = self.seconds.pop(0) if self.seconds else 1.0
        self.prompts.append(prompt)
        if takes > left:
            self.clock.now += left
            raise ModelUnavailable("the model did not answer in time")
        self.clock.now += takes
        if prompt.rstrip().endswith("Sentiment:"):
            return whole(Generation("negative 0.9", model=self.name))
        return whole(Generation("an answer", model=self.name))


class Vader:
    name = "vader"

    def analyze(self, text: str) -> Any:
        from chatmemory.domain import Sentiment
        from chatmemory.schema import SentimentLabel

        return Sentiment(SentimentLabel.NEUTRAL, 0.0)


@pytest.fixture
def world() -> Any:
    memory = InMemoryShortTermMemory()
    session = create_session(memory, "alice", clock=FixedClock())
    clock = Seconds()
    return memory, session.session_id, clock


def _deps(memory: Any, model: TimedModel, clock: Seconds, **kwargs: Any) -> ChatDeps:
    def sleep(seconds: float) -> None:
        clock.now += seconds

    return ChatDeps(memory=memory, generator=model, clock=FixedClock(), sleep=sleep, **kwargs)


def _say(deps: ChatDeps, session_id: str, clock: Seconds, left: float, policy: Any = None) -> Any:
    with deadline.within(deadline.Deadline(clock.now + left, clock)):
        return post_message(
            deps,
            policy or ChatPolicy(stack=StackPolicy(enabled=False)),
            Message(
                user_id="alice",
                session_id=session_id,
                content="Where did I park?",
                client_message_id="m-1",
            ),
        )


def test_a_request_is_due_before_the_gateways_29_s_counted_from_its_arrival() -> None:
    clock = Seconds()
    # Received 10 s ago (a cold start), the function has 29 s: 29 - 10 - 2 s to answer.
    due = deadline.of_request(
        remaining_ms=29_000, received_epoch_ms=90_000, now_epoch_ms=100_000, clock=clock
    )
    assert due.remaining() == pytest.approx(17.0)
    # The function's own timeout is the earlier one.
    due = deadline.of_request(
        remaining_ms=5_000, received_epoch_ms=100_000, now_epoch_ms=100_000, clock=clock
    )
    assert due.remaining() == pytest.approx(3.0)


def test_a_turn_out_of_time_answers_503_keeps_the_message_and_its_retry_completes_it(
    world: Any,
) -> None:
    memory, session_id, clock = world
    model = TimedModel(clock, seconds=[40.0])  # slower than the 27 s the request has

    with pytest.raises(ModelUnavailable):
        _say(_deps(memory, model, clock), session_id, clock, left=27.0)

    (kept,) = memory.recent_turns(session_id, 5)
    assert kept.pending and kept.input == "Where did I park?"
    assert clock.now == pytest.approx(1027.0)  # gave up when the time was up, not at 40 s
    answered = _say(_deps(memory, TimedModel(clock, [2.0]), clock), session_id, clock, left=27.0)
    assert answered.turn.turn == 1 and answered.turn.response == "an answer"
    assert [t.turn for t in memory.recent_turns(session_id, 5)] == [1]


def test_no_model_call_starts_without_time_to_finish(world: Any) -> None:
    memory, session_id, clock = world
    model = TimedModel(clock, seconds=[])

    with pytest.raises(DeadlineExceeded):
        _say(_deps(memory, model, clock), session_id, clock, left=0.5)

    assert model.prompts == []
    assert memory.recent_turns(session_id, 5)[0].pending


def test_optional_model_calls_leave_the_answer_its_reserve(world: Any) -> None:
    # SENTIMENT=auto with a model: a sentiment call that hangs gives up 10 s before the
    # deadline (VADER answers instead) and the answer still has its 10 s. Without the reserve
    # the sentiment call took the whole request and the turn failed.
    memory, session_id, clock = world
    model = TimedModel(clock, seconds=[60.0, 3.0])
    deps = _deps(memory, model, clock, sentiment=ModelSentimentAnalyzer(model, fallback=Vader()))

    result = _say(deps, session_id, clock, left=27.0)

    assert result.turn.response == "an answer" and not result.turn.pending
    assert result.turn.sentiment is not None and result.turn.sentiment.label == "neutral"
    assert clock.now == pytest.approx(1000.0 + 17.0 + 3.0)


def test_a_covered_message_stops_waiting_for_its_answer_at_the_deadline(world: Any) -> None:
    # The message's answer is another request's job; that request died (a Lambda timeout).
    # The covered request polls only while its own request has time, then answers 503 (the
    # message stays; its retry returns the answer). Before: it polled 20 s whatever was left.
    memory, session_id, clock = world
    policy = ChatPolicy()
    model = TimedModel(clock, seconds=[])

    def head_request_died(seconds: float) -> None:
        clock.now += seconds

    deps = ChatDeps(memory=memory, generator=model, clock=FixedClock(), sleep=head_request_died)
    from chatmemory.domain import Turn

    # Two messages waiting: the second one's request (the head) is gone.
    for number, text in ((1, "first"), (2, "second")):
        session = memory.get_session(session_id)
        assert session is not None
        turn = Turn(session_id, 0, "alice", text, None, created_at="2026-11-23T10:00:00.000Z")
        turn.pending = True
        turn.client_message_id = f"m-{number}"
        memory.append_turn(session, turn, TurnWrite(50, stack=True))

    started = clock.now
    with pytest.raises(DeadlineExceeded), deadline.within(deadline.Deadline(clock.now + 5, clock)):
        post_message(
            deps,
            policy,
            Message(
                user_id="alice", session_id=session_id, content="first", client_message_id="m-1"
            ),
        )
    assert clock.now - started <= 5.0
    assert model.prompts == []
    assert all(t.pending for t in memory.recent_turns(session_id, 5))


def test_model_clients_are_given_the_time_the_request_has_left() -> None:
    made: list[tuple[float, int]] = []

    def make(timeout: float, attempts: int) -> Any:
        made.append((timeout, attempts))
        return _Client()

    clients = DeadlineClients(make, 20.0, 3)
    clock = Seconds()
    with deadline.within(deadline.Deadline(clock.now + 25.0, clock)):
        clients.converse()
    with deadline.within(deadline.Deadline(clock.now + 7.6, clock)):
        clients.converse()
    with (
        deadline.within(deadline.Deadline(clock.now + 0.4, clock)),
        pytest.raises(DeadlineExceeded),
    ):
        clients.converse()
    clients.converse()  # outside a request: the configured client
    assert made == [(20.0, 3), (7.0, 1)]


class _Client:
    class meta:  # noqa: N801 - what botocore clients have
        events = type("E", (), {"register_first": staticmethod(lambda *a, **k: None)})()
        service_model = type(
            "M", (), {"service_id": type("S", (), {"hyphenize": lambda self: "bedrock-runtime"})()}
        )()

    def converse(self) -> str:
        return "ok"


def test_the_chat_api_answers_503_before_the_gateway_gives_up(
    lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A request API Gateway received 28 s ago (a long cold start): there is no time to call
    # the model, so the function answers 503 at once and keeps the message. Before: the model
    # was called and the answer came after the gateway's 504.
    from chatmemory import wiring
    from handlers import chat_api
    from local.gateway.events import http_reply, proxy_event
    from tests.fakes import FakeGenerator

    memory = InMemoryShortTermMemory()
    model = FakeGenerator()
    monkeypatch.setattr(wiring, "chat_deps", lambda: ChatDeps(memory=memory, generator=model))
    session = create_session(memory, "alice", clock=FixedClock())

    event = proxy_event(
        method="POST",
        target=f"/sessions/{session.session_id}/messages",
        headers=[("Content-Type", "application/json")],
        body='{"content": "hello?", "client_message_id": "late-1"}',
        user_id="alice",
        routes=chat_api_routes(),
    )
    event["requestContext"]["requestTimeEpoch"] = int(time.time() * 1000) - 28_000
    status, _, body = http_reply(chat_api.handler(event, lambda_context))

    assert status == 503 and b"deadline_exceeded" in body
    assert model.calls == 0
    (kept,) = memory.recent_turns(session.session_id, 5)
    assert kept.pending and kept.client_message_id == "late-1"


def chat_api_routes() -> Any:
    from local.gateway.events import load_routes

    return load_routes()
