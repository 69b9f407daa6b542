"""The MCP server's tools over one caller's chat memory: recall, remember, the caller's profile
records (list, search, correct, forget one), conversation turns stored for extraction, and the
caller's sessions (list, read, end, forget), built on ChatMemoryClient."""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from itertools import islice
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from chatmemory_client.client import ChatMemoryClient
from chatmemory_client.errors import ChatMemoryError, NotFound
from chatmemory_client.models import Memory, Record, Session, Turn

F = TypeVar("F", bound=Callable[..., Any])

ENV_URL = "CHATMEMORY_URL"
ENV_USER = "CHATMEMORY_USER"
ENV_TOKEN = "CHATMEMORY_TOKEN"
ENV_IAM = "CHATMEMORY_IAM"

INSTRUCTIONS = (
    "Long-term memory of the user across conversations. Call recall before answering anything "
    "that may depend on what the user said or did before (their facts, preferences, past "
    "discussions, earlier decisions); call remember when the user states something about "
    "themselves worth keeping, or asks you to remember it. Cite a memory's date when you use it."
)


# --- what the tools answer ---------------------------------------------------------------------


class Hit(BaseModel):
    """One recalled memory: a profile record or a past session."""

    kind: Literal["fact", "preference", "summary", "open_question", "session"] = Field(
        description=(
            "fact/preference/summary/open_question (what a session left unsettled): a profile "
            "record; session: a past conversation."
        )
    )
    id: str = Field(description="The record id, or the session id for kind=session.")
    date: str = Field(description="When it was said (records) or when the session took place.")
    text: str = Field(description="The record, or the session's best matching passages.")
    title: str | None = Field(default=None, description="The session's title.")
    session_id: str | None = Field(
        default=None, description="The session it comes from (get_session reads it)."
    )


class Recalled(BaseModel):
    query: str
    memories: list[Hit] = Field(description="Best first; empty when nothing matched.")


class Remembered(BaseModel):
    record_id: str
    type: str = Field(description="fact or preference (inferred from the text).")
    text: str
    created_at: str


class SessionInfo(BaseModel):
    session_id: str
    name: str
    status: str = Field(
        description="OPEN (ongoing), ENDED (being consolidated), CONSOLIDATED (in long-term "
        "memory: recall finds it) or FAILED."
    )
    started_at: str
    last_active_at: str
    ended_at: str | None = None
    num_turns: int


class SessionList(BaseModel):
    sessions: list[SessionInfo] = Field(description="Newest first.")


class TurnInfo(BaseModel):
    turn: int
    input: str = Field(description="What the user said.")
    response: str | None = Field(description="The answer (null while it is pending).")
    created_at: str


class Conversation(BaseModel):
    session: SessionInfo
    turns: list[TurnInfo] = Field(description="In order; the latest max_turns of the session.")
    truncated: bool = Field(description="Whether older turns were left out.")


class Done(BaseModel):
    message: str


class RecordInfo(BaseModel):
    record_id: str
    type: str = Field(description="fact, preference, summary or open_question.")
    text: str
    status: str = Field(description="ACTIVE, or SUPERSEDED (history: a newer one replaced it).")
    created_at: str = Field(description="When it was said or stated.")
    namespace: list[str] = Field(description="['profile'] for what the user's chats taught.")
    score: float | None = Field(default=None, description="With a search: higher is closer.")


class RecordList(BaseModel):
    records: list[RecordInfo]


class StoredTurn(BaseModel):
    session_id: str = Field(description="Pass it again for the next turn of this conversation.")
    turn: int
    created_at: str


# --- the server --------------------------------------------------------------------------------


