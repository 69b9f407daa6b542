"""Hand-off to a person: the service's rules, the races, the automatic rules, the events, who is
an agent, and the bot's prompt after the hand-back.

Races are made deterministic by running the other request inside the first one's model call or
right before its write (the hooks below), the way a second Lambda instance would interleave."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.adapters.eventbridge import EventBridgePublisher
from chatmemory.adapters.events_file import JsonLinesEventPublisher, read_events
from chatmemory.domain import Page, Sentiment, Session, Turn, TurnWrite
from chatmemory.errors import Conflict, EventsUnavailable, ModelUnavailable, SessionNotFound
from chatmemory.limits import LAMBDA_PAYLOAD_BYTES
from chatmemory.schema import (
    HANDBACK_EVENT,
    HANDOFF_EVENT,
    SentimentLabel,
    TurnOrigin,
)
from chatmemory.services.background.consolidation import transcript
from chatmemory.services.background.maintenance import sweep_idle_sessions
from chatmemory.services.conversation import handoff
from chatmemory.services.conversation.chat import (
    ChatDeps,
    ChatPolicy,
    Message,
    TurnResult,
    post_message,
)
from chatmemory.services.conversation.handoff import HUMAN_REPLY, TAKEOVER, HandoffPolicy
from chatmemory.services.conversation.sessions import create_session
from chatmemory.services.conversation.stacking import StackPolicy
from chatmemory.services.conversation.turns import AppendPolicy, TurnWriting
from chatmemory.services.longterm.recall import NOTHING_VERIFIED
from chatmemory.services.pages import TurnPage
from chatmemory.services.profile.extract import PatternExtractor, open_questions
from chatmemory.services.prompt import Roles, build_chat_prompt
from handlers.identity import cognito_groups, is_agent, is_session_of
from tests.fakes import FakeEmbedder, FixedClock, HookedModel, once_stored
from tests.memory_fake import InMemoryShortTermMemory

USER = "alice"
AGENT = "agent-ana"


class Mood:
    """A sentiment analyzer by keywords: negative words score -0.8, anything else +0.4."""

    name = "mood"
    NEGATIVE = ("awful", "terrible", "angry", "hate", "useless")

    def __init__(self) -> None:
        self.seen: list[str] = []

    def analyze(self, text: str) -> Sentiment:
        self.seen.append(text)
        if any(word in text.lower() for word in self.NEGATIVE):
            return Sentiment(SentimentLabel.NEGATIVE, -0.8)
        return Sentiment(SentimentLabel.POSITIVE, 0.4)


@dataclass
class Events:
    published: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fail: bool = False

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        if self.fail:
            raise EventsUnavailable("the bus is gone")
        self.published.append((detail_type, detail))


class HookedMemory(InMemoryShortTermMemory):
    """The fake store, with hooks run once right before the next turn write, or right after the
    sweeper's read that found something: the moment another request's write would land between
    this one's read and its write."""

    def __init__(self) -> None:
        super().__init__()
        self.before_append: list[Callable[[], None]] = []
        self.after_sweep: list[Callable[[], None]] = []

    def append_turn(self, session: Session, turn: Turn, write: TurnWrite) -> Session:
        if self.before_append:
            self.before_append.pop(0)()
        return super().append_turn(session, turn, write)

    def stale_page(
        self, state: str, shard: int, before: str, limit: int, next_token: str | None
    ) -> Page[str]:
        found = super().stale_page(state, shard, before, limit, next_token)
        if found.items and self.after_sweep:
            self.after_sweep.pop(0)()
        return found


@dataclass
class World:
    memory: HookedMemory
    model: HookedModel
    clock: FixedClock
    events: Events
    session_id: str
    mood: Mood = field(default_factory=Mood)
    policy: ChatPolicy = field(default_factory=ChatPolicy)
    long_term: EmbeddedLongTermIndex | None = None
    deps: ChatDeps = field(init=False)

    def __post_init__(self) -> None:
        self.deps = ChatDeps(
            memory=self.memory,
            generator=self.model,
            clock=self.clock,
            sleep=lambda _: None,
            sentiment=self.mood,
            stored_sentiment=self.mood,
            events=self.events,
            long_term=self.long_term,
            embedder=FakeEmbedder() if self.long_term is not None else None,
        )

    def say(self, content: str, **kwargs: Any) -> TurnResult:
        return post_message(
            self.deps,
            self.policy,
            Message(user_id=USER, session_id=self.session_id, content=content, **kwargs),
        )

    def ask_for_person(self, note: str | None = None) -> handoff.Outcome:
        return handoff.request_handoff(
            self.memory,
            self.events,
            user_id=USER,
            session_id=self.session_id,
            note=note,
            clock=self.clock,
        )

    def reply(self, content: str, agent: str = AGENT, **kwargs: Any) -> handoff.AgentReply:
        return handoff.agent_reply(
            self.memory,
            TurnWriting(self.clock, lambda _: None, AppendPolicy()),
            agent_id=agent,
            session_id=self.session_id,
            content=content,
            client_message_id=kwargs.pop("client_message_id", None),
        )

    def hand_back(self, agent: str = AGENT) -> handoff.Outcome:
        return handoff.hand_back(
            self.memory, self.events, agent_id=agent, session_id=self.session_id, clock=self.clock
        )

    def session(self) -> Session:
        found = self.memory.get_session(self.session_id)
        assert found is not None
        return found

    def turns(self) -> list[Turn]:
        return self.memory.recent_turns(self.session_id, 100)


