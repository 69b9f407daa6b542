"""Who may see what: the one place that decides whether a session, and so its turns, can be read.

A caller's data is stored under an owner key (domain.owner_key) that changes when they forget
everything, so every read resolves it again. Sessions being imported or deleted, of another
caller, or of a forgotten generation all look like no session at all (404): domain.visible_to
says so, and every read of turns goes through a session this module let through. A delete is
one conditional write, and the turns stay physically until the purge: reading them without
asking here first (as the continuation once did) would quote what the caller deleted.

Reads that use a session's content for something else than showing it (a continuation's
prompt) check visibility after reading it: a delete that returned before the check is seen,
whatever was read before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chatmemory.domain import Session, Turn, UserState, caller_of, is_identifier, visible_to
from chatmemory.errors import SessionNotFound
from chatmemory.ports import SessionStore, SessionTurns, UserSessions, UserStore

# A session and its caller's state, as a read of the request found them (None: not read yet).
Found = tuple[Session | None, UserState] | None


def owned_session(
    memory: SessionStore, user_id: str, session_id: str, *, found: Found = None
) -> Session:
    """The caller's visible session (one read of the session and the caller's state, or
    `found`: what a read this request made found of them), or SessionNotFound."""
    if not is_identifier(session_id):
        raise SessionNotFound("session not found")
    session, user = found if found is not None else memory.get_owned(session_id, user_id)
    if session is None or not visible_to(user.owner, session.user_id, session.status):
        raise SessionNotFound(f"session {session_id} not found")
    return session


def visible_to_its_user(memory: UserSessions, session_id: str) -> Session:
    """A session as its own user can see it, for someone who is not that user (an agent): not
    deleting, not of a memory its user forgot (an agent must not read what the user deleted,
    even before the purge has removed it). Two reads: the session, then its user's state."""
    if not is_identifier(session_id):
        raise SessionNotFound("session not found")
    session = memory.get_session(session_id)
    if session is not None:
        owner = memory.get_user(caller_of(session.user_id)).owner
        if visible_to(owner, session.user_id, session.status):
            return session
    raise SessionNotFound(f"session {session_id} not found")


def owner_of(memory: UserStore, user_id: str) -> str:
    """The key the caller's data lives under now (one consistent read)."""
    return memory.get_user(user_id).owner


@dataclass
class Continued:
    """What a continuation's prompt may use of the session it continues: its rolling summary
    and its last turns, empty once that session is gone for its user."""

    summary: str = ""
    turns: list[Turn] = field(default_factory=list)


def continued(memory: SessionTurns, session: Session, last_turns: int) -> Continued:
    """The session `session` continues (continued_from), read for its prompt: its last
    `last_turns` turns (one Query, none for 0) and its rolling summary, from the one read that
    then checks it is still visible to the same owner key (a consistent GetItem after the
    Query: a delete that returned before it is seen). Nothing when it is deleted or forgotten:
    its text was the caller's to delete, whatever this session quoted of it before."""
    if not session.continued_from:
        return Continued()
    turns = memory.recent_turns(session.continued_from, last_turns) if last_turns > 0 else []
    earlier = memory.get_session(session.continued_from)
    if earlier is None or not visible_to(session.user_id, earlier.user_id, earlier.status):
        return Continued()
    return Continued(earlier.running_summary, turns)
