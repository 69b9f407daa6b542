"""The chat memory service's own model as a LangChain chat model (`pip install
'chatmemory-client[langchain]'`): the server's model answers with the user's memory (the
conversation's window and rolling summary, recall of past sessions, the profile), and the
service keeps the conversation. `stream` / `astream` give the answer's text as the model writes
it (POST /sessions/{id}/messages/stream), so do LangGraph's `stream_mode="messages"` and
`astream_events` for a graph or chain that calls it.

    model = ChatMemoryChatModel(client=ChatMemoryClient(url, user_id="alice"),
                                session_id="user42-conv")
    for chunk in model.stream("What did I plant last spring?"):
        print(chunk.text, end="", flush=True)

Each call sends the text of the last human message of its input to the conversation
`session_id` names (your id: created at the first message, continued after it ends, as
`ensure_session` says). The other messages of the input are not sent: the service has the
conversation already, and its own prompt (system messages of the input are not used either).
`stop` is not supported by the service: a call with stop sequences is refused.

The answer's `response_metadata` has the stored turn's number, whether it was `stopped`, and the
`sources` memory gave it. Leaving a stream early (`break`, closing it, a cancelled task) stops
the answer: the service stores what it had sent, marked stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict
from typing import Any, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict

from chatmemory_client.client import ChatMemoryClient
from chatmemory_client.errors import NotFound
from chatmemory_client.models import Turn
from chatmemory_client.streaming import DeltaEvent, ErrorEvent, MessageStream, TurnEvent

_T = TypeVar("_T")


class ChatMemoryChatModel(BaseChatModel):
    """A LangChain chat model answered by the chat memory service in one conversation."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: ChatMemoryClient
    # Your id of the conversation (a thread id, "user42-conv").
    session_id: str
    # How many recent turns the service's prompt holds (None: the service's default).
    window_turns: int | None = None

    @property
    def _llm_type(self) -> str:
        return "chatmemory"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"base_url": self.client.base_url, "session_id": self.session_id}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = _question(messages, stop)
        turn = self._in_session(
            lambda: self.client.send_message(self.session_id, text, window_turns=self.window_turns)
        )
        message = AIMessage(content=turn.reply or "", response_metadata=_metadata(turn))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        with self._open(_question(messages, stop)) as stream:
            for event in stream:
                chunk = _chunk(event)
                if chunk is not None:
                    yield chunk  # (LangChain passes each on to the callbacks' on_llm_new_token)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        # The client is synchronous: each read waits in a worker thread, not in the loop.
        text = _question(messages, stop)
        stream = await asyncio.to_thread(self._open, text)
        try:
            while True:
                event = await asyncio.to_thread(next, stream, None)
                if event is None:
                    return
                chunk = _chunk(event)
                if chunk is not None:
                    yield chunk
        finally:
            stream.close()  # left early (or cancelled): the answer stops

    def _open(self, text: str) -> MessageStream:
        return self._in_session(
            lambda: self.client.stream_message(
                self.session_id, text, window_turns=self.window_turns
            )
        )

    def _in_session(self, call: Callable[[], _T]) -> _T:
        try:
            return call()
        except NotFound:
            # Your id names no conversation yet (or one deleted): it is created.
            self.client.ensure_session(self.session_id)
            return call()


def _question(messages: list[BaseMessage], stop: list[str] | None) -> str:
    if stop:
        raise ValueError("the chat memory service does not take stop sequences")
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return str(message.text)
    raise ValueError("no human message to send: the service answers the user's message")


def _chunk(event: object) -> ChatGenerationChunk | None:
    if isinstance(event, DeltaEvent):
        return ChatGenerationChunk(message=AIMessageChunk(content=event.text))
    if isinstance(event, TurnEvent):
        # The last chunk: the stored turn's metadata (its text came in the deltas).
        last = AIMessageChunk(
            content="", response_metadata=_metadata(event.turn), chunk_position="last"
        )
        return ChatGenerationChunk(message=last)
    if isinstance(event, ErrorEvent):
        raise event.error
    return None  # memory: in the last chunk's sources


def _metadata(turn: Turn) -> dict[str, Any]:
    answered = turn.answer or turn
    return {
        "model_name": "chatmemory",
        "turn": turn.turn,
        "answered_by": turn.answered_by,
        "stopped": answered.stopped,
        "sources": [asdict(source) for source in answered.sources],
    }