def _world(**kwargs: Any) -> World:
    memory = HookedMemory()
    clock = FixedClock()
    session = create_session(memory, USER, clock=clock)
    return World(memory, HookedModel(prefix="bot: "), clock, Events(), session.session_id, **kwargs)


@pytest.fixture
def world() -> World:
    return _world()


def _contiguous(turns: list[Turn]) -> None:
    assert [t.turn for t in turns] == list(range(1, len(turns) + 1))


# --- the user asks for a person ------------------------------------------------------------------


def test_asking_for_a_person_hands_the_session_off_once_and_publishes_one_event(
    world: World,
) -> None:
    world.say("hello")
    outcome = world.ask_for_person("my parcel is lost")
    session = outcome.session
    assert outcome.changed and outcome.event_error == ""
    assert (session.handoff_state, session.handoff_reason) == ("WAITING", "user_request")
    assert session.handoff_turn == 1 and session.handoff_at == "2026-11-23T10:00:00.000Z"
    again = world.ask_for_person("still lost")  # idempotent while handed off
    assert not again.changed and again.session.handoff_at == session.handoff_at
    assert world.events.published == [
        (
            HANDOFF_EVENT,
            {
                "session_id": world.session_id,
                "user_id": USER,
                "reason": "user_request",
                "turn": 1,
                "handoff_at": "2026-11-23T10:00:00.000Z",
            },
        )
    ]
    # The note is the agent's to read, on the session, where deleting it reaches (issue 24).
    assert session.handoff_note == "my parcel is lost"


def test_another_users_session_cannot_be_handed_off(world: World) -> None:
    with pytest.raises(SessionNotFound):
        handoff.request_handoff(
            world.memory,
            world.events,
            user_id="mallory",
            session_id=world.session_id,
            note=None,
            clock=world.clock,
        )
    assert world.session().handoff_state is None and world.events.published == []


def test_the_human_command_hands_off_with_a_fixed_reply_and_no_model_call(world: World) -> None:
    result = world.say("/human the app charged me twice", client_message_id="h1")
    assert result.turn.response == HUMAN_REPLY and not result.turn.remember_response
    assert result.turn.intent == "human" and world.model.prompts == []
    session = world.session()
    assert (session.handoff_state, session.handoff_reason, session.handoff_turn) == (
        "WAITING",
        "user_request",
        1,
    )
    [(kind, detail)] = world.events.published
    assert kind == HANDOFF_EVENT and "note" not in detail  # the turn's input holds it
    assert detail["turn"] == 1
    retried = world.say("/human the app charged me twice", client_message_id="h1")
    assert retried.replayed and retried.turn.turn == 1 and len(world.events.published) == 1


def test_messages_while_handed_off_are_stored_for_the_agent_unanswered(world: World) -> None:
    world.ask_for_person()
    result = world.say("I hate waiting", client_message_id="w1")
    turn = result.turn
    assert (turn.for_agent, turn.pending, turn.response) == (True, False, None)
    assert turn.sentiment is not None and turn.sentiment.label == "negative"  # still analyzed
    assert world.model.prompts == []  # no model call
    assert world.say("I hate waiting", client_message_id="w1").turn == turn  # a retry
    world.say("/past what did I order")  # a command is not run: the agent reads it as typed
    turns = world.turns()
    assert [(t.input, t.for_agent, t.response) for t in turns] == [
        ("I hate waiting", True, None),
        ("/past what did I order", True, None),
    ]
    assert world.model.prompts == []


# --- the agent's side ----------------------------------------------------------------------------


def test_an_agent_lists_the_queue_reads_replies_and_the_session_becomes_active(
    world: World,
) -> None:
    other = create_session(world.memory, "bob", clock=world.clock)
    world.clock.now += timedelta(minutes=1)
    world.say("hello bot")
    world.ask_for_person()
    world.clock.now += timedelta(minutes=1)
    handoff.request_handoff(
        world.memory, None, user_id="bob", session_id=other.session_id, note=None, clock=world.clock
    )
    world.say("are you there?")
    waiting = handoff.list_queue(world.memory, state="WAITING", limit=10, next_token=None)
    assert [s.session_id for s in waiting.items] == [world.session_id, other.session_id]
    session, page = handoff.read_session_for_agent(
        world.memory, world.session_id, TurnPage(10, None, False)
    )
    assert session.handoff_state == "WAITING"
    assert [(t.turn, t.for_agent) for t in page.items] == [(2, True), (1, False)]

    reply = world.reply("Hi, I am Ana. How can I help?", client_message_id="a1")
    turn = reply.turn
    assert (turn.turn, turn.origin, turn.input, turn.agent_id) == (3, "agent", "", AGENT)
    assert turn.response == "Hi, I am Ana. How can I help?"
    assert world.reply("Hi, I am Ana. How can I help?", client_message_id="a1").replayed
    with pytest.raises(Conflict):  # one id, two replies
        world.reply("Something else", client_message_id="a1")
    session = world.session()
    assert (session.handoff_state, session.handoff_agent) == ("ACTIVE", AGENT)
    assert [
        s.session_id
        for s in handoff.list_queue(world.memory, state="ACTIVE", limit=10, next_token=None).items
    ] == [world.session_id]
    _contiguous(world.turns())