def build_server(client: ChatMemoryClient) -> MCPServer:
    """An MCP server whose tools call the chat memory API as `client`'s caller."""
    server = MCPServer("chat-memory", instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def tool(annotations: ToolAnnotations) -> Callable[[F], F]:
        """A tool whose description is its docstring without the source's indentation."""

        def register(function: F) -> F:
            described = inspect.cleandoc(function.__doc__ or "")
            return server.tool(annotations=annotations, description=described)(function)

        return register

    @tool(read_only)
    def recall(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=1000,
                description="What to look for, in words: 'where does the user live', "
                "'the trip to Japan we planned'.",
            ),
        ],
        k: Annotated[int, Field(ge=1, le=20, description="How many memories at most.")] = 5,
    ) -> Recalled:
        """Search the user's long-term memory: facts and preferences they stated or that were
        learned in earlier conversations, and past conversations themselves (their best
        passages). Use it before answering whenever the answer may depend on the user's past:
        who they are, what they like, what was discussed or decided before. Each memory has
        a date and an id; a session's id can be read in full with get_session."""
        with _api_errors():
            records = client.search_records(query, limit=k)
            sessions = client.search_memories(query, k=k)
        return Recalled(query=query, memories=merge_recall(records, sessions, k))

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def remember(
        text: Annotated[
            str,
            Field(
                min_length=1,
                max_length=1000,
                description="One self-contained statement in the third person or the user's "
                "words, e.g. 'The user is allergic to peanuts' or 'I moved to Porto in May'.",
            ),
        ],
    ) -> Remembered:
        """Store a fact or preference about the user in long-term memory, recallable at once
        in this and every later conversation. Use it when the user tells you something about
        themselves worth keeping (name, home, work, family, tastes, plans) or asks you to
        remember something. A newer statement about the same thing (a new address) replaces
        the older one, which is kept as history."""
        with _api_errors():
            record = client.remember(text)
        return Remembered(
            record_id=record.record_id,
            type=record.type,
            text=record.text,
            created_at=record.created_at,
        )

    @tool(read_only)
    def list_records(
        limit: Annotated[int, Field(ge=1, le=100, description="How many, newest first.")] = 20,
        type: Annotated[  # noqa: A002 - the API's name
            Literal["fact", "preference", "summary", "open_question"] | None,
            Field(description="Only records of this type."),
        ] = None,
    ) -> RecordList:
        """List what is remembered about the user (their profile's records: facts,
        preferences, session summaries, open questions), newest first, with ids to correct or
        forget one. Use it when the user asks what you know about them."""
        with _api_errors():
            records = list(islice(client.list_records(type=type, page_size=limit), limit))
        return RecordList(records=[_record_info(r) for r in records])

    @tool(read_only)
    def search_records(
        query: Annotated[str, Field(min_length=1, max_length=1000, description="What to find.")],
        limit: Annotated[int, Field(ge=1, le=100, description="How many at most.")] = 10,
        include_history: Annotated[
            bool, Field(description="Also records a newer one replaced (SUPERSEDED).")
        ] = False,
    ) -> RecordList:
        """Search the user's profile records by meaning and words, best first, each with a
        score. Use it to find the record to correct or forget; to answer from memory, use
        recall (it searches past conversations too)."""
        with _api_errors():
            records = client.find_records(query=query, limit=limit, include_history=include_history)
        return RecordList(records=[_record_info(r) for r in records])

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True))
    def correct_record(
        record_id: Annotated[
            str, Field(min_length=1, description="From list_records or search_records.")
        ],
        text: Annotated[
            str, Field(min_length=1, max_length=65_536, description="The corrected statement.")
        ],
    ) -> RecordInfo:
        """Replace what a record says when the user corrects it ("no, my sister lives in
        Lyon, not Paris"). The record keeps its id and history; it is found by its new words
        at once."""
        with _api_errors():
            return _record_info(client.correct_record(record_id, text))

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True))
    def forget_record(
        record_id: Annotated[
            str, Field(min_length=1, description="From list_records or search_records.")
        ],
    ) -> Done:
        """Delete one record for good when the user asks you to forget that one thing: it is
        never recalled, listed or searched again. Forgetting a record already forgotten
        succeeds."""
        # Deleting what is gone already is done (the tool is marked idempotent); an id that
        # never existed, or is another caller's, answers the same 404.
        with _api_errors(), suppress(NotFound):
            client.delete_record(record_id)
        return Done(message=f"Record {record_id} is forgotten.")

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def store_turn(
        user_message: Annotated[
            str, Field(min_length=1, description="What the user said, as they said it.")
        ],
        assistant_response: Annotated[
            str | None, Field(description="What you answered (none: kept pending).")
        ] = None,
        session_id: Annotated[
            str | None,
            Field(description="The conversation's session (none: a new one is started)."),
        ] = None,
    ) -> StoredTurn:
        """Store one turn of this conversation (the user's message and your answer) in the
        user's chat memory, so that when the conversation ends (end_session, or by itself
        after a while idle) its facts and preferences are extracted into the profile and the
        conversation itself can be recalled later. Pass the session_id it returns for the
        next turns of the same conversation."""
        with _api_errors():
            if session_id is None:
                session_id = client.create_session("MCP conversation").session_id
            turn = client.store_turn(session_id, user_message, response=assistant_response)
        return StoredTurn(session_id=session_id, turn=turn.turn, created_at=turn.created_at)

    @tool(read_only)
    def list_sessions(
        limit: Annotated[int, Field(ge=1, le=100, description="How many, newest first.")] = 20,
    ) -> SessionList:
        """List the user's conversations (sessions), newest first, with their names, dates,
        status and number of turns. Use it to find a conversation by when it happened or by
        its name; to find one by what was said, use recall."""
        with _api_errors():
            sessions = list(islice(client.list_sessions(page_size=limit), limit))
        return SessionList(sessions=[_session(s) for s in sessions])

    @tool(read_only)
    def get_session(
        session_id: Annotated[
            str, Field(min_length=1, description="From recall or list_sessions.")
        ],
        max_turns: Annotated[
            int, Field(ge=1, le=500, description="At most this many of the latest turns.")
        ] = 50,
    ) -> Conversation:
        """Read one conversation: the session (name, dates, status) and its turns, what the
        user said and what was answered, in order. Use it when a recalled memory points to a
        session and you need more than its passages."""
        with _api_errors():
            session = client.get_session(session_id)
            latest = list(
                islice(
                    client.list_turns(session_id, order="desc", page_size=min(max_turns, 100)),
                    max_turns,
                )
            )
        return Conversation(
            session=_session(session),
            turns=[_turn(t) for t in reversed(latest)],
            truncated=session.num_turns > len(latest),
        )

    @tool(ToolAnnotations(read_only_hint=False, idempotent_hint=True))
    def end_session(
        session_id: Annotated[str, Field(min_length=1, description="An OPEN session's id.")],
    ) -> SessionInfo:
        """End a conversation so that it is consolidated into long-term memory (summarized,
        and its facts learned); recall finds it once its status is CONSOLIDATED, usually
        within seconds. Ending an ended session changes nothing."""
        with _api_errors():
            return _session(client.end_session(session_id))

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True))
    def forget_session(
        session_id: Annotated[str, Field(min_length=1, description="The session to delete.")],
    ) -> Done:
        """Delete a conversation for good: its turns, its summary and everything long-term
        memory learned from it. Only when the user asks to forget that conversation; it
        cannot be undone. An unknown session, or one already forgotten, is an error (not
        found), as the API's DELETE /sessions/{id} answers: telling the user "forgotten" of
        an id that named nothing would hide a wrong id."""
        with _api_errors():
            client.delete_session(session_id)
        return Done(message=f"Session {session_id} and what was learned from it are forgotten.")

    return server


