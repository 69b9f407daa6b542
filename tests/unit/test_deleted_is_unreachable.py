"""Deleted means unreachable on every read path: one session holds a secret, the caller deletes
that session (or everything), and no route, prompt, continuation, search or agent view may
show or quote it any more (services/access.py decides, once for every read of turns).

The chat Lambda on moto with the embedded index and a model that repeats every secret its
prompt holds, so a secret that reached a prompt is a secret in an answer.

Failed first (the continuation): a session continuing the deleted one still read its last turns
and its rolling summary into every prompt, and stored the answer quoting them, for good."""

from __future__ import annotations

import re
from typing import Any

import pytest

from chatmemory.errors import SessionNotFound
from chatmemory.services.conversation import handoff
from chatmemory.services.pages import TurnPage
from tests.records_helpers import World, chat_world, consolidate

SECRET = "vault pin 88231"
SUMMARY_SECRET = "locker code 4417"
SECRETS = re.compile(r"vault pin \d+|locker code \d+")


def _parrot(prompt: str) -> str:
    return "heard: " + "; ".join(SECRETS.findall(prompt)) if SECRETS.search(prompt) else "ok"


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    made = chat_world(dynamodb, monkeypatch, lambda_context)
    made.model.reply = _parrot
    return made


def _call(world: World, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
    return world.api.call(method, path, body, **kw)


def _secret_session(world: World) -> str:
    """A consolidated session of alice in which she said the secret, with a rolling summary
    that holds the other one, and one fact record drawn from it."""
    sid = world.api.new_session()
    world.api.say(sid, f"remember my {SECRET} please")
    world.memory.update_running_summary(sid, f"Alice keeps her {SUMMARY_SECRET} here.", 0, 0)
    assert _call(world, "POST", f"/sessions/{sid}/end")[0] == 200
    assert consolidate(world.memory, world.index, sid, now=world.deps.clock()).outcome == (
        "consolidated"
    )
    return sid


def _delete(world: World, sid: str, what: str) -> None:
    path = f"/sessions/{sid}" if what == "the session" else "/memories"
    assert _call(world, "DELETE", path)[0] == 204


def _quotes(data: Any) -> bool:
    text = repr(data)
    return "88231" in text or "4417" in text


@pytest.fixture(params=["the session", "everything"])
def what(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("GET", "", None),
        ("GET", "/messages", None),
        ("GET", "/export", None),
        ("GET", "/turns/1", None),
        ("PATCH", "/turns/1", {"metadata": {"k": "v"}}),
        ("PUT", "/turns/1/feedback", {"rating": "up"}),
        ("POST", "/messages", {"content": "what is my pin?"}),
        ("POST", "/turns", {"input": "what is my pin?"}),
        ("POST", "/end", None),
        ("POST", "/handoff", {}),
    ],
)
def test_the_deleted_sessions_own_routes_answer_404(
    world: World, what: str, method: str, suffix: str, body: Any
) -> None:
    sid = _secret_session(world)
    _delete(world, sid, what)
    status, data = _call(world, method, f"/sessions/{sid}{suffix}", body)
    assert status == 404 and data["error"]["code"] == "session_not_found", data


def test_it_is_listed_no_more_and_cannot_be_continued(world: World, what: str) -> None:
    sid = _secret_session(world)
    _delete(world, sid, what)
    status, data = _call(world, "GET", "/sessions")
    assert status == 200 and sid not in repr(data)
    status, data = _call(world, "POST", "/sessions", {"continue_from": sid})
    assert status == 404, data


def test_an_agent_cannot_read_it(world: World, what: str) -> None:
    sid = world.api.new_session()
    world.api.say(sid, f"my {SECRET}")
    assert _call(world, "POST", f"/sessions/{sid}/handoff", {})[0] == 200
    _delete(world, sid, what)
    with pytest.raises(SessionNotFound):
        handoff.read_session_for_agent(world.memory, sid, TurnPage(10, None, True))
    queue = handoff.list_queue(world.memory, state="WAITING", limit=10, next_token=None)
    assert sid not in [s.session_id for s in queue.items]


def test_past_memories_records_and_auto_recall_do_not_quote_it(world: World, what: str) -> None:
    sid = _secret_session(world)
    status, before = _call(world, "GET", "/memories", query={"q": "vault pin"})
    assert status == 200 and sid in repr(before)  # what the searches found before the delete
    _delete(world, sid, what)
    for query in ({"q": "vault pin"}, {"q": "locker code"}):
        status, data = _call(world, "GET", "/memories", query=query)
        assert status == 200 and not _quotes(data) and sid not in repr(data)
    status, data = _call(world, "GET", "/memories/records")
    assert status == 200 and not _quotes(data)
    status, data = _call(world, "GET", "/memories/records", query={"q": "vault pin"})
    assert status == 200 and not _quotes(data)
    fresh = world.api.new_session()
    for message in ("/past what is my vault pin?", "what is my vault pin and locker code?"):
        turn = world.api.say(fresh, message)
        assert not _quotes(turn), turn
    assert not _quotes(world.model.prompts[-1])


@pytest.mark.parametrize("when", ["short", "past its first window"])
def test_a_continuation_stops_quoting_the_session_it_continues_once_that_is_deleted(
    world: World, when: str
) -> None:
    """The issue's case: s1 said the pin, s2 continues s1, s1 is deleted, s2 is messaged at
    once. Its prompt (the carried turns and summary), its answer and its export must not hold
    what s1 said; what s2 itself said and answered before stays s2's."""
    old = _secret_session(world)
    new = _call(world, "POST", "/sessions", {"continue_from": old})[1]["session"]["session_id"]
    world.api.say(new, "hello again")
    assert SECRET in world.model.prompts[-1] and SUMMARY_SECRET in world.model.prompts[-1]
    if when != "short":
        world.model.reply = lambda prompt: "ok"  # small talk quotes nothing
        for i in range(7):
            world.api.say(new, f"small talk {i}")
        world.model.reply = _parrot
    _delete(world, old, "the session")

    answer = world.api.say(new, "what did I tell you before?")
    prompt = world.model.prompts[-1]
    # Neither the old session's turn nor its summary; the new session's own first answer,
    # which quoted them while they existed, is the new session's (and leaves its window).
    assert "remember my vault pin" not in prompt and "Alice keeps her" not in prompt
    if when != "short":
        assert not _quotes(prompt)
    own = _own_words(world, new)
    assert set(SECRETS.findall(answer["response"])) <= set(SECRETS.findall(own))
    status, exported = _call(world, "GET", f"/sessions/{new}/export")
    assert status == 200 and SUMMARY_SECRET not in exported["session"]["running_summary"]
    assert exported["session"]["continued_from"] == old  # the link stays; it leads nowhere


def _own_words(world: World, sid: str) -> str:
    """What the session's own turns before the last one say (an answer that quoted the other
    session while it existed is this session's)."""
    _, data = _call(world, "GET", f"/sessions/{sid}/messages")
    return " ".join(f"{m['input']} {m['response']}" for m in data["messages"][:-1])


def test_a_continuation_quotes_nothing_of_a_session_deleted_before_its_first_message(
    world: World,
) -> None:
    old = _secret_session(world)
    new = _call(world, "POST", "/sessions", {"continue_from": old})[1]["session"]["session_id"]
    _delete(world, old, "the session")
    answer = world.api.say(new, "what is my pin?")
    assert not _quotes(answer) and not _quotes(world.model.prompts[-1])
    status, exported = _call(world, "GET", f"/sessions/{new}/export")
    assert status == 200 and not _quotes(exported)