def test_an_agent_reads_and_answers_only_sessions_handed_to_a_person(world: World) -> None:
    with pytest.raises(SessionNotFound):
        handoff.read_session_for_agent(world.memory, world.session_id, TurnPage(10, None, True))
    with pytest.raises(Conflict):
        world.reply("unsolicited")
    with pytest.raises(Conflict):
        world.hand_back()
    with pytest.raises(SessionNotFound):
        handoff.read_session_for_agent(world.memory, "missing", TurnPage(10, None, True))
    assert world.turns() == [] and world.events.published == []


def test_after_the_hand_back_the_bot_answers_with_the_whole_conversation(world: World) -> None:
    world.say("my parcel is lost")
    world.ask_for_person()
    world.say("it was order 1234")
    world.reply("I found order 1234: it arrives tomorrow.")
    back = world.hand_back()
    assert back.changed and back.session.handoff_state is None
    assert back.session.handoff_turn == 1  # where the hand-off was
    kind, detail = world.events.published[-1]
    assert kind == HANDBACK_EVENT
    assert detail == {
        "session_id": world.session_id,
        "user_id": USER,
        "agent_id": AGENT,
        "reason": "user_request",
        "turn": 3,
        "handoff_at": "2026-11-23T10:00:00.000Z",
        "handed_back_at": "2026-11-23T10:00:00.000Z",
    }
    answered = world.say("thanks, what time tomorrow?")
    assert answered.turn.response == "bot: thanks, what time tomorrow?"
    prompt = world.model.prompts[-1]
    lines = prompt.splitlines()
    assert "User: it was order 1234" in lines
    assert "Agent: I found order 1234: it arrives tomorrow." in lines
    # The message for the agent is a user line with no bot answer after it.
    at = lines.index("User: it was order 1234")
    assert lines[at + 1] == "Agent: I found order 1234: it arrives tomorrow."
    _contiguous(world.turns())


# --- races ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stacked", [True, False], ids=["stacked", "answered-alone"])
def test_a_hand_off_during_the_bots_answer_gives_the_message_to_the_agent(stacked: bool) -> None:
    world = _world(policy=ChatPolicy(stack=StackPolicy(enabled=stacked)))
    # Stacked, the message is stored first (beside the model's call: once it is).
    ask = world.ask_for_person
    world.model.during.append(
        once_stored(world.memory, world.session_id, 1, ask) if stacked else ask
    )
    result = world.say("where is my parcel?", client_message_id="m1")
    # The bot's answer lost: the message is the agent's, unanswered, and stored once.
    assert (result.turn.for_agent, result.turn.pending, result.turn.response) == (True, False, None)
    [turn] = world.turns()
    assert (turn.for_agent, turn.response, turn.input) == (True, None, "where is my parcel?")
    assert world.session().handoff_turn == (1 if stacked else 0)
    again = world.say("where is my parcel?", client_message_id="m1")  # a retry changes nothing
    assert again.turn.turn == 1 and again.turn.response is None
    assert world.turns() == [turn]


def test_a_message_answered_before_the_hand_off_keeps_its_answer(world: World) -> None:
    world.say("where is my parcel?")
    world.ask_for_person()
    [turn] = world.turns()
    assert turn.response == "bot: where is my parcel?" and not turn.for_agent
    assert world.session().handoff_turn == 1


def test_a_hand_back_before_a_message_is_stored_for_the_agent_has_the_bot_answer_it(
    world: World,
) -> None:
    world.ask_for_person()
    # The message's request read the session handed off; the hand-back commits before its write.
    world.memory.before_append.append(lambda: world.hand_back())
    result = world.say("anyone?")
    assert result.turn.response == "bot: anyone?" and not result.turn.for_agent
    [turn] = world.turns()
    assert (turn.for_agent, turn.response) == (False, "bot: anyone?")


def test_a_message_stored_for_the_agent_before_the_hand_back_stays_in_the_conversation(
    world: World,
) -> None:
    world.ask_for_person()
    world.say("one more thing: the box was damaged")
    world.hand_back()
    world.say("hello again")
    turns = world.turns()
    assert [(t.for_agent, t.response is None) for t in turns] == [(True, True), (False, False)]
    assert "User: one more thing: the box was damaged" in world.model.prompts[-1].splitlines()


def test_an_agents_reply_after_a_hand_back_is_refused_and_stores_nothing(world: World) -> None:
    world.ask_for_person()
    world.memory.before_append.append(lambda: world.hand_back(agent="agent-ben"))
    with pytest.raises(Conflict, match="handed back"):
        world.reply("I can help")
    assert world.turns() == [] and world.session().handoff_state is None


