"""A LangChain chat message history kept in a chat memory session (`pip install
'chatmemory-client[langchain]'`): your own model answers, the service remembers.

How messages map to the API's turns (POST /sessions/{id}/turns, no server model is called):

- A HumanMessage is stored as a turn with only its input: the turn is `pending`.
- The AIMessage after it completes that turn (PATCH). Both in one `add_messages` call (what
  RunnableWithMessageHistory does) are stored as one turn with one request.
- Two human messages in a row are two turns, the first one left without a response.
- An AIMessage with no open turn before it (a greeting that opens the conversation, two AI
  messages in a row, or a last turn that is answered already or is the server model's) is
  stored as a turn of its own. The API needs a non-blank input, so that turn's input is "…"
  and its metadata says `lc.no_human: true`; reading the history back yields the AIMessage
  alone. Likewise a blank message text is stored as "…" with the real text in the metadata
  (`lc.human_text`, `lc.ai_text`), and a message's `id`, when it has one, as `lc.human_id` /
  `lc.ai_id`. Other metadata keys of a turn are left alone.
- Only the text of a message round-trips (`message.text`: content blocks other than text,
  tool calls, names and additional kwargs are not kept). Human and AI messages only: any
  other type (system, tool) raises TypeError, before any message of the batch is stored,
  since a turn has one user and one assistant side. A human message over the server's input
  limit (4,000 characters by default) raises PayloadTooLarge.

`messages` reads every turn back, in order, a page of 100 turns per request.

The session: `ChatMemoryMessageHistory(session_id, ...)` uses an existing session (the API
chooses session ids, so a history cannot create a session with an id of yours: an unknown
id raises NotFound at the first read or write, and nothing is created). With `session_id=None`
a new session is created at once (`history.session_id` tells its id). When the session has
ended (`end_session`, or the server's idle sweeper after 30 minutes without a turn), the next
message goes to a new session that continues it (POST /sessions with continue_from: while
the ended one exists, the server puts its rolling summary and last turns in the prompt),
`history.session_id` becomes the new one's, and `messages` reads the whole conversation back
along the sessions it continues (one more request per session). A question left unanswered
when its session ended stays so; its answer opens the new session as a turn of its own.

`clear()` deletes the session (its turns and what long-term memory drew from it) and starts
a new, empty one with the same name: `history.session_id` changes, since a deleted session's
id is never reused. To keep a conversation in long-term memory instead, end it
(`history.client.end_session(history.session_id)`) and start a new history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from chatmemory_client.client import ChatMemoryClient
from chatmemory_client.errors import NotFound, SessionEnded
from chatmemory_client.models import MetadataValue, Turn

# Stands for a message side the API cannot store as it is (absent or blank).
PLACEHOLDER = "…"
NO_HUMAN = "lc.no_human"
HUMAN_TEXT = "lc.human_text"
AI_TEXT = "lc.ai_text"
HUMAN_ID = "lc.human_id"
AI_ID = "lc.ai_id"
_MAX_METADATA_VALUE_CHARS = 512
_PAGE_SIZE = 100
# How far back `messages` follows a conversation's sessions.
_MAX_CONTINUATIONS = 20


class ChatMemoryMessageHistory(BaseChatMessageHistory):
    """The messages of one chat memory session, as a LangChain chat message history."""

    def __init__(
        self,
        session_id: str | None,
        *,
        base_url: str | None = None,
        user_id: str | None = None,
        token: str | None = None,
        client: ChatMemoryClient | None = None,
    ) -> None:
        super().__init__()
        if client is None:
            if base_url is None:
                raise ValueError("pass base_url (with user_id or token) or a ChatMemoryClient")
            client = ChatMemoryClient(base_url, user_id=user_id, token=token)
        self.client = client
        self.session_id = session_id or client.create_session().session_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every message of the conversation, oldest first: of the session and of the sessions
        it continues (see continue_session), read back along `continued_from`."""
        sessions = [self.session_id]
        earlier = self.client.get_session(self.session_id).continued_from
        while earlier and earlier not in sessions and len(sessions) < _MAX_CONTINUATIONS:
            sessions.append(earlier)
            try:
                earlier = self.client.get_session(earlier).continued_from
            except NotFound:  # deleted since: its messages are gone
                sessions.pop()
                break
        found: list[BaseMessage] = []
        for session_id in reversed(sessions):
            for turn in self.client.list_turns(session_id, page_size=_PAGE_SIZE):
                found.extend(_messages_of(turn))
        return found

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Stores the messages in order: a human message and the AI message after it as one
        turn (one request), anything else as the module docstring says."""
        for message in messages:  # all checked before anything is stored
            if not isinstance(message, HumanMessage | AIMessage):
                raise TypeError(
                    f"a chat memory session stores human and AI messages, not {message.type!r}"
                )
        human: BaseMessage | None = None
        stored_any = False
        for message in messages:
            if isinstance(message, HumanMessage):
                if human is not None:
                    self._store(human, None)
                    stored_any = True
                human = message
            else:
                if human is None and not stored_any:
                    open_turn = self._open_turn()
                    if open_turn is not None:
                        self._complete(open_turn, message)
                        stored_any = True
                        continue
                self._store(human, message)
                human, stored_any = None, True
        if human is not None:
            self._store(human, None)

    def clear(self) -> None:
        """Deletes the session and starts an empty one of the same name (a new session_id)."""
        name = self.client.get_session(self.session_id).name
        self.client.delete_session(self.session_id)
        self.session_id = self.client.create_session(name or None).session_id

    def _continue(self) -> None:
        """The session ended (the server's idle sweeper, or end_session): the conversation goes
        on in a new session that continues it, as the API offers (POST /sessions with
        continue_from); `session_id` becomes the new one's."""
        self.session_id = self.client.continue_session(self.session_id).session_id

    def _store(self, human: BaseMessage | None, ai: BaseMessage | None) -> Turn:
        try:
            return self._store_in_session(human, ai)
        except SessionEnded:
            self._continue()
            return self._store_in_session(human, ai)

    def _store_in_session(self, human: BaseMessage | None, ai: BaseMessage | None) -> Turn:
        metadata: dict[str, MetadataValue] = {}
        if human is None:
            metadata[NO_HUMAN] = True
            text = PLACEHOLDER
        else:
            text = _side(human, HUMAN_TEXT, HUMAN_ID, metadata)
        response = None if ai is None else _side(ai, AI_TEXT, AI_ID, metadata)
        return self.client.store_turn(self.session_id, text, response=response, metadata=metadata)

    def _complete(self, turn: Turn, ai: BaseMessage) -> Turn:
        metadata: dict[str, MetadataValue] = dict(turn.metadata)
        response = _side(ai, AI_TEXT, AI_ID, metadata)
        changed = metadata != dict(turn.metadata)
        try:
            return self.client.complete_turn(
                self.session_id, turn.turn, response, metadata=metadata if changed else None
            )
        except SessionEnded:
            # The question stays unanswered in the ended session; the answer opens the next.
            return self._store(None, ai)

    def _open_turn(self) -> Turn | None:
        """The session's last turn if it waits for a response this history may give."""
        for last in self.client.list_turns(self.session_id, order="desc", page_size=1):
            waiting = last.pending and last.response is None and last.origin == "client"
            return last if waiting else None
        return None


def _side(
    message: BaseMessage, text_key: str, id_key: str, metadata: dict[str, MetadataValue]
) -> str:
    """The text to store for one side of a turn, noting in metadata what the API cannot hold
    as it is (a blank text) and the message's id."""
    text = str(message.text)
    if message.id and len(message.id) <= _MAX_METADATA_VALUE_CHARS:
        metadata[id_key] = message.id
    if text.strip():
        return text
    metadata[text_key] = text[:_MAX_METADATA_VALUE_CHARS]
    return PLACEHOLDER


def _messages_of(turn: Turn) -> list[BaseMessage]:
    """The LangChain messages one stored turn stands for."""
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
