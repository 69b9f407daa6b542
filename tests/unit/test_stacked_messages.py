"""Stacked messages: what a user sends before the bot answered is answered together, once.

The races are made deterministic by running the second request inside the first one's model
call or stack wait (the hooks below), the way a second Lambda instance would interleave."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chatmemory.clock import iso
from chatmemory.domain import Turn, TurnWrite
from chatmemory.errors import Conflict, ModelUnavailable, SessionEnded, SessionNotFound
from chatmemory.schema import Intent, SessionStatus
from chatmemory.services.conversation.chat import (
    ChatDeps,
    ChatPolicy,
    Delta,
    Message,
    Stored,
    TurnResult,
    open_turn,
    post_message,
)
from chatmemory.services.conversation.sessions import create_session
from chatmemory.services.conversation.stacking import StackPolicy, plan
from tests.fakes import FixedClock, HookedModel, once_stored
from tests.memory_fake import InMemoryShortTermMemory

USER = "alice"


@dataclass
class World:
    memory: InMemoryShortTermMemory
    model: HookedModel
    clock: FixedClock
    sleeps: list[Callable[[float], None]]
    session_id: str
    deps: ChatDeps = field(init=False)

    def __post_init__(self) -> None:
        self.deps = ChatDeps(
            memory=self.memory, generator=self.model, clock=self.clock, sleep=self._sleep
        )

    def _sleep(self, seconds: float) -> None:
        if self.sleeps:
            self.sleeps.pop(0)(seconds)

    def say(self, content: str, policy: ChatPolicy | None = None, **kwargs: Any) -> TurnResult:
        return post_message(
            self.deps,
            policy or ChatPolicy(),
            Message(user_id=USER, session_id=self.session_id, content=content, **kwargs),
        )

    def turns(self) -> list[Turn]:
        return self.memory.recent_turns(self.session_id, 100)

    def during_answer_of(self, number: int, then: Callable[[], Any]) -> None:
        """`then` inside the next model call, once the message it answers (turn `number`) is
        stored."""
        self.model.during.append(once_stored(self.memory, self.session_id, number, then))


@pytest.fixture
def world() -> World:
    memory = InMemoryShortTermMemory()
    clock = FixedClock()
    session = create_session(memory, USER, clock=clock)
    return World(memory, HookedModel(), clock, [], session.session_id)


def _answered_once(turns: list[Turn]) -> None:
    """Every message has one answer: its own response, or the response of the turn named in
    answered_by (which holds one); numbering is contiguous."""
    assert [t.turn for t in turns] == list(range(1, len(turns) + 1))
    by_number = {t.turn: t for t in turns}
    for turn in turns:
        assert not turn.pending, turn
        if turn.answered_by is None:
            assert turn.response
        else:
            assert turn.response is None
            assert by_number[turn.answered_by].response
            assert by_number[turn.answered_by].answered_by is None


def test_a_lone_message_is_answered_as_before(world: World) -> None:
    result = world.say("hello there", client_message_id="m1")
    assert result.turn.turn == 1 and result.answer is None
    assert result.turn.response == "answer to: hello there"
    [stored] = world.turns()
    assert (stored.pending, stored.answered_by, stored.response) == (
        False,
        None,
        "answer to: hello there",
    )


def test_a_message_sent_during_the_model_call_is_answered_with_the_first(world: World) -> None:
    second: list[TurnResult] = []
    world.during_answer_of(1, lambda: second.append(world.say("it is order 1234")))

    first = world.say("my order did not arrive")

    # The second request saw both messages and answered them in one call; the first request's
    # own answer (computed without the second message) was dropped, never stored.
    assert second[0].turn.turn == 2
    assert second[0].turn.response == "answer to: my order did not arrive | it is order 1234"
    assert first.turn.turn == 1 and first.turn.answered_by == 2
    assert first.answer is not None and first.answer.response == second[0].turn.response
    turns = world.turns()
    _answered_once(turns)
    assert [t.response for t in turns] == [None, second[0].turn.response]


def _write_waiting(world: World, content: str, message_id: str) -> None:
    """What a second request does first: write its message, waiting for its answer."""
    session = world.memory.get_session(world.session_id)
    assert session is not None
    waiting = Turn(
        world.session_id,
        0,
        session.user_id,
        content,
        None,
        created_at=world.clock().isoformat(),
        client_message_id=message_id,
        pending=True,
    )
    world.memory.append_turn(session, waiting, TurnWrite(50, stack=True))


# --- the model asked beside the message's write (services/conversation/turn/stacked.py) ---------


def _before_the_write(
    world: World, monkeypatch: pytest.MonkeyPatch, then: Callable[[], Any]
) -> None:
    """`then` on the thread that writes the next message, right before its write: what lands
    between a request's read of its session and its own write."""
    write = world.memory.append_turn
    pending = [then]

    def append_turn(session: Any, turn: Turn, how: TurnWrite) -> Any:
        if pending:
            pending.pop()()
        return write(session, turn, how)

    monkeypatch.setattr(world.memory, "append_turn", append_turn)


