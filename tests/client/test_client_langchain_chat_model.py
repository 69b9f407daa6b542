"""ChatMemoryChatModel, the service's own model as a LangChain chat model, against a real local
mode whose text model is a stand-in OpenAI-compatible server held between pieces: `stream` and
`astream` give the first tokens while the model is still held, LangGraph's messages stream mode
and LangChain's callbacks see them as they come, and a stream left early stops the answer."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import pytest
from chatmemory_client import ChatMemoryClient, NotFound
from chatmemory_client.chat_model import ChatMemoryChatModel
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessageChunk, HumanMessage, SystemMessage

from tests.openai_stream import answer, endless, stand_in_model

pytestmark = pytest.mark.integration


def model_of(world, session_id: str = "garden-thread") -> ChatMemoryChatModel:  # type: ignore[no-untyped-def]
    return ChatMemoryChatModel(
        client=ChatMemoryClient(world.url, user_id="fern"), session_id=session_id
    )


def test_stream_gives_the_first_tokens_before_the_model_has_finished(world, monkeypatch) -> None:
    held = threading.Event()
    with stand_in_model(monkeypatch) as stand_in:
        stand_in.streams.append(answer(["Tomatoes ", "need ", held, "full ", "sun."]))
        model = model_of(world)
        chunks = model.stream([SystemMessage("ignored"), HumanMessage("How do tomatoes grow?")])
        first = next(chunks)
        assert first.text == "Tomatoes" and not held.is_set()
        held.set()
        rest = list(chunks)
    whole = first
    for chunk in rest:
        whole += chunk
    assert isinstance(whole, AIMessageChunk)
    assert whole.text == "Tomatoes need full sun."
    assert whole.response_metadata["turn"] == 1 and whole.response_metadata["stopped"] is False
    # The conversation is the service's: created under the model's id, the answer stored.
    turn = model.client.get_turn("garden-thread", 1)
    assert (turn.input, turn.response) == ("How do tomatoes grow?", "Tomatoes need full sun.")


def test_invoke_and_astream_answer_in_the_same_conversation(world, monkeypatch) -> None:
    with stand_in_model(monkeypatch) as stand_in:
        model = model_of(world)
        # The buffered route: the model's whole-answer call ("Noted." from the stand-in).
        assert model.invoke("How often do I water them?").text == "Noted."

        async def tokens() -> list[str]:
            return [chunk.text async for chunk in model.astream("And basil?")]

        stand_in.streams.append(answer(["Basil ", "too."]))
        assert asyncio.run(tokens()) == ["Basil", " too.", ""]
    turns = list(model.client.list_turns("garden-thread"))
    assert [(t.turn, t.response) for t in turns] == [(1, "Noted."), (2, "Basil too.")]


class Tokens(BaseCallbackHandler):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_llm_new_token(self, token: str, **kwargs: object) -> None:
        self.seen.append(token)


def test_a_langgraph_node_streams_its_tokens_in_messages_mode(world, monkeypatch) -> None:
    from langgraph.graph import START, MessagesState, StateGraph

    with stand_in_model(monkeypatch) as stand_in:
        model = model_of(world)
        stand_in.streams.append(answer(["Mulch ", "keeps ", "moisture."]))

        def chat(state: MessagesState) -> dict[str, object]:
            return {"messages": [model.invoke(state["messages"])]}

        graph = StateGraph(MessagesState).add_node(chat).add_edge(START, "chat").compile()
        handler = Tokens()
        streamed = [
            message.text
            for message, _ in graph.stream(
                {"messages": [HumanMessage("Why mulch?")]},
                stream_mode="messages",
                config={"callbacks": [handler]},
            )
        ]
    assert streamed[:3] == ["Mulch", " keeps", " moisture."]
    # The last token is the stored turn's chunk (its metadata, no text).
    assert handler.seen == ["Mulch", " keeps", " moisture.", ""]


def test_leaving_the_stream_early_stops_the_answer(world, monkeypatch) -> None:
    with stand_in_model(monkeypatch) as stand_in:
        stand_in.streams.append(endless(["Slugs ", "love ", "lettuce "]))
        model = model_of(world)
        seen = []
        for chunk in model.stream("What eats my lettuce?"):
            seen.append(chunk.text)
            if len(seen) == 3:
                break
        turn = _answered(model.client, "garden-thread", 1)
    assert turn.stopped and turn.response and turn.response.startswith("Slugs love lettuce")


def _answered(client: ChatMemoryClient, session_id: str, number: int):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(NotFound):
            turn = client.get_turn(session_id, number)
            if not turn.pending:
                return turn
        assert time.monotonic() < deadline, "the turn was not stored"
        time.sleep(0.05)