def merge_recall(records: list[Record], sessions: list[Memory], k: int) -> list[Hit]:
    """Records and sessions in turns, each list in its own rank order, at most k: the API
    scores them on different scales. A superseded record is left out (its successor is what
    holds), and so is a summary record of a session that is itself among the hits. No passage
    is given twice: a session's repeated passages are given once, and a passage already given
    (by a record, or by another session's hit) is left out of a later hit, which is dropped
    when nothing of it is left."""
    found_sessions = {m.session_id for m in sessions}
    record_hits = [
        _record_hit(r)
        for r in records
        if r.status != "SUPERSEDED"
        and not (r.type == "summary" and _session_of(r) in found_sessions)
    ]
    session_hits = [_memory_hit(m) for m in sessions]
    merged: list[Hit] = []
    for i in range(max(len(record_hits), len(session_hits))):
        merged += record_hits[i : i + 1] + session_hits[i : i + 1]
    seen: set[str] = set()
    kept: list[Hit] = []
    for hit in merged:
        passages = [p for p in dict.fromkeys(hit.text.split("\n")) if _norm(p) not in seen]
        seen.update(_norm(p) for p in passages)
        if any(p.strip() for p in passages):
            kept.append(hit.model_copy(update={"text": "\n".join(passages)}))
    return kept[:k]