def test_a_waiting_message_retried_after_a_hand_off_is_the_agents(world: World) -> None:
    world.model.fail = 1
    with pytest.raises(ModelUnavailable):
        world.say("hello?", client_message_id="m1")
    [pending] = world.turns()
    assert pending.pending
    world.ask_for_person()
    retried = world.say("hello?", client_message_id="m1")
    assert (retried.turn.for_agent, retried.turn.pending, retried.turn.response) == (
        True,
        False,
        None,
    )
    assert len(world.model.prompts) == 1  # the retry made no model call


def test_the_sweeper_never_ends_a_handed_off_session(world: World) -> None:
    world.say("hello")
    world.ask_for_person()
    later = world.clock.now + timedelta(days=2)
    assert sweep_idle_sessions(world.memory, now=later, idle_minutes=30) == []
    assert world.session().status == "OPEN"
    world.clock.now = later
    world.hand_back()
    assert (
        sweep_idle_sessions(world.memory, now=later + timedelta(minutes=10), idle_minutes=30) == []
    )
    assert sweep_idle_sessions(world.memory, now=later + timedelta(hours=1), idle_minutes=30) == [
        world.session_id
    ]


def test_a_hand_off_between_the_sweepers_read_and_its_end_wins(world: World) -> None:
    world.say("hello")
    later = world.clock.now + timedelta(hours=2)
    # The sweeper lists the idle session; the user asks for a person before it ends it.
    world.memory.after_sweep.append(lambda: world.ask_for_person())
    assert sweep_idle_sessions(world.memory, now=later, idle_minutes=30) == []
    assert world.session().status == "OPEN" and world.session().handoff_state == "WAITING"


# --- the automatic rules -------------------------------------------------------------------------


def _negative_world(turns: int = 2) -> World:
    return _world(policy=ChatPolicy(handoff=HandoffPolicy(negative_turns=turns)))


def test_consecutive_negative_turns_hand_off_with_the_answer_and_a_takeover_sentence() -> None:
    world = _negative_world(3)
    world.say("this is awful")
    world.say("fine, thanks")  # a positive turn ends the streak
    world.say("terrible service")
    world.say("I am angry")
    assert world.session().handoff_state is None
    last = world.say("useless bot")
    assert last.turn.response == f"bot: useless bot\n\n{TAKEOVER}"
    session = world.session()
    assert (session.handoff_state, session.handoff_reason, session.handoff_turn) == (
        "WAITING",
        "negative_sentiment",
        5,
    )
    [(kind, detail)] = world.events.published
    assert (kind, detail["reason"], detail["turn"], detail["user_id"]) == (
        HANDOFF_EVENT,
        "negative_sentiment",
        5,
        USER,
    )
    assert world.say("still awful").turn.for_agent  # a person has it now


def test_after_a_hand_back_the_streak_counts_only_new_turns() -> None:
    world = _negative_world(2)
    world.say("this is awful")
    world.say("terrible")
    assert world.session().handoff_state == "WAITING"
    world.hand_back()
    world.say("still awful")  # one negative turn since the hand-off: not two
    assert world.session().handoff_state is None
    world.say("I hate this")
    assert world.session().handoff_reason == "negative_sentiment"


def test_the_automatic_rules_are_off_by_default(world: World) -> None:
    for text in ("awful", "terrible", "angry", "hate it", "useless"):
        world.say(text)
    assert world.session().handoff_state is None and world.events.published == []


def _verified_world(on: bool) -> World:
    return _world(
        policy=ChatPolicy(handoff=HandoffPolicy(on_nothing_verified=on)),
        long_term=EmbeddedLongTermIndex(":memory:"),
    )


def test_verified_finding_nothing_hands_off_when_configured() -> None:
    world = _verified_world(True)
    result = world.say("/verified what is the refund policy?")
    assert result.turn.response == f"{NOTHING_VERIFIED}\n\n{TAKEOVER}"
    session = world.session()
    assert (session.handoff_state, session.handoff_reason) == ("WAITING", "nothing_verified")
    assert world.events.published[0][1]["reason"] == "nothing_verified"
    off = _verified_world(False)
    assert off.say("/verified what is the refund policy?").turn.response == NOTHING_VERIFIED
    assert off.session().handoff_state is None


def test_the_rules_read_the_sentiment_from_the_decision_inputs() -> None:
    policy = HandoffPolicy(negative_turns=2)
    session = Session("s", USER, "s", "OPEN", "", "", handoff_turn=3)  # type: ignore[arg-type]

    def turn(number: int, score: float | None, **kw: Any) -> Turn:
        mood = None if score is None else Sentiment(SentimentLabel.NEGATIVE, score)
        return Turn("s", number, USER, "x", "y", sentiment=mood, **kw)

    now = turn(6, -0.9)
    assert handoff.negative_streak(policy, session, now, [turn(5, -0.6)])
    assert not handoff.negative_streak(policy, session, now, [turn(5, -0.4)])  # above -0.5
    assert not handoff.negative_streak(policy, session, now, [turn(5, None)])  # unknown
    assert not handoff.negative_streak(policy, session, now, [turn(3, -0.9)])  # before hand-off
    agent = turn(5, None, origin=TurnOrigin.AGENT)
    assert not handoff.negative_streak(policy, session, now, [turn(4, -0.9), agent])


