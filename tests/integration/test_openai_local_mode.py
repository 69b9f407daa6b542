"""The OpenAI-compatible routes against local mode, driven by the clients people point at them:
the official `openai` SDK (sync, async, streaming) and LangChain's ChatOpenAI. A conversation
whose whole history the client sends back is stored once, as the session POST .../messages
makes; X-Session-Id names a session; a fact told in one conversation is recalled in a new one;
what the stack cannot honour is refused in OpenAI's shape, which the SDK raises as its own
errors."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from tests.integration.helpers import World

pytestmark = pytest.mark.integration

# Fields of a stored turn that differ between two sessions of the same conversation.
_OWN = {"created_at", "client_message_id", "sentiment"}


def _client(world: World, user: str, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{world.url}/v1",
        api_key="local-mode-needs-none",
        default_headers={"X-User-Id": user, **headers},
        max_retries=0,
    )


def _turns(world: World, session_id: str, user: str) -> list[dict[str, Any]]:
    return world.api.ok("GET", f"/sessions/{session_id}/messages", user=user)["messages"]


def _comparable(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in t.items() if k not in _OWN} for t in turns]


def test_a_resent_history_is_stored_once_as_the_messages_route_stores_it(world: World) -> None:
    client = _client(world, "olga")
    said = ["I am planning a trip to Porto.", "What should I pack?"]
    first = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": said[0]}]
    )
    answer = first.choices[0].message.content
    assert first.object == "chat.completion" and answer and "Porto" in answer
    assert first.usage is not None and first.usage.total_tokens > 0
    history: list[Any] = [
        {"role": "user", "content": said[0]},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": said[1]},
    ]
    second = client.chat.completions.create(model="gpt-4o-mini", messages=history)
    # The client's earlier turn is in the prompt (the offline responder says what it saw).
    assert "1 earlier message(s)" in (second.choices[0].message.content or "")
    session = first.model_extra["chatmemory"]["session_id"]
    assert second.model_extra["chatmemory"]["session_id"] == session

    # A retry of the same request (the SDKs retry on timeouts) is its stored answer.
    again = client.chat.completions.create(model="gpt-4o-mini", messages=history)
    assert again.choices[0].message.content == second.choices[0].message.content

    stored = _turns(world, session, "olga")
    assert [(t["input"], t["turn"]) for t in stored] == [(said[0], 1), (said[1], 2)]

    # The same conversation through POST /sessions/{id}/messages: the same turns.
    native = world.api.new_session("native", user="olga")
    for line in said:
        world.api.say(native, line, user="olga")
    assert _comparable(stored) == _comparable(_turns(world, native, "olga"))


def test_another_conversation_that_opens_alike_gets_a_session_of_its_own(world: World) -> None:
    client = _client(world, "pia")
    opening = {"role": "user", "content": "Hello there."}
    one = client.chat.completions.create(model="m", messages=[opening])
    reply = one.choices[0].message.content or ""
    two = client.chat.completions.create(
        model="m",
        messages=[
            opening,
            {"role": "assistant", "content": reply},
            {"role": "user", "content": "A"},
        ],
    )
    other = client.chat.completions.create(model="m", messages=[opening])
    first_id = one.model_extra["chatmemory"]["session_id"]
    assert two.model_extra["chatmemory"]["session_id"] == first_id
    other_id = other.model_extra["chatmemory"]["session_id"]
    assert other_id != first_id
    assert [t["input"] for t in _turns(world, other_id, "pia")] == ["Hello there."]
    assert [t["input"] for t in _turns(world, first_id, "pia")] == ["Hello there.", "A"]


def test_a_history_never_seen_is_stored_before_its_message(world: World) -> None:
    client = _client(world, "quinn")
    messages: list[Any] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "My sister is called Ines."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Who is my sister?"},
    ]
    answer = client.chat.completions.create(model="m", messages=messages)
    session = answer.model_extra["chatmemory"]["session_id"]
    stored = _turns(world, session, "quinn")
    assert [(t["input"], t["response"]) for t in stored[:1]] == [
        ("My sister is called Ines.", "Noted.")
    ]
    assert stored[1]["input"] == "Who is my sister?" and len(stored) == 2


def test_x_session_id_names_the_session_for_a_client_that_sends_one_message(
    world: World,
) -> None:
    client = _client(world, "rui", **{"X-Session-Id": "support-42"})
    for line in ("ok", "ok"):  # the same words twice: two messages
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": line}])
    stored = _turns(world, "support-42", "rui")
    assert [t["input"] for t in stored] == ["ok", "ok"]
    # Another caller's same id is theirs alone.
    other = _client(world, "sam", **{"X-Session-Id": "support-42"})
    other.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert [t["input"] for t in _turns(world, "support-42", "sam")] == ["hi"]


def test_streamed_chunks_end_with_done_and_are_the_stored_answer(world: World) -> None:
    client = _client(world, "tara")
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Tell me about streaming."}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    session = chunks[-2].model_extra["chatmemory"]["session_id"]
    assert [t["response"] for t in _turns(world, session, "tara")] == [text]


def test_the_async_client_and_its_stream(world: World) -> None:
    async def converse() -> tuple[str, str]:
        client = openai.AsyncOpenAI(
            base_url=f"{world.url}/v1",
            api_key="x",
            default_headers={"X-User-Id": "uma"},
            max_retries=0,
        )
        first = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "We bake bread on Sundays."}]
        )
        said = first.choices[0].message.content or ""
        streamed = await client.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "We bake bread on Sundays."},
                {"role": "assistant", "content": said},
                {"role": "user", "content": "When do we bake?"},
            ],
            stream=True,
        )
        text = "".join([c.choices[0].delta.content or "" async for c in streamed if c.choices])
        await client.close()
        return first.model_extra["chatmemory"]["session_id"], text

    session, text = asyncio.run(converse())
    assert "1 earlier message(s)" in text
    assert [t["input"] for t in _turns(world, session, "uma")] == [
        "We bake bread on Sundays.",
        "When do we bake?",
    ]


def test_langchain_chat_openai_keeps_one_session(world: World) -> None:
    model = ChatOpenAI(
        model="chatmemory",
        base_url=f"{world.url}/v1",
        api_key="x",  # type: ignore[arg-type]
        default_headers={"X-User-Id": "vera"},
        max_retries=0,
    )
    history: list[Any] = [SystemMessage("You are kind."), HumanMessage("I grow tomatoes.")]
    first = model.invoke(history)
    assert isinstance(first, AIMessage) and "tomatoes" in str(first.content)
    history += [first, HumanMessage("What do I grow?")]
    streamed = "".join(str(chunk.content) for chunk in model.stream(history))
    assert "1 earlier message(s)" in streamed
    [session] = world.api.ok("GET", "/sessions", user="vera")["sessions"]
    assert [t["input"] for t in _turns(world, session["session_id"], "vera")] == [
        "I grow tomatoes.",
        "What do I grow?",
    ]


def test_a_fact_told_in_one_conversation_is_recalled_in_a_new_one(world: World) -> None:
    client = _client(world, "wes")
    told = client.chat.completions.create(
        model="m",
        messages=[
            {
                "role": "user",
                "content": "We are adopting a rescue greyhound named Biscuit next month.",
            }
        ],
    )
    # The conversation ends (the idle sweeper would) and is consolidated.
    world.api.end(told.model_extra["chatmemory"]["session_id"], user="wes")
    world.poller.drain()
    asked = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "what is the name of the dog we are adopting?"}],
    )
    assert "Biscuit" in (asked.choices[0].message.content or "")
    assert asked.model_extra["chatmemory"]["sources"]


def test_what_cannot_be_honoured_is_refused_in_openai_shape(world: World) -> None:
    client = _client(world, "xan")
    hello = [{"role": "user", "content": "hi"}]
    refused = {
        "n": {"n": 2},
        "tools": {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
        "temperature": {"temperature": 0.2},  # the offline responder takes none
        "max_tokens": {"max_tokens": 5},
    }
    for param, extra in refused.items():
        with pytest.raises(openai.BadRequestError) as raised:
            client.chat.completions.create(model="m", messages=hello, **extra)  # type: ignore[arg-type]
        assert raised.value.param == param and raised.value.code == "unsupported_parameter"
        assert raised.value.type == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="m", messages=[{"role": "tool", "content": "x"}])  # type: ignore[list-item]
    assert raised.value.param == "messages[0].role"
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="m", messages=[])
    assert raised.value.param == "messages"
    # stop is honoured: the answer ends before it.
    cut = client.chat.completions.create(model="m", messages=hello, stop=["said"])
    assert "said" not in (cut.choices[0].message.content or "x said")
    # Nothing refused was stored.
    assert [
        t["input"] for t in _turns(world, cut.model_extra["chatmemory"]["session_id"], "xan")
    ] == ["hi"]


def test_models_list_what_the_stack_serves(world: World) -> None:
    client = _client(world, "yan")
    assert [m.id for m in client.models.list()] == ["chatmemory"]
    assert client.models.retrieve("chatmemory").id == "chatmemory"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")
