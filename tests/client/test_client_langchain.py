"""ChatMemoryMessageHistory's mapping of LangChain messages to turns, over an in-memory fake of
the client that keeps the API's rules (non-blank input, a response given once, ended sessions
take nothing). tests/client/test_client_langchain_local_mode.py runs the same on local mode."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest
from chatmemory_client import BadRequest, Conflict, NotFound, Session, SessionEnded, Turn
from chatmemory_client.langchain import ChatMemoryMessageHistory
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage


class InMemoryChatMemoryClient:
    """The part of ChatMemoryClient the history uses, with the server's rules, in memory."""

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.turns: dict[str, list[Turn]] = {}
        self.calls: list[str] = []
        self._ids = itertools.count(1)

    def create_session(
        self,
        name: str | None = None,
        *,
        end_previous: bool = False,
        continue_from: str | None = None,
    ) -> Session:
        self.calls.append("create_session")
        session = Session(
            session_id=f"s{next(self._ids)}", name=name or "", continued_from=continue_from
        )
        self.sessions[session.session_id] = session
        self.turns[session.session_id] = []
        return session

    def continue_session(self, session_id: str) -> Session:
        self._session(session_id)
        return self.create_session(self.sessions[session_id].name, continue_from=session_id)

    def get_session(self, session_id: str) -> Session:
        self.calls.append("get_session")
        return self._session(session_id)

    def end(self, session_id: str) -> None:
        self.sessions[session_id] = replace(self._session(session_id), status="ENDED")

    def delete_session(self, session_id: str) -> None:
        self.calls.append("delete_session")
        self._session(session_id)
        del self.sessions[session_id], self.turns[session_id]

    def list_turns(
        self, session_id: str, *, order: str = "asc", page_size: int = 50
    ) -> Iterator[Turn]:
        self.calls.append(f"list_turns {order} {page_size}")
        self._session(session_id)
        turns = self.turns[session_id]
        yield from (turns if order == "asc" else reversed(turns))

    def store_turn(
        self,
        session_id: str,
        input: str,
        *,
        response: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        **_: Any,
    ) -> Turn:  # noqa: A002
        self.calls.append("store_turn")
        if not input.strip():
            raise BadRequest(400, "bad_request", "input must not be empty")
        if self._session(session_id).status != "OPEN":
            raise SessionEnded(409, "session_ended", "ended")
        turns = self.turns[session_id]
        turn = Turn(
            turn=len(turns) + 1,
            input=input,
            response=response or None,
            pending=not response,
            origin="client",
            metadata=dict(metadata or {}),
        )
        turns.append(turn)
        return turn

    def complete_turn(
        self,
        session_id: str,
        turn: int,
        response: str,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> Turn:
        self.calls.append("complete_turn")
        stored = self.turns[session_id][turn - 1]
        if not stored.pending or stored.origin != "client":
            raise Conflict(409, "conflict", "already has a response")
        done = replace(
            stored,
            response=response,
            pending=False,
            metadata=dict(metadata) if metadata is not None else stored.metadata,
        )
        self.turns[session_id][turn - 1] = done
        return done

    def _session(self, session_id: str) -> Session:
        if session_id not in self.sessions:
            raise NotFound(404, "session_not_found", session_id)
        return self.sessions[session_id]


@pytest.fixture
def fake() -> InMemoryChatMemoryClient:
    return InMemoryChatMemoryClient()


def history_of(
    fake: InMemoryChatMemoryClient, session_id: str | None = None
) -> ChatMemoryMessageHistory:
    return ChatMemoryMessageHistory(session_id, client=fake)  # type: ignore[arg-type]


def test_a_human_and_ai_message_added_together_are_one_turn_in_one_request(fake) -> None:
    history = history_of(fake)
    fake.calls.clear()
    history.add_messages([HumanMessage("I like green tea"), AIMessage("Noted: green tea.")])
    assert fake.calls == ["store_turn"]
    (turn,) = fake.turns[history.session_id]
    assert (turn.input, turn.response, turn.pending, turn.metadata) == (
        "I like green tea",
        "Noted: green tea.",
        False,
        {},
    )
    assert history.messages == [HumanMessage("I like green tea"), AIMessage("Noted: green tea.")]


def test_a_human_message_waits_in_a_pending_turn_that_the_next_ai_message_completes(fake) -> None:
    history = history_of(fake)
    history.add_user_message("Where is Porto?")
    (pending,) = fake.turns[history.session_id]
    assert pending.pending and pending.response is None
    fake.calls.clear()
    history_of(fake, history.session_id).add_ai_message("In the north of Portugal.")
    assert fake.calls == ["list_turns desc 1", "complete_turn"]
    assert len(fake.turns[history.session_id]) == 1
    assert history.messages == [
        HumanMessage("Where is Porto?"),
        AIMessage("In the north of Portugal."),
    ]


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
    assert [t.response for t in fake.turns[history.session_id]] == [
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
    opening = fake.turns[history.session_id][0]
    assert (opening.input, opening.metadata) == ("…", {"lc.no_human": True})


def test_an_ai_message_after_a_turn_the_server_model_left_pending_is_a_turn_of_its_own(
    fake,
) -> None:
    history = history_of(fake)
    fake.turns[history.session_id].append(
        Turn(turn=1, input="/past hi", pending=True, origin="chat")
    )
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
    first, second = fake.turns[history.session_id]
    assert (first.input, first.response) == ("…", "…")
    assert first.metadata == {
        "lc.human_text": "  ",
        "lc.human_id": "h1",
        "lc.ai_text": "",
        "lc.ai_id": "a1",
    }
    assert second.metadata == {"lc.human_id": "h2", "lc.ai_text": "", "lc.ai_id": "a2"}


def test_content_blocks_are_stored_as_their_text(fake) -> None:
    history = history_of(fake)
    history.add_messages(
        [HumanMessage([{"type": "text", "text": "see "}, {"type": "text", "text": "this"}])]
    )
    assert fake.turns[history.session_id][0].input == "see this"


@pytest.mark.parametrize(
    "message", [SystemMessage("be brief"), ToolMessage("42", tool_call_id="t1")]
)
def test_other_message_types_are_refused_before_anything_is_stored(fake, message) -> None:
    history = history_of(fake)
    with pytest.raises(TypeError, match="human and AI messages"):
        history.add_messages([HumanMessage("hi"), AIMessage("hello"), message])
    assert fake.turns[history.session_id] == []


def test_clear_deletes_the_session_and_starts_an_empty_one_with_its_name(fake) -> None:
    session = fake.create_session("Tea talk")
    history = history_of(fake, session.session_id)
    history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    history.clear()
    assert history.session_id != session.session_id
    assert session.session_id not in fake.sessions
    assert fake.sessions[history.session_id].name == "Tea talk"
    assert history.messages == []
    history.add_user_message("again")
    assert history.messages == [HumanMessage("again")]


def test_without_a_session_id_a_session_is_created(fake) -> None:
    history = history_of(fake)
    assert fake.calls == ["create_session"]
    assert history.messages == []


def test_an_unknown_session_raises_not_found_and_creates_nothing(fake) -> None:
    history = history_of(fake, "nope")
    with pytest.raises(NotFound):
        history.messages  # noqa: B018
    with pytest.raises(NotFound):
        history.add_messages([AIMessage("hi")])
    assert fake.sessions == {}


def test_a_message_to_an_ended_session_continues_the_conversation_in_a_new_one(fake) -> None:
    history = history_of(fake)
    history.add_messages([HumanMessage("I moved to Porto"), AIMessage("Noted.")])
    history.add_user_message("and my sister lives in Braga")
    ended = history.session_id
    fake.end(ended)
    history.add_ai_message("Porto and Braga, then.")
    history.add_user_message("hello again")
    assert history.session_id != ended
    assert fake.sessions[history.session_id].continued_from == ended
    assert [m.content for m in history.messages] == [
        "I moved to Porto",
        "Noted.",
        "and my sister lives in Braga",
        "Porto and Braga, then.",
        "hello again",
    ]
    assert [m.content for m in history_of(fake, history.session_id).messages] == [
        m.content for m in history.messages
    ]


def test_a_history_needs_a_client_or_a_base_url() -> None:
    with pytest.raises(ValueError, match="base_url"):
        ChatMemoryMessageHistory("s1")


def test_a_history_built_from_a_base_url_uses_its_user() -> None:
    history = ChatMemoryMessageHistory("s1", base_url="http://127.0.0.1:8000", user_id="bob")
    assert history.client.base_url == "http://127.0.0.1:8000"
    assert history.client.user_id == "bob"
