"""Session lifecycle: create, get, list, end, delete, export and import."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from chatmemory.domain import Intent, Page, Session, Source, Turn
from chatmemory.errors import BadRequest, Conflict, SessionNotFound
from chatmemory.ports import Clock, LongTermIndex, ShortTermMemory
from chatmemory.schema import SessionStatus

EXPORT_FORMAT = "chatmemory.session.v1"
# Ids we issue are UUIDs; anything far longer is no id of ours (and would fail as a key).
MAX_ID_LENGTH = 128


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """Sortable UTC timestamp with milliseconds: the form every stored time uses."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{moment.microsecond // 1000:03d}Z"
    )


def new_id() -> str:
    return str(uuid.uuid4())


def owned_session(memory: ShortTermMemory, user_id: str, session_id: str) -> Session:
    """The caller's session, or SessionNotFound: another user's session looks like no session."""
    if not session_id or len(session_id) > MAX_ID_LENGTH:
        raise SessionNotFound("session not found")
    session = memory.get_session(session_id)
    if session is None or session.user_id != user_id:
        raise SessionNotFound(f"session {session_id} not found")
    return session


def create_session(
    memory: ShortTermMemory,
    user_id: str,
    *,
    name: str | None = None,
    end_previous: bool = False,
    clock: Clock = utc_now,
    make_id: Callable[[], str] = new_id,
) -> Session:
    """Start a session; with end_previous, first end the caller's open sessions (which
    triggers their consolidation), as the original design did."""
    now = iso(clock())
    if end_previous:
        for previous in memory.open_sessions_of(user_id):
            _end_quietly(memory, previous.session_id, now)
    session = Session(
        session_id=make_id(),
        user_id=user_id,
        name=(name or "").strip() or f"Session {now[:16].replace('T', ' ')}",
        status=SessionStatus.OPEN,
        started_at=now,
        last_active_at=now,
    )
    memory.create_session(session)
    return session


def _end_quietly(memory: ShortTermMemory, session_id: str, now: str) -> None:
    with contextlib.suppress(Conflict, SessionNotFound):  # ended or deleted meanwhile
        memory.end_session(session_id, now)


def get_session(memory: ShortTermMemory, user_id: str, session_id: str) -> Session:
    return owned_session(memory, user_id, session_id)


def list_sessions(
    memory: ShortTermMemory, user_id: str, *, limit: int, next_token: str | None
) -> Page:
    return memory.list_sessions(user_id, limit, next_token)


def end_session(
    memory: ShortTermMemory, user_id: str, session_id: str, *, clock: Clock = utc_now
) -> Session:
    """End an open session. Ending an already ended session returns it unchanged."""
    session = owned_session(memory, user_id, session_id)
    if session.status != SessionStatus.OPEN:
        return session
    try:
        return memory.end_session(session_id, iso(clock()))
    except Conflict:
        return owned_session(memory, user_id, session_id)


def delete_session(
    memory: ShortTermMemory,
    user_id: str,
    session_id: str,
    *,
    long_term: LongTermIndex | None = None,
) -> None:
    """Delete a session, its turns and (when configured) its long-term entries."""
    owned_session(memory, user_id, session_id)
    if long_term is not None:
        long_term.delete_session(user_id, session_id)
    memory.delete_session(session_id)


def forget_user(
    memory: ShortTermMemory, user_id: str, *, long_term: LongTermIndex | None = None
) -> int:
    """Delete every session, turn and long-term entry of the user. Returns sessions deleted."""
    # Collect first, then delete: the user index is eventually consistent.
    session_ids: list[str] = []
    token: str | None = None
    while True:
        page = memory.list_sessions(user_id, 100, token)
        session_ids += [s.session_id for s in page.items]
        token = page.next_token
        if not token:
            break
    if long_term is not None:
        long_term.delete_user(user_id)
    for session_id in session_ids:
        memory.delete_session(session_id)
    return len(session_ids)


def list_messages(
    memory: ShortTermMemory,
    user_id: str,
    session_id: str,
    *,
    limit: int,
    next_token: str | None,
    ascending: bool,
) -> Page:
    owned_session(memory, user_id, session_id)
    return memory.list_turns(session_id, limit, next_token, ascending)


def export_session(memory: ShortTermMemory, user_id: str, session_id: str) -> dict[str, Any]:
    """The session and all its turns as one JSON-ready document (save/load of a chat)."""
    session = owned_session(memory, user_id, session_id)
    body = session.public()
    body["running_summary"] = session.running_summary
    body["summary_through_turn"] = session.summary_through_turn
    return {
        "format": EXPORT_FORMAT,
        "session": body,
        "messages": [turn.public() for turn in memory.all_turns(session_id)],
    }


