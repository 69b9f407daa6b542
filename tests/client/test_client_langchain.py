"""ChatMemoryMessageHistory's mapping of LangChain messages to turns, over an in-memory fake of
the client that keeps the API's rules (non-blank input, the input limit, a response given once,
ids of the caller's own continued on the server after their session ended, server ids refused
then). tests/client/test_client_langchain_local_mode.py runs the same on local mode."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from chatmemory_client import (
    BadRequest,
    Conflict,
    NotFound,
    PayloadTooLarge,
    Session,
    SessionEnded,
    Turn,
)
from chatmemory_client.langchain import ChatMemoryMessageHistory
from langchain_core.messages import (
    AIMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

MAX_INPUT_CHARS = 32_000
MAX_MESSAGES_BYTES = 128 * 1024


class InMemoryChatMemoryClient:
    """The part of ChatMemoryClient the history uses, with the server's rules, in memory."""

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.aliases: dict[str, str] = {}
        self.turns: dict[str, list[Turn]] = {}
        self.calls: list[str] = []
        self._ids = itertools.count(1)

    # --- sessions ---------------------------------------------------------------------------

    def create_session(
        self, name: str | None = None, *, continue_from: str | None = None, **_: Any
    ) -> Session:
        self.calls.append("create_session")
        return self._new(name, continue_from=continue_from)

    def ensure_session(self, session_id: str, name: str | None = None, **_: Any) -> Session:
        self.calls.append("ensure_session")
        found = self.sessions.get(self.aliases.get(session_id, session_id))
        if found is not None:
            return found
        created = self._new(name, client_id=session_id)
        self.aliases[session_id] = created.session_id
        return created

    def get_session(self, session_id: str) -> Session:
        self.calls.append("get_session")
        return self._session(session_id)

    def end(self, session_id: str) -> None:
        session = self._session(session_id)
        self.sessions[session.session_id] = replace(session, status="ENDED")

    def delete_session(self, session_id: str) -> None:
        self.calls.append("delete_session")
        session = self._session(session_id)
        doomed = [session]
        while doomed[-1].client_id and doomed[-1].continued_from in self.sessions:
            earlier = self.sessions[doomed[-1].continued_from]
            if earlier.client_id != session.client_id:
                break
            doomed.append(earlier)
        for gone in doomed:
            del self.sessions[gone.session_id], self.turns[gone.session_id]

    # --- turns ------------------------------------------------------------------------------

    def list_turns(
        self, session_id: str, *, order: str = "asc", page_size: int = 50
    ) -> Iterator[Turn]:
        self.calls.append(f"list_turns {order} {page_size}")
        turns = self.turns[self._session(session_id).session_id]
        yield from (turns if order == "asc" else reversed(turns))

    def store_turn(
        self,
        session_id: str,
        input: str,  # noqa: A002
        *,
        response: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
        **_: Any,
    ) -> Turn:
        self.calls.append("store_turn")
        if not input.strip():
            raise BadRequest(400, "bad_request", "input must not be empty")
        if len(input) > MAX_INPUT_CHARS:
            raise PayloadTooLarge(413, "payload_too_large", "input is too long")
        kept = _kept(messages)
        session = self._session(session_id)
        if session.status != "OPEN":
            if session_id not in self.aliases:
                raise SessionEnded(409, "session_ended", "ended")
            # The server continues a session of the caller's own id.
            session = self._new(
                session.name, continue_from=session.session_id, client_id=session_id
            )
            self.aliases[session_id] = session.session_id
        turns = self.turns[session.session_id]
        turn = Turn(
            turn=len(turns) + 1,
            input=input,
            response=response or None,
            pending=not response,
            origin="client",
            metadata=dict(metadata or {}),
            messages=kept,
        )
        turns.append(turn)
        return turn

    def complete_turn(
        self,
        session_id: str,
        turn: int,
        response: str | None,
        *,
        metadata: Mapping[str, Any] | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Turn:
        self.calls.append("complete_turn")
        session = self._session(session_id)
        turns = self.turns[session.session_id]
        stored = turns[turn - 1]
        if response is not None:
            if not stored.pending or stored.origin != "client":
                raise Conflict(409, "conflict", "already has a response")
            if session.status != "OPEN":
                raise SessionEnded(409, "session_ended", "ended before its response")
            stored = replace(stored, response=response, pending=False)
        if metadata is not None:
            stored = replace(stored, metadata=dict(metadata))
        if messages is not None:
            stored = replace(stored, messages=_kept(messages))
        turns[turn - 1] = stored
        return stored

    # --- helpers ----------------------------------------------------------------------------

    def _new(
        self, name: str | None, *, continue_from: str | None = None, client_id: str | None = None
    ) -> Session:
        session = Session(
            session_id=f"s{next(self._ids)}",
            name=name or "",
            continued_from=continue_from,
            client_id=client_id,
        )
        self.sessions[session.session_id] = session
        self.turns[session.session_id] = []
        return session

    def _session(self, session_id: str) -> Session:
        found = self.sessions.get(self.aliases.get(session_id, session_id))
        if found is None:
            raise NotFound(404, "session_not_found", session_id)
        return found


def _kept(messages: Sequence[Mapping[str, Any]] | None) -> tuple[Mapping[str, Any], ...] | None:
    """As the API keeps them: JSON, at most 128 KB."""
    if messages is None:
        return None
    text = json.dumps(list(messages), ensure_ascii=False, separators=(",", ":"))
    if len(text.encode()) > MAX_MESSAGES_BYTES:
        raise BadRequest(400, "bad_request", "messages is too large")
    return tuple(json.loads(text))


@pytest.fixture
def fake() -> InMemoryChatMemoryClient:
    return InMemoryChatMemoryClient()


def history_of(
    fake: InMemoryChatMemoryClient, session_id: str | None = None
) -> ChatMemoryMessageHistory:
    return ChatMemoryMessageHistory(session_id, client=fake)  # type: ignore[arg-type]


def _turns(fake: InMemoryChatMemoryClient, history: ChatMemoryMessageHistory) -> list[Turn]:
    return fake.turns[fake._session(history.session_id).session_id]


# An agent's exchange with every kind of message and field LangChain has.
SYSTEM = SystemMessage("You are a weather bot.", id="sys-1")
QUESTION = HumanMessage(
    [
        {"type": "text", "text": "What is the weather "},
        {"type": "text", "text": "in Porto?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ],
    id="h-1",
    name="ana",
    additional_kwargs={"channel": "web"},
)
CALL = AIMessage(
    "",
    id="a-1",
    tool_calls=[{"name": "weather", "args": {"city": "Porto", "days": 2}, "id": "call-1"}],
    response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
    usage_metadata={"input_tokens": 12, "output_tokens": 3, "total_tokens": 15},
)
RESULT = ToolMessage(
    "Sunny, 24 °C", tool_call_id="call-1", name="weather", artifact={"raw": [24, "C"]}
)
ANSWER = AIMessage("Sunny and 24 °C in Porto.", id="a-2", response_metadata={"seed": 7})


def test_every_message_type_and_field_round_trips(fake) -> None:
    """Failed first: SystemMessage and ToolMessage raised TypeError, and tool calls, names,
    ids of human turns, additional_kwargs, response_metadata and content parts were lost."""
    history = history_of(fake, "weather-chat")
    history.add_messages([SYSTEM, QUESTION, CALL])  # what a chain adds: its input and output
    history.add_messages([RESULT, ANSWER])
    history.add_messages([FunctionMessage("42", name="legacy_fn"), AIMessage("ok")])
    expected = [SYSTEM, QUESTION, CALL, RESULT, ANSWER, FunctionMessage("42", name="legacy_fn"),
                AIMessage("ok")]  # fmt: skip
    assert history.messages == expected
    assert history_of(fake, "weather-chat").messages == expected
    # What the memory pipeline reads: the human's text and the final answer, one turn.
    first, second = _turns(fake, history)
    assert (first.input, first.response, first.pending) == (
        "What is the weather in Porto?",
        "Sunny and 24 °C in Porto.",
        False,
    )
    assert (second.input, second.response) == ("…", "ok")


def test_a_human_and_ai_message_added_together_are_one_turn_in_one_request(fake) -> None:
    history = history_of(fake)
    fake.calls.clear()
    history.add_messages([HumanMessage("I like green tea"), AIMessage("Noted: green tea.")])
    assert fake.calls == ["store_turn"]
    (turn,) = _turns(fake, history)
    assert (turn.input, turn.response, turn.pending) == (
        "I like green tea",
        "Noted: green tea.",
        False,
    )
    assert history.messages == [HumanMessage("I like green tea"), AIMessage("Noted: green tea.")]


def test_a_human_message_waits_in_a_pending_turn_that_the_next_ai_message_completes(fake) -> None:
    history = history_of(fake)
    history.add_user_message("Where is Porto?")
    (pending,) = _turns(fake, history)
    assert pending.pending and pending.response is None
    fake.calls.clear()
    history_of(fake, history.session_id).add_ai_message("In the north of Portugal.")
    assert fake.calls == ["list_turns desc 1", "complete_turn"]
    assert len(_turns(fake, history)) == 1
    assert history.messages == [
        HumanMessage("Where is Porto?"),
        AIMessage("In the north of Portugal."),
    ]


def test_tool_calls_wait_in_the_turn_until_the_answer(fake) -> None:
    history = history_of(fake)
    history.add_messages([QUESTION])
    history.add_messages([CALL])
    history.add_messages([RESULT])
    (turn,) = _turns(fake, history)
    assert turn.pending and turn.response is None
    history.add_messages([ANSWER])
    (turn,) = _turns(fake, history)
    assert (turn.pending, turn.response) == (False, "Sunny and 24 °C in Porto.")
    assert history.messages == [QUESTION, CALL, RESULT, ANSWER]


def test_two_human_messages_in_a_row_stay_in_order(fake) -> None:
    history = history_of(fake)
    history.add_messages([HumanMessage("one"), HumanMessage("two"), AIMessage("both heard")])
    history.add_messages([HumanMessage("three")])
    history.add_messages([HumanMessage("four")])
    history.add_messages([AIMessage("answer to four")])
    assert history.messages == [
        HumanMessage("one"),
        HumanMessage("two"),
        AIMessage("both heard"),
        HumanMessage("three"),
        HumanMessage("four"),
        AIMessage("answer to four"),
    ]
    assert [t.response for t in _turns(fake, history)] == [
        None,
        "both heard",
        None,
        "answer to four",
    ]


def test_an_ai_message_with_no_open_turn_is_a_turn_of_its_own(fake) -> None:
    history = history_of(fake)
    history.add_messages([AIMessage("Hello! How can I help?"), AIMessage("Take your time.")])
    history.add_messages([HumanMessage("Hi"), AIMessage("Hi there"), AIMessage("Anything else?")])
    history.add_ai_message("Still here.")
    expected = [
        AIMessage("Hello! How can I help?"),
        AIMessage("Take your time."),
        HumanMessage("Hi"),
        AIMessage("Hi there"),
        AIMessage("Anything else?"),
        AIMessage("Still here."),
    ]
    assert history.messages == expected
    opening = _turns(fake, history)[0]
    assert (opening.input, opening.response) == ("…", "Hello! How can I help?\n\nTake your time.")


def test_an_ai_message_after_a_turn_the_server_model_left_pending_is_a_turn_of_its_own(
    fake,
) -> None:
    history = history_of(fake)
    _turns(fake, history).append(Turn(turn=1, input="/past hi", pending=True, origin="chat"))
    history.add_ai_message("My own answer")
    assert history.messages == [HumanMessage("/past hi"), AIMessage("My own answer")]


def test_blank_texts_and_message_ids_round_trip(fake) -> None:
    history = history_of(fake)
    history.add_messages([HumanMessage("  ", id="h1"), AIMessage("", id="a1")])
    history.add_messages([HumanMessage("ok", id="h2")])
    history.add_messages([AIMessage("", id="a2")])
    assert history.messages == [
        HumanMessage("  ", id="h1"),
        AIMessage("", id="a1"),
        HumanMessage("ok", id="h2"),
        AIMessage("", id="a2"),
    ]
    first, second = _turns(fake, history)
    assert (first.input, first.response) == ("…", "…")
    assert (second.input, second.response) == ("ok", "…")


def test_turns_of_the_earlier_version_read_back_as_before(fake) -> None:
    history = history_of(fake)
    _turns(fake, history).extend(
        [
            Turn(turn=1, input="…", response="Hello", origin="client",
                 metadata={"lc.no_human": True, "lc.ai_id": "a0"}),
            Turn(turn=2, input="…", response="…", origin="client",
                 metadata={"lc.human_text": " ", "lc.human_id": "h1", "lc.ai_text": ""}),
        ]
    )  # fmt: skip
    assert history.messages == [
        AIMessage("Hello", id="a0"),
        HumanMessage(" ", id="h1"),
        AIMessage(""),
    ]


def test_what_the_api_refuses_raises_and_nothing_after_it_is_stored(fake) -> None:
    """Failed first: an input over 4,000 characters raised, and inside
    RunnableWithMessageHistory only a warning said the turn was not stored."""
    history = history_of(fake)
    longest = "x" * MAX_INPUT_CHARS
    history.add_messages([HumanMessage(longest), AIMessage("read it")])
    with pytest.raises(PayloadTooLarge):
        history.add_messages(
            [HumanMessage(longest + "x"), AIMessage("too long"), HumanMessage("later")]
        )
    with pytest.raises(BadRequest):
        history.add_messages([HumanMessage("a big tool result"), ToolMessage("y" * 140_000,
                              tool_call_id="t")])  # fmt: skip
    assert history.messages == [HumanMessage(longest), AIMessage("read it")]


def test_clear_keeps_the_id_and_empties_the_conversation(fake) -> None:
    """Failed first: clear() gave the history a new session id, so a factory keyed by id
    found nothing (404) afterwards."""
    history = ChatMemoryMessageHistory("tea-talk", client=fake, name="Tea talk")  # type: ignore[arg-type]
    history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    fake.end("tea-talk")
    history.add_messages([HumanMessage("again"), AIMessage("hello again")])
    history.clear()
    assert history.session_id == "tea-talk"
    assert history_of(fake, "tea-talk").messages == []
    assert fake.get_session("tea-talk").name == "Tea talk"
    assert len(fake.sessions) == 1  # both sessions of the conversation are gone
    history_of(fake, "tea-talk").add_user_message("from scratch")
    assert history.messages == [HumanMessage("from scratch")]


def test_without_a_session_id_a_conversation_is_created_under_a_fresh_id(fake) -> None:
    history = history_of(fake)
    assert fake.calls == ["ensure_session"]
    assert fake.get_session(history.session_id).client_id == history.session_id
    assert history.messages == []


def test_an_id_of_yours_is_created_at_the_first_write_not_by_a_read(fake) -> None:
    history = ChatMemoryMessageHistory("user42-conv", client=fake, name="Mine")  # type: ignore[arg-type]
    assert history.messages == []
    assert fake.sessions == {}
    history.add_messages([AIMessage("hi")])
    assert fake.get_session("user42-conv").name == "Mine"
    assert history.messages == [AIMessage("hi")]


def test_after_its_session_ended_the_same_id_continues_the_conversation(fake) -> None:
    """Failed first: the history moved to a new session id of its own, so a factory keyed by
    the id started over each time and the model's prompt stayed frozen."""
    history = history_of(fake, "porto")
    history.add_messages([HumanMessage("I moved to Porto"), AIMessage("Noted.")])
    history.add_user_message("and my sister lives in Braga")
    ended = fake.get_session("porto").session_id
    fake.end("porto")
    history_of(fake, "porto").add_ai_message("Porto and Braga, then.")
    history_of(fake, "porto").add_user_message("hello again")
    assert history.session_id == "porto"
    assert fake.get_session("porto").continued_from == ended
    expected = [
        HumanMessage("I moved to Porto"),
        AIMessage("Noted."),
        HumanMessage("and my sister lives in Braga"),
        AIMessage("Porto and Braga, then."),
        HumanMessage("hello again"),
    ]
    assert history_of(fake, "porto").messages == expected


def test_a_session_id_the_service_gave_raises_session_ended_once_it_ended(fake) -> None:
    session = fake.create_session("theirs")
    history = history_of(fake, session.session_id)
    history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    fake.end(session.session_id)
    with pytest.raises(SessionEnded):
        history.add_messages([HumanMessage("still there?")])
    assert history.session_id == session.session_id


def test_a_history_needs_a_client_or_a_base_url() -> None:
    with pytest.raises(ValueError, match="base_url"):
        ChatMemoryMessageHistory("s1")


def test_a_history_built_from_a_base_url_uses_its_user() -> None:
    history = ChatMemoryMessageHistory("s1", base_url="http://127.0.0.1:8000", user_id="bob")
    assert history.client.base_url == "http://127.0.0.1:8000"
    assert history.client.user_id == "bob"