def _streamed(world: World, content: str, events: list[Any], **kwargs: Any) -> TurnResult:
    """A streamed message, its events kept in `events` as they come."""
    message = Message(USER, world.session_id, content, stream=True, **kwargs)
    for event in open_turn(world.deps, ChatPolicy(), message):
        events.append(event)
        if isinstance(event, Stored):
            return event.result
    raise AssertionError("no stored turn")


def test_the_model_is_asked_while_the_message_is_written_and_speaks_once_it_is_stored(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message answered alone: the model is asked beside its write (so that the write's time
    is hidden behind the model's own before its first word), and nothing of the answer is shown
    before the message is stored."""
    import threading

    asked, shown = threading.Event(), threading.Event()
    order: list[str] = []
    world.model.during.append(asked.set)
    write = world.memory.append_turn

    def append_turn(session: Any, turn: Turn, how: TurnWrite) -> Any:
        assert asked.wait(30), "the model was not asked before the message's write ended"
        shown.wait(0.5)  # a word shown before the write ends would end this wait
        stored = write(session, turn, how)
        order.append("stored")
        return stored

    monkeypatch.setattr(world.memory, "append_turn", append_turn)
    events: list[Any] = []
    for event in open_turn(
        world.deps, ChatPolicy(), Message(USER, world.session_id, "hello there", stream=True)
    ):
        if isinstance(event, Delta):
            order.append("delta")
            shown.set()
        events.append(event)

    assert order[0] == "stored" and "delta" in order
    [stored] = world.turns()
    assert (stored.turn, stored.pending, stored.response) == (1, False, "answer to: hello there")
    assert "".join(e.text for e in events if isinstance(e, Delta)) == stored.response


def test_a_message_written_first_while_the_model_is_asked_is_answered_with_this_one(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another request's message lands between this request's read of its session and its
    write: this message is numbered after it, the model's call begun for it alone is dropped
    before anything of it is shown, and one answer covers both, as when the other message is
    written during the model's answer."""
    _before_the_write(world, monkeypatch, lambda: _write_waiting(world, "it is order 1234", "b"))
    events: list[Any] = []

    result = _streamed(world, "my order did not arrive", events, client_message_id="a")

    both = "answer to: it is order 1234 | my order did not arrive"
    assert (result.turn.turn, result.turn.response) == (2, both)
    assert "".join(e.text for e in events if isinstance(e, Delta)) == both
    assert len(world.model.prompts) == 2  # the dropped call, then the stack's
    turns = world.turns()
    _answered_once(turns)
    assert [t.answered_by for t in turns] == [2, None]


def test_a_session_ended_before_the_message_is_written_shows_and_stores_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session ends between the request's read of it and the message's write, while the
    model is asked: the message is refused as if it came after the end, nothing of the model's
    answer is shown, and nothing is stored."""
    _before_the_write(
        world,
        monkeypatch,
        lambda: world.memory.end_session(world.session_id, world.clock().isoformat()),
    )
    events: list[Any] = []
    with pytest.raises(SessionEnded):
        _streamed(world, "my order did not arrive", events, client_message_id="a")
    assert events == [] and world.turns() == []
    # A retry of it is refused too, and calls no model.
    calls = len(world.model.prompts)
    with pytest.raises(SessionEnded):
        world.say("my order did not arrive", client_message_id="a")
    assert world.turns() == [] and len(world.model.prompts) == calls


def test_an_answer_computed_before_a_newer_message_arrived_is_not_written(world: World) -> None:
    """The second message is written while the first is being answered, and its request is
    still reading: the first answer, which does not know the second message, is dropped, and
    the second request answers both (the session's stack_head decides)."""
    world.during_answer_of(1, lambda: _write_waiting(world, "it is order 1234", "b"))
    second: list[TurnResult] = []
    # While the first request waits for the answer, the second request goes on.
    world.sleeps.append(
        lambda _: second.append(world.say("it is order 1234", client_message_id="b"))
    )

    first = world.say("my order did not arrive", client_message_id="a")

    assert first.turn.answered_by == 2
    assert second[0].turn.response == "answer to: my order did not arrive | it is order 1234"
    _answered_once(world.turns())


def test_with_a_wait_two_quick_messages_cost_one_model_call(world: World) -> None:
    policy = ChatPolicy(stack=StackPolicy(wait_seconds=1.5))
    second: list[TurnResult] = []
    # The second message arrives while the first waits; the second's own wait passes quietly.
    world.sleeps.append(lambda _: second.append(world.say("and a refund", policy)))
    world.sleeps.append(lambda _: None)

    first = world.say("the parcel is damaged", policy)

    assert world.model.prompts and len(world.model.prompts) == 1
    assert "the parcel is damaged\nand a refund" in world.model.prompts[0]
    assert first.turn.answered_by == 2 and first.answer == second[0].turn
    _answered_once(world.turns())


def test_three_messages_stacked_during_one_model_call_get_one_answer(world: World) -> None:
    results: list[TurnResult] = []

    def third() -> None:
        results.append(world.say("third"))

    def second() -> None:
        world.during_answer_of(2, third)  # the third arrives during the second's model call
        results.append(world.say("second"))

    world.during_answer_of(1, second)
    results.append(world.say("first"))

    turns = world.turns()
    _answered_once(turns)
    assert [t.answered_by for t in turns] == [3, 3, None]
    assert turns[2].response == "answer to: first | second | third"
    # Each request learned which turn answered it.
    assert sorted((r.turn.turn, r.answer.turn if r.answer else None) for r in results) == [
        (1, 3),
        (2, 3),
        (3, None),
    ]


def test_a_retry_of_a_covered_message_returns_the_answer_without_a_model_call(
    world: World,
) -> None:
    world.during_answer_of(1, lambda: world.say("second", client_message_id="b"))
    world.say("first", client_message_id="a")
    calls = len(world.model.prompts)

    retried = world.say("first", client_message_id="a")

    assert retried.replayed and retried.turn.answered_by == 2
    assert retried.answer is not None and retried.answer.response == "answer to: first | second"
    assert len(world.model.prompts) == calls


def test_a_message_whose_answering_request_died_is_answered_by_the_waiting_one(
    world: World,
) -> None:
    """The request of the newer message wrote it and died (a Lambda timeout): the older
    message's request waits `patience_seconds`, then answers both."""
    policy = ChatPolicy(stack=StackPolicy(wait_seconds=1.0, patience_seconds=1.0))

    def crashed_second(_: float) -> None:
        session = world.memory.get_session(world.session_id)
        assert session is not None
        doomed = Turn(
            world.session_id,
            0,
            session.user_id,
            "second, never answered by its own request",
            None,
            created_at=world.clock().isoformat(),
            client_message_id="b",
            pending=True,
        )
        world.memory.append_turn(session, doomed, TurnWrite(50, stack=True))

    world.sleeps.append(crashed_second)
    first = world.say("first", policy, client_message_id="a")

    assert first.turn.answered_by == 2
    assert first.answer is not None
    assert first.answer.response == "answer to: first | second, never answered by its own request"
    _answered_once(world.turns())
    # The dead request's client retries: it gets the answer, without another model call.
    calls = len(world.model.prompts)
    retried = world.say("second, never answered by its own request", client_message_id="b")
    assert retried.replayed and retried.turn.response == first.answer.response
    assert len(world.model.prompts) == calls


def test_a_failed_model_call_keeps_every_stacked_message_for_the_retry(world: World) -> None:
    world.model.during.append(lambda: None)
    world.model.fail = 1
    with pytest.raises(ModelUnavailable):
        world.say("first", client_message_id="a")
    assert [t.pending for t in world.turns()] == [True]

    result = world.say("first", client_message_id="a")

    assert result.turn.response == "answer to: first"
    _answered_once(world.turns())


def test_a_session_ended_during_the_model_call_keeps_the_message_unanswered(
    world: World,
) -> None:
    world.during_answer_of(
        1, lambda: world.memory.end_session(world.session_id, world.clock().isoformat())
    )
    with pytest.raises(SessionEnded, match="ended before turn 1 was answered"):
        world.say("first", client_message_id="m1")
    [turn] = world.turns()
    assert (turn.pending, turn.response) == (True, None)
    session = world.memory.get_session(world.session_id)
    assert session is not None and session.status == SessionStatus.ENDED
    # The API guide's second exception to "a failed request leaves stored data as it was": the
    # message stays, unanswered; its retry is a 409 too and stores nothing more.
    with pytest.raises(SessionEnded, match="ended before turn 1 was answered"):
        world.say("first", client_message_id="m1")
    assert world.turns() == [turn] and len(world.model.prompts) == 1


def test_a_message_answered_by_a_newer_one_before_the_end_is_answered_not_refused(
    world: World,
) -> None:
    """During the first request's model call a second message arrives and its request answers
    both; then the session ends. The first request's own answer is dropped (a newer message
    came), and its message was answered before the end: a 201 with that answer, not a 409
    session_ended for a message the session holds answered (found by a run of
    tests/faults/test_concurrency.py, whose threads met in this order)."""
    second: list[TurnResult] = []

    def newer_message_then_end() -> None:
        second.append(world.say("it is order 1234", client_message_id="b"))
        world.memory.end_session(world.session_id, world.clock().isoformat())

    world.during_answer_of(1, newer_message_then_end)

    first = world.say("my order did not arrive", client_message_id="a")

    assert first.turn.answered_by == 2
    assert first.answer is not None and first.answer.response == second[0].turn.response
    _answered_once(world.turns())
    # And its retry replays the same, after the end as before it.
    again = world.say("my order did not arrive", client_message_id="a")
    assert (again.replayed, again.turn.answered_by) == (True, 2)


def test_a_session_deleted_during_the_model_call_gets_no_answer_written(world: World) -> None:
    world.during_answer_of(
        1, lambda: world.memory.mark_deleting(world.session_id, world.clock().isoformat())
    )
    with pytest.raises(SessionNotFound):
        world.say("first")
    assert all(t.response is None for t in world.memory.all_turns(world.session_id))


def test_a_command_is_answered_on_its_own_while_a_message_waits(world: World) -> None:
    commands: list[TurnResult] = []
    world.during_answer_of(1, lambda: commands.append(world.say("/past my trip")))

    first = world.say("hello")

    assert commands[0].turn.intent == Intent.PAST and commands[0].turn.answered_by is None
    assert first.answer is None and first.turn.response == "answer to: hello"
    _answered_once(world.turns())


def test_stacking_off_answers_each_message_alone(world: World) -> None:
    policy = ChatPolicy(stack=StackPolicy(enabled=False))
    world.model.during.append(lambda: world.say("second", policy))
    first = world.say("first", policy)
    turns = world.turns()
    assert first.answer is None and [t.answered_by for t in turns] == [None, None]
    # Without stacking, the second message was answered without knowing of the first.
    assert "first" not in world.model.prompts[1]


def test_the_first_answer_names_the_session_from_the_stacked_messages(world: World) -> None:
    world.during_answer_of(1, lambda: world.say("about my trip to Lisbon"))
    world.say("hi")
    session = world.memory.get_session(world.session_id)
    assert session is not None and not session.auto_named
    assert "Lisbon" in session.name


def _turn(number: int, at: datetime, response: str | None = None, **kwargs: Any) -> Turn:
    values: dict[str, Any] = {"pending": True}
    values.update(kwargs)
    return Turn("s", number, "u", f"m{number}", response, created_at=at.isoformat(), **values)


def test_the_plan_waits_for_the_newest_message_and_answers_in_bounded_time() -> None:
    now = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    policy = StackPolicy(force_after_seconds=20, span_seconds=120, max_messages=3)
    answered = _turn(1, now - timedelta(minutes=5), pending=False, response="hi")
    first, second = _turn(2, now - timedelta(seconds=3)), _turn(3, now)

    waits = plan([answered, first, second], first, now=now, policy=policy)
    assert waits.wait and [t.turn for t in waits.batch] == [2, 3]
    answers = plan([answered, first, second], second, now=now, policy=policy)
    assert not answers.wait and not answers.force and [t.turn for t in answers.batch] == [2, 3]
    # Someone typing for 20 s without pause: the head writes its answer whatever arrives.
    late = replace(first, created_at=(now - timedelta(seconds=21)).isoformat())
    assert plan([answered, late, second], second, now=now, policy=policy).force
    # A message that failed long ago is not the newest one's to answer.
    old = replace(first, created_at=(now - timedelta(minutes=10)).isoformat())
    alone = plan([answered, old, second], old, now=now, policy=policy)
    assert (alone.wait, [t.turn for t in alone.batch]) == (False, [2])
    assert [
        t.turn for t in plan([answered, old, second], second, now=now, policy=policy).batch
    ] == [3]
    # A takeover answers the whole stack, on the newest turn.
    taken = plan([answered, first, second], first, now=now, policy=policy, takeover=True)
    assert (taken.wait, taken.force, taken.batch[-1].turn) == (False, True, 3)


# --- retries of a message whose model call failed ------------------------------------------------


@pytest.mark.parametrize("stacking", [True, False])
def test_retries_arriving_together_call_the_model_once_and_all_get_its_answer(
    world: World, stacking: bool
) -> None:
    """Failed first: eight concurrent retries of one failed message each answered it (the model
    was called up to eight times; the answer stored once). Now one retry claims the message and
    the others wait for its answer. Deterministic: the first retry's model call is held until
    every other retry is waiting, each in its own thread."""
    import threading

    policy = ChatPolicy(stack=StackPolicy(enabled=stacking))
    world.model.fail = 1
    with pytest.raises(ModelUnavailable):
        world.say("where is my parcel?", policy, client_message_id="m1")
    others = 7
    waiting = threading.Semaphore(0)
    seen: set[int] = set()
    lock = threading.Lock()

    def sleep(seconds: float) -> None:
        with lock:
            first = threading.get_ident() not in seen
            seen.add(threading.get_ident())
        if first:
            waiting.release()  # this retry found the message claimed and waits for it
        threading.Event().wait(0.005)

    world.deps.sleep = sleep

    def hold_until_all_wait() -> None:
        for _ in range(others):
            assert waiting.acquire(timeout=30)

    world.model.during.append(hold_until_all_wait)
    results: list[TurnResult] = []
    errors: list[BaseException] = []

    def retry() -> None:
        try:
            results.append(world.say("where is my parcel?", policy, client_message_id="m1"))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=retry) for _ in range(others + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert len(world.model.prompts) == 2  # the failed call, and one retry's
    answers = {r.turn.response for r in results}
    assert answers == {"answer to: where is my parcel?"}
    [turn] = world.turns()
    assert (turn.pending, turn.response) == (False, "answer to: where is my parcel?")


def _refused_into(world: World, refusals: list[BaseException]) -> Callable[[], None]:
    """Another request of the message "m1" (run inside a model call), its 409 kept."""

    def again() -> None:
        try:
            world.say("where is my parcel?", client_message_id="m1")
        except Conflict as error:
            refusals.append(error)

    return again


def test_a_resend_while_the_first_request_answers_does_not_call_the_model(world: World) -> None:
    """Failed before (issue 46): the message was written pending without a claim, so a re-send
    of it during the first request's model call (a client that timed out, the same message
    posted twice) claimed it and called the model a second time. Now it finds the message
    claimed by the request answering it: inside that model call (as a second Lambda would run
    it) it waits its patience, sees the claim still held and answers 409 (retry later)."""
    inner: list[BaseException] = []
    world.during_answer_of(1, _refused_into(world, inner))
    first = world.say("where is my parcel?", client_message_id="m1")
    assert len(world.model.prompts) == 1
    assert len(inner) == 1 and "another request is answering" in str(inner[0])
    again = world.say("where is my parcel?", client_message_id="m1")
    assert again.replayed and again.turn.response == first.turn.response
    assert len(world.model.prompts) == 1


def test_resends_while_the_first_request_answers_get_its_answer(world: World) -> None:
    """Three re-sends, each in its own thread, arrive while the first request's model call is
    held until all of them wait: the model is called once and every request gets its answer."""
    import threading

    resends = 3
    waiting = threading.Semaphore(0)
    seen: set[int] = set()
    lock = threading.Lock()

    def sleep(seconds: float) -> None:
        with lock:
            first = threading.get_ident() not in seen
            seen.add(threading.get_ident())
        if first:
            waiting.release()  # this re-send found the message claimed and waits for it
        threading.Event().wait(0.005)

    world.deps.sleep = sleep
    results: list[TurnResult] = []
    errors: list[BaseException] = []

    def say() -> None:
        try:
            results.append(world.say("where is my parcel?", client_message_id="m1"))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=say) for _ in range(resends)]

    def resend_then_hold() -> None:
        for thread in threads:
            thread.start()
        for _ in range(resends):
            assert waiting.acquire(timeout=30), "a re-send never waited: it called the model"

    world.during_answer_of(1, resend_then_hold)
    first = world.say("where is my parcel?", client_message_id="m1")
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert len(world.model.prompts) == 1
    assert {r.turn.response for r in results} == {first.turn.response}
    assert all(r.replayed for r in results)
    [turn] = world.turns()
    assert (turn.pending, turn.response) == (False, first.turn.response)


def test_a_resend_after_the_first_request_failed_answers_at_once(world: World) -> None:
    """The first request's claim is given up when its model call fails: the re-send claims the
    message and answers it without waiting out the claim."""
    world.model.fail = 1
    with pytest.raises(ModelUnavailable):
        world.say("where is my parcel?", client_message_id="m1")
    [turn] = world.turns()
    assert turn.pending and turn.answering_until is None
    answered = world.say("where is my parcel?", client_message_id="m1")
    assert answered.turn.response == "answer to: where is my parcel?"
    assert len(world.model.prompts) == 2


def test_a_retry_whose_model_call_fails_lets_the_next_retry_answer_at_once(world: World) -> None:
    world.model.fail = 2
    for _ in range(2):  # the message, then a first retry: both fail
        with pytest.raises(ModelUnavailable):
            world.say("where is my parcel?", client_message_id="m1")
    # The failed retry gave its claim up: the next one answers without waiting for it.
    answered = world.say("where is my parcel?", client_message_id="m1")
    assert answered.turn.response == "answer to: where is my parcel?"
    assert len(world.model.prompts) == 3


def test_a_retry_finding_the_message_claimed_by_a_live_retry_does_not_call_the_model(
    world: World,
) -> None:
    """Inside the claiming retry's model call (as a second Lambda would run it), another retry
    waits its patience, sees the claim still held and answers 409 (retry later) rather than
    calling the model; the claimer's answer is then the one every retry gets."""
    world.model.fail = 1
    with pytest.raises(ModelUnavailable):
        world.say("where is my parcel?", client_message_id="m1")
    inner: list[BaseException] = []
    world.model.during.append(_refused_into(world, inner))
    first = world.say("where is my parcel?", client_message_id="m1")
    assert len(inner) == 1 and "another request is answering" in str(inner[0])
    assert len(world.model.prompts) == 2
    again = world.say("where is my parcel?", client_message_id="m1")
    assert again.replayed and again.turn.response == first.turn.response


def test_the_claim_of_a_retry_that_died_is_taken_over_once_it_ran_out(world: World) -> None:
    world.model.fail = 1
    with pytest.raises(ModelUnavailable):
        world.say("where is my parcel?", client_message_id="m1")
    now = world.clock.now
    # A retry claimed it, then its Lambda timed out (it never answered nor gave the claim up).
    dead = iso(now + timedelta(seconds=20))
    assert world.memory.claim_answer(world.session_id, 1, until=dead, now=iso(now))

    def later(seconds: float) -> None:
        world.clock.now += timedelta(seconds=seconds)

    world.sleeps.extend([later] * 200)
    answered = world.say("where is my parcel?", client_message_id="m1")
    assert answered.turn.response == "answer to: where is my parcel?"
    assert len(world.model.prompts) == 2