# --- events --------------------------------------------------------------------------------------


def test_a_failed_event_does_not_fail_the_hand_off(world: World) -> None:
    world.events.fail = True
    outcome = world.ask_for_person()
    assert outcome.changed and outcome.session.handoff_state == "WAITING"
    assert "the bus is gone" in outcome.event_error
    result = world.say("/human")  # already handed off: stored for the agent
    assert result.turn.for_agent


def test_a_failed_event_of_a_turn_is_reported_with_the_turn(world: World) -> None:
    world.events.fail = True
    result = world.say("/human")
    assert result.turn.response == HUMAN_REPLY and "the bus is gone" in result.event_error
    assert world.session().handoff_state == "WAITING"


def test_local_mode_appends_each_event_as_one_json_line(tmp_path: Path) -> None:
    path = tmp_path / "state" / "events.jsonl"
    publisher = JsonLinesEventPublisher(path, clock=FixedClock())
    publisher.publish(HANDOFF_EVENT, {"session_id": "s1", "reason": "user_request"})
    publisher.publish(HANDBACK_EVENT, {"session_id": "s1"})
    events = read_events(path)
    assert [(e["source"], e["detail-type"], e["detail"]["session_id"]) for e in events] == [
        ("chatmemory", HANDOFF_EVENT, "s1"),
        ("chatmemory", HANDBACK_EVENT, "s1"),
    ]
    assert events[0]["time"] == "2026-11-23T10:00:00.000Z" and events[0]["id"]
    assert len(path.read_text().splitlines()) == 2


