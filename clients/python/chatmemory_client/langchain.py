"""A LangChain chat message history kept in a chat memory conversation (`pip install
'chatmemory-client[langchain]'`): your own model answers, the service remembers, and nothing
of a message is lost.

The history's id is yours (`ChatMemoryMessageHistory("user42-conv", ...)`, a
RunnableWithMessageHistory session id, a thread id): it names a conversation of the caller's
own (PUT /sessions/{id}, created at the first write). It keeps naming it for as long as it
exists: when the session ends (`end_session`, or the server's idle sweeper after 30 minutes
without a turn), the next write continues the conversation on the server in a new session that
takes the id over, and `messages` reads the whole conversation back along the sessions it
continues. An id the service gave (`create_session`) works too, but an ended session of such
an id takes no more messages (`SessionEnded`, as the API answers): use ids of your own.

How messages map to the API's turns (POST /sessions/{id}/turns, no server model is called):

- Every message is kept whole: each turn stores the LangChain messages it stands for
  (`message_to_dict`: type, content with every part, tool calls, name, id, additional_kwargs,
  response_metadata...) in the turn's `messages`, and `messages` gives them back equal to the
  ones added. Any message type is taken (system, human, AI, tool, function, chat).
- What the memory pipeline reads (rolling summary, consolidation, recall): the turn's input is
  the text of its human message (`message.text`: the text parts of a list content), its
  response the text of its AI messages. A turn without a human message (an AI greeting, tool
  results, a system message on its own) has the input "…"; a turn whose AI messages have no
  text yet (only tool calls) has no response yet: it is `pending`, and the messages that follow
  (tool results, the final answer) are added to it (PATCH) until an AI message with text, or
  an AI message without tool calls, answers it.
- A batch of `add_messages` starts a new turn at each human message; system messages open the
  turn of the human message after them; other messages at the start of a batch go to the last
  turn if it is pending, else open a turn of their own.
- Nothing is dropped silently: what the API refuses raises (a human message over the server's
  limit, 32,000 characters by default: `PayloadTooLarge`; messages of one turn over 128 KB as
  JSON: `BadRequest`), and nothing of that call is stored after the refused turn.
  `RunnableWithMessageHistory` only logs errors of its history by default: see the client's
  README for the one line that makes the chain raise them.

Turns stored by earlier versions of this module (text and ids in `lc.*` metadata) are read
back as before.

`clear()` deletes the conversation (every session it had, their turns and what long-term
memory drew from them) and starts an empty one under the same id: `session_id` never changes.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    message_to_dict,
    messages_from_dict,
)

from chatmemory_client.client import ChatMemoryClient
from chatmemory_client.errors import NotFound, SessionEnded
from chatmemory_client.models import Turn

# Stands for a side of a turn with no text (the API needs a non-blank input).
PLACEHOLDER = "…"
# Metadata of turns stored by earlier versions (read back only).
NO_HUMAN = "lc.no_human"
HUMAN_TEXT = "lc.human_text"
AI_TEXT = "lc.ai_text"
HUMAN_ID = "lc.human_id"
AI_ID = "lc.ai_id"
_PAGE_SIZE = 100
# How far back `messages` follows a conversation's sessions (one continuation per idle half
# hour: years of a conversation).
_MAX_CONTINUATIONS = 1000


class ChatMemoryMessageHistory(BaseChatMessageHistory):
    """The messages of one chat memory conversation, as a LangChain chat message history."""

    def __init__(
        self,
        session_id: str | None,
        *,
        base_url: str | None = None,
        user_id: str | None = None,
        token: str | None = None,
        client: ChatMemoryClient | None = None,
        name: str | None = None,
    ) -> None:
        """`session_id`: your id of the conversation (created at the first write, named
        `name`), or None for a new conversation under a fresh id (created at once)."""
        super().__init__()
        if client is None:
            if base_url is None:
                raise ValueError("pass base_url (with user_id or token) or a ChatMemoryClient")
            client = ChatMemoryClient(base_url, user_id=user_id, token=token)
        self.client = client
        self.name = name
        if session_id is None:
            session_id = str(uuid.uuid4())
            client.ensure_session(session_id, name)
        self.session_id = session_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every message of the conversation, oldest first: of its session and of the sessions
        it continues, read back along `continued_from` (one more request per session). An id
        that names no conversation yet has none."""
        try:
            current = self.client.get_session(self.session_id)
        except NotFound:
            return []
        sessions = [current.session_id]
        earlier = current.continued_from
        while earlier and earlier not in sessions and len(sessions) < _MAX_CONTINUATIONS:
            try:
                session = self.client.get_session(earlier)
            except NotFound:  # deleted since: its messages are gone
                break
            sessions.append(session.session_id)
            earlier = session.continued_from
        found: list[BaseMessage] = []
        for session_id in reversed(sessions):
            for turn in self.client.list_turns(session_id, page_size=_PAGE_SIZE):
                found.extend(messages_of(turn))
        return found

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Stores the messages in order, a turn per human message (one request each), as the
        module docstring says. Raises what the API refuses."""
        groups = _groups(messages)
        if not groups:
            return
        first = groups[0]
        if not isinstance(first[0], HumanMessage | SystemMessage):
            open_turn = self._open_turn()
            if open_turn is not None:
                try:
                    self._extend(open_turn, first)
                    groups = groups[1:]
                except SessionEnded:
                    pass  # its session ended meanwhile: they open a turn in the continuation
        for group in groups:
            self._store(group)

    def clear(self) -> None:
        """Deletes the conversation and starts an empty one under the same id (named `name`:
        the old name may be drawn from a deleted message, so it is not carried over)."""
        with contextlib.suppress(NotFound):  # nothing to delete: the id named none yet
            self.client.delete_session(self.session_id)
        self.client.ensure_session(self.session_id, self.name)

    def _store(self, group: Sequence[BaseMessage]) -> Turn:
        human = next((m for m in group if isinstance(m, HumanMessage)), None)
        text = str(human.text) if human is not None else ""
        kept = [message_to_dict(m) for m in group]
        try:
            return self._store_turn(text, group, kept)
        except NotFound:
            # An id of yours that names no conversation yet (or one deleted): it is created.
            self.client.ensure_session(self.session_id, self.name)
            return self._store_turn(text, group, kept)

    def _store_turn(
        self, text: str, group: Sequence[BaseMessage], kept: list[dict[str, Any]]
    ) -> Turn:
        return self.client.store_turn(
            self.session_id,
            text if text.strip() else PLACEHOLDER,
            response=_response(group),
            messages=kept,
        )

    def _extend(self, turn: Turn, more: Sequence[BaseMessage]) -> Turn:
        """Adds messages to a pending turn (PATCH: its messages, and its response once an AI
        message answers it)."""
        group = [*messages_of(turn), *more]
        response = _response(group)
        return self.client.complete_turn(
            self.session_id,
            turn.turn,
            response if turn.response is None else None,
            messages=[message_to_dict(m) for m in group],
        )

    def _open_turn(self) -> Turn | None:
        """The conversation's last turn if it waits for a response this history may give."""
        try:
            for last in self.client.list_turns(self.session_id, order="desc", page_size=1):
                waiting = last.pending and last.response is None and last.origin == "client"
                return last if waiting else None
        except NotFound:
            return None
        return None


