"""A chat completion request (the OpenAI chat API's) as a turn of a stored session.

An OpenAI client sends the whole conversation every time: the system message, the earlier
exchanges and the new user message. Memory is kept as ordinary sessions, so the request is
mapped to one (docs/openai.md says the same to users):

- `X-Session-Id` names the session by the caller's own id (as PUT /sessions/{id} does). The
  session is what it holds: the earlier exchanges a client sends are stored only into a session
  that has none yet (a conversation brought along), never a second time.
- Without it, the conversation is recognised from what the client sends back. Its key is a
  digest of its opening (the system message and the first user message), used as a client id
  of the caller's; the session under it is this conversation when its last stored turn is the
  last exchange the client sent (the same user message at the same place in the conversation,
  and the same answer), or this very request (a retry). Another conversation that opened the
  same way is not it: the next key ("<key>-1", ...) is tried, a bounded number of times. A
  conversation found nowhere gets a new session, with the exchanges the client sent stored
  first (without a model call), so the prompt holds them and every route sees them.

Each message's turn carries a client_message_id that is a digest of the conversation up to it,
so a retried request (the SDKs retry on timeouts and 5xx) is answered from its stored turn by
the turn pipeline's own replay, without calling the model again, and storing an exchange the
session already holds is a no-op.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from functools import partial
from typing import NamedTuple

from chatmemory.domain import Session, Turn
from chatmemory.errors import BadRequest, SessionNotFound
from chatmemory.services.access import owned_session
from chatmemory.services.conversation import sessions, turns
from chatmemory.services.conversation.turn.context import (
    ChatDeps,
    ChatPolicy,
    Message,
    StopSignal,
    TurnEvent,
    store_client_turn,
)
from chatmemory.services.conversation.turn.pipeline import on_current_session, open_turn

# The roles a request's messages may have; "developer" is what newer OpenAI models call the
# system message.
SYSTEM_ROLES = frozenset({"system", "developer"})
ROLES = SYSTEM_ROLES | {"user", "assistant"}
# How many keys of conversations that opened alike are tried before a new one is made.
KEY_ATTEMPTS = 4
_PREFIX = "oa-"


class Exchange(NamedTuple):
    """A user message and the answer to it, as the client sent them back."""

    user: str
    assistant: str


class Conversation(NamedTuple):
    """A request's messages: its system message (None: the deployment's own), the exchanges
    before the new message, and the new message."""

    system: str | None
    exchanges: tuple[Exchange, ...]
    message: str

    @property
    def key(self) -> str:
        """The client id of the conversation: a digest of its opening."""
        first = self.exchanges[0].user if self.exchanges else self.message
        return _digest([self.system, first])

    def message_id(self) -> str:
        """The client_message_id of the new message: a digest of the conversation up to it."""
        return _message_id(self.system, self.exchanges, self.message)

    def exchange_id(self, index: int) -> str:
        """The client_message_id of the exchange at `index`, as its own request had it."""
        return _message_id(self.system, self.exchanges[:index], self.exchanges[index].user)


def conversation_of(messages: Sequence[tuple[str, str]]) -> Conversation:
    """The conversation in a request's (role, text) messages: system messages (wherever they
    are) joined, consecutive messages of one role joined, the last message the user's. An
    assistant message before the first user message is not part of a stored exchange."""
    system = [text for role, text in messages if role in SYSTEM_ROLES]
    spoken: list[tuple[str, str]] = []
    for index, (role, text) in enumerate(messages):
        if role not in ROLES:
            raise BadRequest(f"messages[{index}].role {role!r} is not supported")
        if role in SYSTEM_ROLES:
            continue
        if spoken and spoken[-1][0] == role:
            spoken[-1] = (role, f"{spoken[-1][1]}\n\n{text}")
        else:
            spoken.append((role, text))
    if not spoken or spoken[-1][0] != "user":
        raise BadRequest("the last message must be the user's")
    if spoken[0][0] == "assistant":
        spoken = spoken[1:]
    exchanges = tuple(
        Exchange(spoken[i][1], spoken[i + 1][1]) for i in range(0, len(spoken) - 1, 2)
    )
    return Conversation("\n\n".join(system) or None, exchanges, spoken[-1][1])


def open_completion(
    deps: ChatDeps,
    policy: ChatPolicy,
    *,
    user_id: str,
    conversation: Conversation,
    session_id: str | None,
    stream: bool,
    stop: StopSignal | None,
) -> tuple[str, Iterator[TurnEvent]]:
    """The client id of the conversation's session and its new message's turn as events
    (admitted now: its errors are raised here). `session_id`: the caller's id of it (the
    X-Session-Id header); None: the conversation is recognised."""
    client_id = session_id or _recognised(deps, user_id, conversation)
    session, _ = sessions.ensure_session(deps.memory, user_id, client_id, clock=deps.clock)
    if session.num_turns == 0 and not session.continued_from:
        _bring(deps, policy, user_id, session, conversation)
    # A stateful client (one message at a time) may say the same thing twice: only a message
    # with its history is known by its digest.
    message_id = conversation.message_id() if conversation.exchanges or not session_id else None
    if conversation.system is not None:
        policy = policy._replace(system_prompt=conversation.system)
    message = Message(user_id, client_id, conversation.message, message_id, None, stream, stop)
    events = on_current_session(deps, message, partial(open_turn, deps, policy))
    return client_id, events


def _recognised(deps: ChatDeps, user_id: str, conversation: Conversation) -> str:
    """The client id of the caller's session that holds this conversation, or of a new one."""
    key = conversation.key
    for attempt in range(KEY_ATTEMPTS):
        client_id = key if attempt == 0 else f"{key}-{attempt}"
        target = deps.memory.get_alias(user_id, client_id)
        if target is None:
            return client_id  # unused: the conversation's new session takes it
        try:
            session = owned_session(deps.memory, user_id, target)
        except SessionNotFound:
            return client_id  # deleted: a new session takes the id over (ensure_session)
        if _holds(deps, session, conversation):
            return client_id
    raise BadRequest(
        "too many conversations open alike; send X-Session-Id to name the session",
    )