def _norm(passage: str) -> str:
    return " ".join(passage.lower().split())


def _record_info(record: Record) -> RecordInfo:
    return RecordInfo(
        record_id=record.record_id,
        type=record.type,
        text=record.text,
        status=record.status,
        created_at=record.created_at,
        namespace=list(record.namespace),
        score=record.score,
    )


def _session_of(record: Record) -> str | None:
    return record.provenance[0].session_id if record.provenance else None


def _record_hit(record: Record) -> Hit:
    known = ("fact", "preference", "summary", "open_question")
    kind = record.type if record.type in known else "fact"
    return Hit(
        kind=kind,  # type: ignore[arg-type]
        id=record.record_id,
        date=record.created_at,
        text=record.text,
        session_id=_session_of(record),
    )


def _memory_hit(memory: Memory) -> Hit:
    return Hit(
        kind="session",
        id=memory.session_id,
        date=memory.date,
        text="\n".join(memory.snippets),
        title=memory.title or None,
        session_id=memory.session_id,
    )


def _session(session: Session) -> SessionInfo:
    return SessionInfo(
        session_id=session.session_id,
        name=session.name,
        status=session.status,
        started_at=session.started_at,
        last_active_at=session.last_active_at,
        ended_at=session.ended_at,
        num_turns=session.num_turns,
    )


def _turn(turn: Turn) -> TurnInfo:
    return TurnInfo(
        turn=turn.turn, input=turn.input, response=turn.response, created_at=turn.created_at
    )


@contextmanager
def _api_errors() -> Iterator[None]:
    """The API's refusals as tool errors (is_error results the model reads), not crashes."""
    try:
        yield
    except ChatMemoryError as error:
        raise ToolError(str(error)) from error


# --- configuration and entry point ---------------------------------------------------------------


def client_from_env(env: Mapping[str, str]) -> ChatMemoryClient:
    """The client the environment describes: CHATMEMORY_URL, and CHATMEMORY_USER (local mode),
    CHATMEMORY_TOKEN (a Cognito ID token) or CHATMEMORY_IAM=1 (SigV4, AWS credentials)."""
    url = env.get(ENV_URL, "").strip()
    if not url:
        raise ValueError(f"set {ENV_URL} to the chat memory API's base URL")
    user = env.get(ENV_USER, "").strip() or None
    token = env.get(ENV_TOKEN, "").strip() or None
    iam = env.get(ENV_IAM, "").strip().lower() in ("1", "true", "yes")
    if not (user or token or iam):
        raise ValueError(
            f"set {ENV_USER} (local mode), {ENV_TOKEN} or {ENV_IAM}=1 to say who calls"
        )
    return ChatMemoryClient(url, user_id=user, token=token, iam=iam)


def main() -> None:
    """`python -m chatmemory_client.mcp`: the server on stdio, configured by the environment."""
    try:
        client = client_from_env(os.environ)
    except (ValueError, ImportError) as error:
        print(f"chatmemory MCP server: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    with client:
        build_server(client).run("stdio")