def _groups(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """The batch cut into turns: a new one at each human message and at each system message
    (system messages open the turn of the human message after them)."""
    groups: list[list[BaseMessage]] = []
    for message in messages:
        opens = isinstance(message, HumanMessage | SystemMessage)
        if not groups or (opens and not all(isinstance(m, SystemMessage) for m in groups[-1])):
            groups.append([message])
        else:
            groups[-1].append(message)
    return groups


def _response(group: Sequence[BaseMessage]) -> str | None:
    """The text of a turn's AI messages; None while it waits for an answer (no AI message, or
    only tool calls so far), "…" for an answer without text."""
    answers = [m for m in group if isinstance(m, AIMessage)]
    texts = [str(m.text) for m in answers if str(m.text).strip()]
    if texts:
        return "\n\n".join(texts)
    if answers and isinstance(group[-1], AIMessage) and not group[-1].tool_calls:
        return PLACEHOLDER
    return None


def messages_of(turn: Turn) -> list[BaseMessage]:
    """The LangChain messages one stored turn stands for: the ones kept with it, else (a turn
    of an earlier version, or stored another way) its input and response."""
    if turn.messages is not None:
        return list(messages_from_dict([dict(m) for m in turn.messages]))
    meta: Mapping[str, Any] = turn.metadata
    found: list[BaseMessage] = []
    if meta.get(NO_HUMAN) is not True:
        text = meta.get(HUMAN_TEXT, turn.input)
        found.append(HumanMessage(content=str(text), id=_opt_str(meta.get(HUMAN_ID))))
    if turn.response is not None:
        text = meta.get(AI_TEXT, turn.response)
        found.append(AIMessage(content=str(text), id=_opt_str(meta.get(AI_ID))))
    return found


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