def _holds(deps: ChatDeps, session: Session, conversation: Conversation) -> bool:
    """Whether the session's last turn is the conversation's last exchange, or its new message
    (a retry): at most two reads (the last turn, in the session it continues when it has none
    of its own yet)."""
    last = _last_turn(deps, session)
    if last is None:
        return not conversation.exchanges
    if last.client_message_id == conversation.message_id():
        return True
    if not conversation.exchanges:
        return False
    said = conversation.exchanges[-1]
    index = len(conversation.exchanges) - 1
    return last.client_message_id == conversation.exchange_id(index) and (
        (last.response or "").strip() == said.assistant.strip()
    )


def _last_turn(deps: ChatDeps, session: Session) -> Turn | None:
    found = deps.memory.recent_turns(session.session_id, 1)
    if not found and session.continued_from:
        found = deps.memory.recent_turns(session.continued_from, 1)
    return found[-1] if found else None


def _bring(
    deps: ChatDeps, policy: ChatPolicy, user_id: str, session: Session, conversation: Conversation
) -> None:
    """Store the exchanges a client sent into its new session, as POST /turns would (no model
    call; the last `max_window_turns` of them: what a prompt can hold)."""
    first = max(len(conversation.exchanges) - policy.max_window_turns, 0)
    for index in range(first, len(conversation.exchanges)):
        said = conversation.exchanges[index]
        store_client_turn(
            deps,
            policy,
            user_id,
            session.session_id,
            turns.ClientTurn(said.user, said.assistant, conversation.exchange_id(index)),
        )


def _message_id(system: str | None, exchanges: Sequence[Exchange], message: str) -> str:
    return _digest([system, [list(e) for e in exchanges], message])


def _digest(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]
