"""Who may see what: a caller's current owner key and the sessions they own.

A caller's data is stored under an owner key (domain.owner_key) that changes when they forget
everything, so every read resolves it again. Sessions being imported or deleted, of another
caller, or of a forgotten generation all look like no session at all (404).
"""

from __future__ import annotations

from chatmemory.domain import Session, is_identifier
from chatmemory.errors import SessionNotFound
from chatmemory.ports import ShortTermMemory
from chatmemory.schema import VISIBLE_STATUSES


def owned_session(memory: ShortTermMemory, user_id: str, session_id: str) -> Session:
    """The caller's visible session (one read of the session and the caller's state), or
    SessionNotFound."""
    if not is_identifier(session_id):
        raise SessionNotFound("session not found")
    session, user = memory.get_owned(session_id, user_id)
    if session is None or session.user_id != user.owner:
        raise SessionNotFound(f"session {session_id} not found")
    if session.status not in VISIBLE_STATUSES:
        raise SessionNotFound(f"session {session_id} not found")
    return session


def owner_of(memory: ShortTermMemory, user_id: str) -> str:
    """The key the caller's data lives under now (one consistent read)."""
    return memory.get_user(user_id).owner