@dataclass(frozen=True)
class ImportLimits:
    max_messages: int = 10_000
    max_input_chars: int = 4000
    # Each message becomes one DynamoDB item (400 KB at most). Measured as ASCII-escaped JSON,
    # which is never shorter than the UTF-8 it stores, and roomy enough for any exported turn.
    max_message_chars: int = 200_000


def import_session(
    memory: ShortTermMemory,
    user_id: str,
    document: dict[str, Any],
    *,
    limits: ImportLimits = ImportLimits(),
    clock: Clock = utc_now,
    make_id: Callable[[], str] = new_id,
) -> Session:
    """Restore an exported session under the caller as a new OPEN session.

    Turns are renumbered 1..n in the order given; timestamps are kept when present. The session
    opens so it can be continued; ending it consolidates it like any other.
    """
    if not isinstance(document, dict):
        raise BadRequest("the import body must be a JSON object")
    meta = document.get("session") or {}
    messages = document.get("messages")
    if not isinstance(meta, dict):
        raise BadRequest("'session' must be an object")
    if not isinstance(messages, list):
        raise BadRequest("'messages' must be a list")
    if len(messages) > limits.max_messages:
        raise BadRequest(f"at most {limits.max_messages} messages can be imported at once")
    now = iso(clock())
    session_id = make_id()
    turns = [
        _imported_turn(session_id, user_id, index, raw, now, limits)
        for index, raw in enumerate(messages, start=1)
    ]
    started_at = _timestamp(meta.get("started_at")) or (turns[0].created_at if turns else now)
    last_active = turns[-1].created_at if turns else started_at
    session = Session(
        session_id=session_id,
        user_id=user_id,
        name=_text(meta.get("name"), "session.name", 200) or "Imported session",
        status=SessionStatus.OPEN,
        started_at=started_at,
        last_active_at=max(last_active, started_at),
        num_turns=len(turns),
        running_summary=_text(meta.get("running_summary"), "session.running_summary", 20_000),
        summary_through_turn=min(_int(meta.get("summary_through_turn")), len(turns)),
    )
    memory.import_session(session, turns)
    return session


def _imported_turn(
    session_id: str,
    user_id: str,
    index: int,
    raw: Any,
    now: str,
    limits: ImportLimits,
) -> Turn:
    if not isinstance(raw, dict):
        raise BadRequest(f"messages[{index - 1}] must be an object")
    where = f"messages[{index - 1}]"
    if len(json.dumps(raw)) > limits.max_message_chars:
        raise BadRequest(f"{where} is larger than {limits.max_message_chars} characters as JSON")
    text = raw.get("input")
    if not isinstance(text, str):
        raise BadRequest(f"{where}.input must be a string")
    if len(text) > limits.max_input_chars:
        raise BadRequest(f"{where}.input is longer than {limits.max_input_chars} characters")
    response = raw.get("response")
    if response is not None and not isinstance(response, str):
        raise BadRequest(f"{where}.response must be a string or null")
    intent = raw.get("intent") or Intent.CHAT
    if intent not in Intent.ALL:
        raise BadRequest(f"{where}.intent must be one of {', '.join(Intent.ALL)}")
    sources = raw.get("sources") or []
    if not isinstance(sources, list) or not all(isinstance(s, dict) for s in sources):
        raise BadRequest(f"{where}.sources must be a list of objects")
    return Turn(
        session_id=session_id,
        turn=index,
        user_id=user_id,
        input=text,
        response=response,
        intent=intent,
        sources=[_source(s) for s in sources],
        created_at=_timestamp(raw.get("created_at")) or now,
        client_message_id=None,
    )


def _source(raw: dict[str, Any]) -> Source:
    score = raw.get("score")
    return Source(
        kind=str(raw.get("kind", "session")),
        id=str(raw.get("id", "")),
        title=str(raw.get("title", "")),
        date=str(raw["date"]) if raw.get("date") else None,
        score=float(score) if isinstance(score, (int, float)) else None,
        doc_id=str(raw["doc_id"]) if raw.get("doc_id") else None,
        passage_id=str(raw["passage_id"]) if raw.get("passage_id") else None,
    )


def _timestamp(value: Any) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise BadRequest("timestamps must be ISO 8601 strings")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise BadRequest(f"not an ISO 8601 timestamp: {value[:40]!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return iso(moment)


def _text(value: Any, where: str, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"{where} must be a string")
    if len(value) > limit:
        raise BadRequest(f"{where} is longer than {limit} characters")
    return value


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def sessions_public(sessions: Sequence[Session]) -> list[dict[str, Any]]:
    return [s.public() for s in sessions]