class _Bus:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.sent: list[dict[str, Any]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803
        self.sent += Entries
        return self.answer


def test_eventbridge_gets_the_events_source_type_and_bus() -> None:
    bus = _Bus({"FailedEntryCount": 0, "Entries": [{"EventId": "1"}]})
    EventBridgePublisher(bus, "chat-handoff").publish(HANDOFF_EVENT, {"session_id": "s1"})
    [entry] = bus.sent
    assert entry == {
        "Source": "chatmemory",
        "DetailType": "Session handed off",
        "Detail": json.dumps({"session_id": "s1"}),
        "EventBusName": "chat-handoff",
    }
    refused = _Bus({"FailedEntryCount": 1, "Entries": [{"ErrorCode": "AccessDeniedException"}]})
    with pytest.raises(EventsUnavailable, match="AccessDeniedException"):
        EventBridgePublisher(refused, "chat-handoff").publish(HANDOFF_EVENT, {})


def test_eventbridge_on_moto_receives_the_event(aws_env: None) -> None:
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("events", region_name="us-east-1")
        client.create_event_bus(Name="chat-handoff")
        EventBridgePublisher(client, "chat-handoff").publish(HANDOFF_EVENT, {"session_id": "s1"})


def test_the_events_client_is_built_by_the_first_hand_off_not_by_the_cold_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import boto3
    from moto import mock_aws

    monkeypatch.setenv("EVENT_BUS_NAME", "chat-handoff")
    wiring.clear_caches()
    with mock_aws():
        publisher = wiring.event_publisher()
        assert wiring.aws_client.cache_info().currsize == 0
        boto3.client("events", region_name="us-east-1").create_event_bus(Name="chat-handoff")
        assert publisher is not None
        publisher.publish(HANDOFF_EVENT, {"session_id": "s1"})
        assert wiring.aws_client.cache_info().currsize == 1


def test_the_wiring_publishes_to_the_bus_else_the_file_else_nowhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert wiring.event_publisher(wiring.settings()) is None
    monkeypatch.setenv("EVENTS_FILE", str(tmp_path / "events.jsonl"))
    wiring.clear_caches()
    assert isinstance(wiring.event_publisher(), JsonLinesEventPublisher)
    monkeypatch.setenv("EVENT_BUS_NAME", "chat-handoff")
    wiring.clear_caches()
    assert isinstance(wiring.event_publisher(), EventBridgePublisher)


# --- who is an agent -----------------------------------------------------------------------------


ROLE = "arn:aws:iam::123456789012:role/support/ChatAgents"


def _event(claims: dict[str, Any] | None = None, user_arn: str | None = None) -> dict[str, Any]:
    return {
        "requestContext": {
            "authorizer": {"claims": claims} if claims is not None else None,
            "identity": {"userArn": user_arn},
        }
    }


@pytest.mark.parametrize(
    ("claim", "agent"),
    [
        ("agents", True),  # one group, as API Gateway's Cognito authorizer passes it
        ("[agents]", True),
        ("[admins agents]", True),  # several: a Java-style list in a string
        ("admins,agents", True),  # or comma-separated
        ('["admins", "agents"]', True),  # a JSON list in a string
        (["admins", "agents"], True),  # a JSON list
        ("[admins]", False),
        ("agentsx", False),
        ("", False),
        (None, False),
    ],
)
def test_an_agent_is_a_member_of_the_cognito_group_however_the_claim_is_written(
    claim: Any, agent: bool
) -> None:
    claims = {"sub": "u1"} if claim is None else {"sub": "u1", "cognito:groups": claim}
    assert is_agent(_event(claims), group="agents") is agent


def test_groups_claims_parse_to_their_names() -> None:
    assert cognito_groups("[a b]") == cognito_groups("a, b") == {"a", "b"}
    assert cognito_groups(42) == set()


@pytest.mark.parametrize(
    ("user_arn", "agent"),
    [
        ("arn:aws:sts::123456789012:assumed-role/ChatAgents/ana@example.com", True),
        ("arn:aws:sts::123456789012:assumed-role/ChatUsers/ana", False),  # another role
        ("arn:aws:sts::210987654321:assumed-role/ChatAgents/ana", False),  # another account
        ("arn:aws-cn:sts::123456789012:assumed-role/ChatAgents/ana", False),  # partition
        ("arn:aws:iam::123456789012:user/ChatAgents", False),  # a user, not a role session
        (None, False),
    ],
)
def test_with_iam_an_agent_is_a_session_of_the_agent_role(user_arn: Any, agent: bool) -> None:
    assert is_agent(_event(None, user_arn), group="agents", role_arn=ROLE) is agent
    assert is_session_of(user_arn, ROLE) is agent


def test_without_a_role_arn_no_iam_caller_is_an_agent() -> None:
    arn = "arn:aws:sts::123456789012:assumed-role/ChatAgents/ana"
    assert not is_agent(_event(None, arn), group="agents", role_arn="")


# --- memory of a conversation with a person --------------------------------------------------------


def _conversation() -> list[Turn]:
    return [
        Turn("s", 1, USER, "I moved to Porto last year with my family.", "bot: nice"),
        Turn("s", 2, USER, "Can you refund order 1234 this week?", None, for_agent=True),
        Turn("s", 3, USER, "", "I refunded order 1234 today.", origin=TurnOrigin.AGENT),
        Turn("s", 4, USER, "thanks", "bot: you are welcome"),
    ]


def test_the_prompt_renders_agent_turns_on_their_own_role_line() -> None:
    prompt = build_chat_prompt(
        system="sys",
        summary="",
        window=_conversation(),
        message="and now?",
        roles=Roles(),
        token_budget=512,
    )
    assert prompt.text.splitlines()[1:] == [
        "User: I moved to Porto last year with my family.",
        "Assistant: bot: nice",
        "User: Can you refund order 1234 this week?",
        "Agent: I refunded order 1234 today.",
        "User: thanks",
        "Assistant: bot: you are welcome",
        "User: and now?",
        "Assistant:",
    ]
    assert "Agent:" in Roles().stop_words()


def test_consolidation_keeps_the_agents_replies_as_theirs() -> None:
    lines = transcript(_conversation(), Roles()).splitlines()
    assert "Agent: I refunded order 1234 today." in lines
    assert not any(line.startswith("Assistant: I refunded") for line in lines)


def test_records_are_drawn_from_the_users_lines_only() -> None:
    turns = _conversation()
    turns[2].response = "I moved to Lisbon last year with my family."  # the agent's life
    facts = PatternExtractor().extract(turns)
    assert [(f.turn, f.subject) for f in facts] == [(1, "residence")]
    assert "Porto" in facts[0].text


def test_a_question_a_person_answered_is_not_left_open() -> None:
    turns = _conversation()
    assert open_questions(turns) == []
    unanswered = [t for t in turns if t.origin != TurnOrigin.AGENT and t.turn != 4]
    assert [q.turn for q in open_questions(unanswered)] == [2]


# --- the routes, through the Lambda handler on moto ------------------------------------------------


class Api:
    """The chat Lambda with the proxy events the local gateway builds, as a user or an agent
    (the Cognito groups claim, as API Gateway's authorizer passes it)."""

    def __init__(self, handler: Any, context: Any) -> None:
        from local.gateway import load_routes

        self._handler = handler
        self._context = context
        self._routes = load_routes()

    def call(
        self, method: str, path: str, body: Any = None, *, user: str = USER, groups: str = ""
    ) -> tuple[int, Any]:
        from local.gateway import proxy_event

        event = proxy_event(
            method=method,
            target=path,
            headers=[("Content-Type", "application/json")],
            body=None if body is None else json.dumps(body),
            user_id=user,
            routes=self._routes,
            groups=groups or None,
        )
        answer = self._handler(event, self._context)
        self.answer_bytes = len(json.dumps(answer, default=str).encode())  # as Lambda sends it
        return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None

    def agent(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return self.call(method, path, body, user=AGENT, groups="[support agents]")


@pytest.fixture
def api(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any, tmp_path: Path) -> Api:
    from handlers import chat_api

    monkeypatch.setenv("STACK_MESSAGES", "false")
    deps = ChatDeps(
        memory=wiring.short_term_memory(),
        generator=HookedModel(prefix="bot: "),
        events=JsonLinesEventPublisher(tmp_path / "events.jsonl"),
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return Api(chat_api.handler, lambda_context)


def test_an_agent_reads_a_session_of_long_messages_in_pages_that_lambda_can_answer(
    api: Api,
) -> None:
    """A control character is 1 byte in DynamoDB and 7 in the answer: one 1 MB page of such
    messages was a 6.7 MB answer, which Lambda refuses (API Gateway answers 502)."""
    message = {"input": "\x01" * 30_000, "response": "\x01" * 20_000}
    status, data = api.call("POST", "/sessions/import", {"messages": [message] * 45})
    assert status == 201, data
    sid = data["session"]["session_id"]
    assert api.call("POST", f"/sessions/{sid}/handoff", {})[0] == 200
    turns: list[int] = []
    token = ""
    for _ in range(20):
        status, view = api.agent("GET", f"/agent/sessions/{sid}?limit=100&next_token={token}")
        assert status == 200, view
        assert api.answer_bytes <= LAMBDA_PAYLOAD_BYTES
        turns += [m["turn"] for m in view["messages"]]
        token = view["next_token"] or ""
        if not token:
            break
    assert turns == list(range(45, 0, -1))


def test_the_routes_hand_off_reply_and_hand_back(api: Api, tmp_path: Path) -> None:
    status, data = api.call("POST", "/sessions", {"name": "Parcel"})
    sid = data["session"]["session_id"]
    status, data = api.call("POST", f"/sessions/{sid}/handoff", {"note": "lost parcel"})
    assert status == 200 and data["session"]["handoff_state"] == "WAITING"
    assert data["session"]["handoff_reason"] == "user_request"
    status, data = api.call("POST", f"/sessions/{sid}/messages", {"content": "hello?"})
    assert status == 200 and data["turn"]["for_agent"] and data["turn"]["response"] is None

    status, queue = api.agent("GET", "/agent/sessions?state=WAITING")
    assert status == 200 and [s["session_id"] for s in queue["sessions"]] == [sid]
    assert queue["sessions"][0]["user_id"] == USER
    status, view = api.agent("GET", f"/agent/sessions/{sid}")
    assert status == 200 and [m["input"] for m in view["messages"]] == ["hello?"]
    status, reply = api.agent(
        "POST",
        f"/agent/sessions/{sid}/messages",
        {"content": "Hi, Ana here.", "client_message_id": "a1"},
    )
    assert status == 200
    assert (reply["turn"]["origin"], reply["turn"]["agent_id"], reply["turn"]["input"]) == (
        "agent",
        AGENT,
        "",
    )
    status, data = api.call("GET", f"/sessions/{sid}")
    assert (data["session"]["handoff_state"], data["session"]["handoff_agent"]) == ("ACTIVE", AGENT)
    status, messages = api.call("GET", f"/sessions/{sid}/messages")
    assert [m["response"] for m in messages["messages"]] == [None, "Hi, Ana here."]
    status, back = api.agent("POST", f"/agent/sessions/{sid}/handback")
    assert status == 200 and back["session"]["handoff_state"] is None
    status, again = api.agent("POST", f"/agent/sessions/{sid}/handback")
    assert status == 409 and again["error"]["code"] == "conflict"
    status, data = api.call("POST", f"/sessions/{sid}/messages", {"content": "thanks"})
    assert data["turn"]["response"] == "bot: thanks" and not data["turn"]["for_agent"]
    kinds = [
        (e["detail-type"], e["detail"]["session_id"])
        for e in read_events(tmp_path / "events.jsonl")
    ]
    assert kinds == [(HANDOFF_EVENT, sid), (HANDBACK_EVENT, sid)]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/agent/sessions", None),
        ("GET", "/agent/sessions/{sid}", None),
        ("POST", "/agent/sessions/{sid}/messages", {"content": "hi"}),
        ("POST", "/agent/sessions/{sid}/handback", None),
    ],
)
def test_a_user_is_refused_every_agent_route(api: Api, method: str, path: str, body: Any) -> None:
    status, data = api.call("POST", "/sessions", {})
    sid = data["session"]["session_id"]
    api.call("POST", f"/sessions/{sid}/handoff")
    for groups in ("", "[users]", "agentsx"):
        status, data = api.call(method, path.format(sid=sid), body, groups=groups)
        assert status == 403 and data["error"]["code"] == "forbidden", groups
    status, data = api.call("GET", f"/sessions/{sid}/messages")
    assert data["messages"] == []  # nothing was written


def test_agents_route_answers_bad_requests_and_missing_sessions(api: Api) -> None:
    assert api.agent("GET", "/agent/sessions?state=DONE")[0] == 400
    assert api.agent("GET", "/agent/sessions/missing")[0] == 404
    status, data = api.agent("POST", "/agent/sessions/missing/messages", {"content": " "})
    assert status in (400, 404)
    assert api.agent("POST", "/agent/sessions/missing/handback")[0] == 404


def test_an_agent_cannot_read_what_the_user_forgot(world: World) -> None:
    world.say("my address is 5 Elm Street")
    world.ask_for_person()
    world.memory.forget_user(world.memory.get_user(USER), "2026-11-23T11:00:00.000Z")
    with pytest.raises(SessionNotFound):
        handoff.read_session_for_agent(world.memory, world.session_id, TurnPage(10, None, True))
    with pytest.raises(SessionNotFound):
        world.reply("I can see your address")
    assert handoff.list_queue(world.memory, state="WAITING", limit=10, next_token=None).items == []


def test_export_and_import_keep_the_words_of_a_conversation_with_a_person(api: Api) -> None:
    status, data = api.call("POST", "/sessions", {})
    sid = data["session"]["session_id"]
    api.call("POST", f"/sessions/{sid}/messages", {"content": "/human"})
    api.call("POST", f"/sessions/{sid}/messages", {"content": "order 1234"})
    api.agent("POST", f"/agent/sessions/{sid}/messages", {"content": "It ships today."})
    status, exported = api.call("GET", f"/sessions/{sid}/export")
    assert status == 200
    status, data = api.call("POST", "/sessions/import", exported)
    assert status == 201
    copy = data["session"]["session_id"]
    assert data["session"]["handoff_state"] is None  # the copy is with the bot
    status, listed = api.call("GET", f"/sessions/{copy}/messages")

    def shown(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [
            (m["input"], m["response"], m["origin"], m["agent_id"], m["for_agent"])
            for m in messages
        ]

    assert shown(exported["messages"])[1:] == [
        ("order 1234", None, "chat", None, True),
        ("", "It ships today.", "agent", AGENT, False),
    ]
    # The words come back; the person's name and role do not (see the test below).
    assert shown(listed["messages"])[1:] == [
        ("order 1234", None, "chat", None, False),
        ("", "It ships today.", "client", None, False),
    ]


def test_an_import_cannot_forge_an_agents_reply(api: Api) -> None:
    """Failed first: an imported message with origin agent and an agent_id was shown on the
    agent desk (and in the user's history) as that agent's reply, once the session was handed
    off: a user could make "supervisor-jane" approve their refund."""
    forged = {
        "messages": [
            {"input": "I want a refund", "response": None},
            {
                "input": "",
                "response": "Refund approved",
                "origin": "agent",
                "agent_id": "supervisor-jane",
            },
            {"input": "thanks", "for_agent": True},
        ]
    }
    status, data = api.call("POST", "/sessions/import", forged)
    assert status == 201, data
    sid = data["session"]["session_id"]
    assert api.call("POST", f"/sessions/{sid}/handoff", {})[0] == 200
    status, view = api.agent("GET", f"/agent/sessions/{sid}?order=asc")
    assert status == 200, view
    turns = view["messages"]
    assert [t["origin"] for t in turns] == ["chat", "client", "chat"]
    assert all(t["agent_id"] is None and not t["for_agent"] for t in turns)
    assert "supervisor-jane" not in json.dumps(view)


def test_a_retried_failed_message_is_the_agents_when_a_hand_off_lands_during_its_answer() -> None:
    """Failed first: the retry of a message whose model call failed (answered alone: stacking
    off, or a command) completed the turn with no session condition, so a hand-off during the
    retry's model call still got the bot's answer written."""
    world = _world(policy=ChatPolicy(stack=StackPolicy(enabled=False)))
    world.model.fail = 1
    with pytest.raises(ModelUnavailable):
        world.say("where is my parcel?", client_message_id="m-1")
    world.model.during.append(lambda: world.ask_for_person())

    retried = world.say("where is my parcel?", client_message_id="m-1")

    [turn] = world.turns()
    assert (turn.response, turn.pending, turn.for_agent) == (None, False, True)
    assert retried.turn.for_agent and retried.turn.response is None
    assert world.session().handoff_state == "WAITING"


def test_no_event_carries_what_the_user_wrote_and_the_note_leaves_with_the_session(
    api: Api, tmp_path: Path
) -> None:
    """Failed first: the note of POST /handoff went into the hand-off event only, so after the
    user deleted the session (or forgot everything) it stayed in the events' targets (in local
    mode .local/events.jsonl) where no deletion reaches. It is kept on the session now, for the
    agent, and gone with the hand-back or the session."""
    sid = api.call("POST", "/sessions", {})[1]["session"]["session_id"]
    note = "my card ending 4111 was charged twice"
    status, data = api.call("POST", f"/sessions/{sid}/handoff", {"note": note})
    assert status == 200 and data["session"]["handoff_note"] == note
    status, view = api.agent("GET", f"/agent/sessions/{sid}")
    assert status == 200 and view["session"]["handoff_note"] == note
    api.call("POST", f"/sessions/{sid}/messages", {"content": "/human card 4111 again"})
    assert api.agent("POST", f"/agent/sessions/{sid}/handback")[0] == 200
    assert api.call("GET", f"/sessions/{sid}")[1]["session"]["handoff_note"] is None
    status, data = api.call("POST", f"/sessions/{sid}/messages", {"content": "/human card 4111"})
    assert status == 200
    assert api.call("GET", f"/sessions/{sid}")[1]["session"]["handoff_note"] is None
    assert api.call("DELETE", f"/sessions/{sid}")[0] == 204
    events = (tmp_path / "events.jsonl").read_text(encoding="utf-8")
    assert events.count("Session handed off") == 2 and "4111" not in events
