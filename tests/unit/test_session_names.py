"""Sessions are named from what they are about (services/conversation/sessions.title_from), as chat
apps name conversations, once a message has something in it; a name the caller gave is kept."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory.services.conversation.sessions import title_from
from tests.fakes import FakeGenerator
from tests.unit.test_chat_api import Api


@pytest.mark.parametrize(
    ("message", "title"),
    [
        (
            "We are adopting a rescue greyhound named Biscuit next month.",
            "Adopting a rescue greyhound named Biscuit",
        ),
        ("Hi! Can you help me plan a trip to Lisbon in May?", "Plan a trip to Lisbon"),
        ("hello there. I'm moving to Porto for work", "Moving to Porto for work"),
    ],
)
def test_a_title_from_the_first_sentence_with_content(message: str, title: str) -> None:
    assert title_from(message) == title


@pytest.mark.parametrize("message", ["hi", "thanks!", "ok, bye for now", "/past my trip", ""])
def test_small_talk_and_commands_give_no_title(message: str) -> None:
    assert title_from(message) is None


def test_titles_are_short() -> None:
    title = title_from("Tell me everything about " + "very " * 40 + "long subjects")
    assert title is not None and len(title.split()) <= 6 and len(title) <= 60


@pytest.fixture
def chat(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> Api:
    from chatmemory import wiring
    from chatmemory.services.conversation.chat import ChatDeps
    from handlers import chat_api

    deps = ChatDeps(memory=wiring.short_term_memory(), generator=FakeGenerator())
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return Api(chat_api.handler, lambda_context)


def _name(api: Any, sid: str) -> str:
    status, data = api.call("GET", f"/sessions/{sid}")
    assert status == 200
    return str(data["session"]["name"])


def test_a_session_is_named_by_its_first_message_with_content(chat: Api) -> None:
    api = chat
    sid = api.new_session()
    assert _name(api, sid).startswith("Session ")  # generated: "Session <date>"
    api.say(sid, "hi!")  # nothing to go on yet
    assert _name(api, sid).startswith("Session ")
    api.say(sid, "We are adopting a rescue greyhound named Biscuit next month.")
    assert _name(api, sid) == "Adopting a rescue greyhound named Biscuit"
    api.say(sid, "Also I am learning Japanese.")  # named once, not renamed every turn
    assert _name(api, sid) == "Adopting a rescue greyhound named Biscuit"


def test_a_name_the_caller_gave_is_kept(chat: Api) -> None:
    api = chat
    sid = api.new_session(name="Dog plans")
    api.say(sid, "We are adopting a rescue greyhound named Biscuit next month.")
    assert _name(api, sid) == "Dog plans"
