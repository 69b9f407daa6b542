"""Session lifecycle: create, get, list, end, delete, export and import.

Deleting is one conditional write (the session's DELETING tombstone); the purge that follows
removes its turns and memories in the background (services/background/forget.py)."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import NamedTuple, TypedDict, TypeVar, Unpack

from chatmemory.clock import iso, utc_now
from chatmemory.domain import (
    ClientAlias,
    ImportedSession,
    Page,
    Session,
    SessionCreation,
    Turn,
    is_identifier,
    visible_to,
)
from chatmemory.errors import (
    BadRequest,
    Conflict,
    PayloadTooLarge,
    SessionEnded,
    SessionNotFound,
)
from chatmemory.ports import (
    Clock,
    SessionStore,
    SessionTurns,
    ShortTermMemory,
    TurnStore,
    UserSessions,
)
from chatmemory.schema import (
    MAX_INPUT_CHARS_DEFAULT,
    TEXT_STOPWORDS,
    SessionStatus,
)
from chatmemory.services.access import Found, owned_session, owner_of
from chatmemory.services.pages import TurnPage, turn_page

# A create or forget that loses a race with a concurrent one reads again and retries.
_ATTEMPTS = 5


def new_id() -> str:
    return str(uuid.uuid4())


def create_session(
    memory: UserSessions,
    user_id: str,
    *,
    name: str | None = None,
    end_previous: bool = False,
    continue_from: str | None = None,
    clock: Clock = utc_now,
    make_id: Callable[[], str] = new_id,
    alias: ClientAlias | None = None,
    attempts: int = _ATTEMPTS,
) -> Session:
    """Start a session; with end_previous, end the caller's open sessions in the same
    transaction (which triggers their consolidation), as the original design did.

    With continue_from, the new session continues one of the caller's sessions (typically one
    the idle sweeper ended while the user was away): it keeps the name the caller gave it, and
    the chat reads its rolling summary (one more read per turn) and, while the new one has
    fewer than a window, its last turns (one more query), as long as it exists. A session still
    open is ended in the same transaction, so a conversation is never open twice.

    With `alias`, the caller's client id names the new session (see ensure_session); a
    Conflict then may mean another request moved the alias, which only the caller can judge:
    pass attempts=1 and read again."""
    session_id = make_id()
    for _ in range(attempts):
        previous = owned_session(memory, user_id, continue_from) if continue_from else None
        user = memory.get_user(user_id)
        now = iso(clock())
        ends: list[str] = []
        if previous is not None and previous.status == SessionStatus.OPEN:
            ends = [previous.session_id]
        if end_previous:
            ends = [s.session_id for s in memory.open_sessions_of(user.owner)]
        # A name the caller gave is the conversation's; one drawn from the previous session's
        # first message is that session's text (deleting it must take it along): the new one
        # is named by its own first message instead.
        kept = previous.name if previous and not (previous.auto_named or previous.titled) else ""
        given = (name or "").strip() or kept
        session = Session(
            session_id=session_id,
            user_id=user.owner,
            name=given or f"Session {now[:16].replace('T', ' ')}",
            status=SessionStatus.OPEN,
            started_at=now,
            last_active_at=now,
            auto_named=not given,
            # The previous session's summary is not copied: the prompt reads it while that
            # session exists (access.continued), so deleting it takes it out of this one.
            continued_from=previous.session_id if previous else None,
            client_id=alias.client_id if alias else None,
            thread_root=_thread_root(previous, alias),
        )
        try:
            memory.create_session(session, SessionCreation(user, ends, now, alias))
        except Conflict:
            continue  # a forget, or a session ended meanwhile: read again
        return session
    raise Conflict("the caller's sessions kept changing; retry the request")


def _thread_root(previous: Session | None, alias: ClientAlias | None) -> str | None:
    """The first session of the conversation a continuation under the same client id goes on
    (its checkpoints are the thread's); None for a session that starts one."""
    if previous is None or alias is None or previous.client_id != alias.client_id:
        return None
    return previous.thread_root or previous.session_id


def resolve(memory: SessionStore, user_id: str, session_id: str) -> str:
    """The server's id of the session a caller's id names: the session its client id's alias
    names (PUT /sessions/{id}), else the id itself. One consistent read. A client id comes
    first: an id a caller chose shadows nothing of theirs (server ids are UUIDs they were
    given), and never reaches another caller's session, whatever it looks like."""
    if not is_identifier(session_id):
        return session_id  # refused by owned_session as any bad id
    return memory.get_alias(user_id, session_id) or session_id


class Current(NamedTuple):
    """The session a caller's id names (as `resolve` finds it), and what the same read found
    of that session and of the caller's state (services/access.owned_session checks it), or
    None when the read was not of that session (a client id's alias names another)."""

    session_id: str
    found: Found = None


def resolve_current(memory: SessionStore, user_id: str, session_id: str) -> Current:
    """`resolve`, reading in the same request the session the id would be and the caller's
    state: for the usual id, a session's own, what the message needs next is read already."""
    if not is_identifier(session_id):
        return Current(session_id)  # refused by owned_session as any bad id
    alias, session, user = memory.get_named(session_id, user_id)
    if alias is not None and alias != session_id:
        return Current(alias)
    return Current(session_id, (session, user))


class NewSession(TypedDict, total=False):
    """What ensure_session passes on to create_session for a session it creates (their
    meaning is create_session's)."""

    name: str | None
    end_previous: bool
    continue_from: str | None
    clock: Clock
    make_id: Callable[[], str]


def ensure_session(
    memory: UserSessions, user_id: str, client_id: str, **new: Unpack[NewSession]
) -> tuple[Session, bool]:
    """The caller's session that `client_id` names, created if there is none (True then):
    PUT /sessions/{id}. Idempotent: a retry, or two concurrent PUTs, give the same session
    (the alias is written in the session's transaction, on condition of what was read).

    An id names none when it was never used, or when the session it named is deleted or of a
    forgotten memory: then a new empty session takes the id over at once. A session of the
    caller whose server id is `client_id` is that session (no alias is written). An ended
    session is returned as it is: the next message continues it (on_current_session)."""
    if not is_identifier(client_id):
        raise SessionNotFound("session not found")
    if continue_from := new.get("continue_from"):
        new["continue_from"] = resolve(memory, user_id, continue_from)
    for _ in range(_ATTEMPTS):
        target = memory.get_alias(user_id, client_id)
        try:
            found = owned_session(memory, user_id, target or client_id)
            if thread_intact(memory, found):
                return found, False
            # A delete of the conversation stopped after its first session (they are marked
            # first to last): it is finished here, and the id starts anew.
            delete_session(memory, user_id, client_id)
            continue
        except SessionNotFound:
            pass
        try:
            alias = ClientAlias(user_id, client_id, replaces=target)
            created = create_session(memory, user_id, **new, alias=alias, attempts=1)
        except Conflict:
            continue  # another request wrote the alias (or the caller's memory changed)
        return created, True
    raise Conflict("the caller's sessions kept changing; retry the request")


def thread_intact(memory: SessionStore, session: Session) -> bool:
    """Whether the first session of a continued conversation is still there (its thread's
    checkpoints are kept in its partition): one more read, for continued sessions only."""
    if not session.thread_root or session.thread_root == session.session_id:
        return True
    first = memory.get_session(session.thread_root)
    return first is not None and visible_to(session.user_id, first.user_id, first.status)


T = TypeVar("T")


def on_current_session(
    memory: UserSessions,
    user_id: str,
    session_id: str,
    write: Callable[[Current], T],
    *,
    clock: Clock = utc_now,
    make_id: Callable[[], str] = new_id,
) -> T:
    """Run `write` (a message or a turn) on the session a caller's id names, with what the read
    that found it found of it (current_session_attempts)."""
    for attempt in current_session_attempts(memory, user_id, session_id, clock, make_id):
        with attempt:
            return write(attempt.current)
    raise AssertionError("current_session_attempts raises when the attempts run out")


class SessionAttempt:
    """One try of a write on the session `current` names (resolved from the caller's id
    `named`, with what the read found of it): the write runs inside it, and a session that
    ended meanwhile, named by a client id, ends the try so that the next one runs on the
    conversation's continuation."""

    def __init__(self, current: Current, named: str) -> None:
        self.current = current
        self.named = named

    @property
    def session_id(self) -> str:
        return self.current.session_id

    @property
    def found(self) -> Found:
        return self.current.found

    def __enter__(self) -> SessionAttempt:
        return self

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> bool:
        # A server id (or an id naming none) means the session itself: its end is the answer.
        return isinstance(error, SessionEnded) and self.session_id != self.named


def current_session_attempts(
    memory: UserSessions,
    user_id: str,
    session_id: str,
    clock: Clock = utc_now,
    make_id: Callable[[], str] = new_id,
) -> Iterator[SessionAttempt]:
    """The tries of a write on the session a caller's id names, for `for attempt in ...: with
    attempt: return write(attempt.current)`. Each try reads the session the id names, and what
    it needs next of it and of the caller, in one request (resolve_current). When a client id
    (PUT /sessions/{id}) names a session that has ended (the idle sweeper, an explicit end),
    the conversation is continued on the server in the same request: a new session continues
    it (continued_from), takes the alias over, and the next try runs on it. A server id keeps
    its meaning (an ended session answers 409 session_ended): a caller who names the session
    itself is told; a caller who named a conversation gets the conversation."""
    for _ in range(_ATTEMPTS):
        attempt = SessionAttempt(resolve_current(memory, user_id, session_id), session_id)
        yield attempt
        continue_client_session(
            memory, user_id, session_id, ended=attempt.session_id, clock=clock, make_id=make_id
        )
    raise Conflict("the conversation kept changing; retry the request")


def continue_client_session(
    memory: UserSessions,
    user_id: str,
    client_id: str,
    *,
    ended: str,
    clock: Clock = utc_now,
    make_id: Callable[[], str] = new_id,
) -> Session | None:
    """A new session continuing `ended`, which the caller's `client_id` names, in one
    transaction that moves the alias to it. None when another request continued (or deleted)
    it first: the caller reads the alias again."""
    try:
        return create_session(
            memory,
            user_id,
            continue_from=ended,
            clock=clock,
            make_id=make_id,
            alias=ClientAlias(user_id, client_id, replaces=ended),
            attempts=1,
        )
    except (Conflict, SessionNotFound):
        return None


_LEAD = re.compile(
    r"^(?:(?:hi|hello|hey|ok|okay|so|well|um|uh|please|thanks|thank you)\b[\s,!.:-]*)+"
    r"|^(?:(?:can|could|would|will) you\s+(?:please\s+)?)"
    r"|^(?:(?:i|we)(?:\s+am|'m|\s+are|'re|\s+have|'ve|\s+will|'ll|\s+want(?: to)?"
    r"|\s+would like(?: to)?|\s+need(?: to)?)\s+)"
    r"|^(?:help me(?: to)?\s+)",
    re.IGNORECASE,
)
_TITLE_WORDS = 6
_TITLE_CHARS = 60


def title_from(message: str) -> str | None:
    """A session name from what a message is about, as chat apps name conversations: its first
    sentence with something in it, without the greeting and the "I'm"/"can you", cut to a few
    words ("We are adopting a rescue greyhound named Biscuit next month." -> "Adopting a rescue
    greyhound named Biscuit"). None for small talk and commands: there is nothing to go on."""
    from chatmemory.services.longterm.terms import content_terms

    if message.lstrip().startswith("/"):
        return None
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", message):
        text = sentence.strip()
        while True:
            stripped = _LEAD.sub("", text, count=1).strip()
            if stripped == text:
                break
            text = stripped
        text = text.strip(" \"'.,!?;:-")
        if not content_terms(text):
            continue
        words = text.split()[:_TITLE_WORDS]
        while len(words) > 1 and words[-1].lower().strip(",.;:-") in TEXT_STOPWORDS:
            words.pop()  # "Plan a trip to" -> "Plan a trip"
        title = " ".join(words)[:_TITLE_CHARS].rstrip(" ,.;:-")
        return title[0].upper() + title[1:]
    return None


def get_session(memory: SessionStore, user_id: str, session_id: str) -> Session:
    return owned_session(memory, user_id, session_id)


def list_sessions(
    memory: UserSessions, user_id: str, *, limit: int, next_token: str | None
) -> Page[Session]:
    return memory.list_sessions(owner_of(memory, user_id), limit, next_token)


def end_session(
    memory: SessionStore, user_id: str, session_id: str, *, clock: Clock = utc_now
) -> Session:
    """End an open session. Ending an already ended session returns it unchanged."""
    session = owned_session(memory, user_id, session_id)
    if session.status != SessionStatus.OPEN:
        return session
    try:
        return memory.end_session(session_id, iso(clock()))
    except Conflict:
        return owned_session(memory, user_id, session_id)


# A conversation under a client id continued at most this many times is deleted whole; one
# continuation a day for ten years is less.
_MAX_CONTINUATIONS = 5000


def delete_session(
    memory: SessionStore, user_id: str, session_id: str, *, clock: Clock = utc_now
) -> None:
    """Delete a session for every reader at once: its DELETING tombstone is one conditional
    write. Turns, long-term memories and the item itself are purged in the background.

    A conversation under a client id (PUT /sessions/{id}) is deleted whole, whether it is named
    by its client id or one of its sessions by its server id: the session the id names and
    every earlier one of the same id it continues (server-side continuations), oldest first, so
    a delete that fails half-way leaves the id naming what is left, and a retry (or the next
    PUT of the id: ensure_session) finishes it. Its sessions share one thread (a LangGraph
    thread's checkpoints, each holding the conversation so far, are kept in its first
    session's partition): deleting one of them alone would leave its words in the thread, or
    a thread without its checkpoints. The id is free for a new session once this returns.

    A message racing the delete may continue the conversation meanwhile (a continuation of
    the ended session the id named): written before the tombstones, it is found here (the id
    names it after them) and deleted with the rest; written after, its transaction fails (a
    session being deleted is never continued), so nothing sent to the id in the race outlives
    the delete."""
    target = resolve(memory, user_id, session_id)
    session = _conversation_tip(memory, user_id, owned_session(memory, user_id, target))
    deleted: set[str] = set()
    for _ in range(_ATTEMPTS):
        chain = _conversation(memory, session, deleted)
        for sid in reversed(chain):
            memory.mark_deleting(sid, iso(clock()))  # False: deleting already
        deleted.update(chain)
        if not session.client_id:
            return
        named = memory.get_alias(user_id, session.client_id)
        if named is None or named in deleted:
            return
        latest = memory.get_session(named)
        if latest is None or latest.continued_from not in deleted:
            return  # a new conversation under the id (PUT after this delete): not this one
        session = latest
    raise Conflict("the conversation kept being continued; retry the delete")


def _conversation(memory: SessionStore, session: Session, done: set[str]) -> list[str]:
    """`session` and the earlier sessions of its client id it continues, newest first, up to
    one already in `done`."""
    chain = [session.session_id]
    earlier = session
    while earlier.client_id and earlier.continued_from and len(chain) < _MAX_CONTINUATIONS:
        if earlier.continued_from in done:
            break
        found = memory.get_session(earlier.continued_from)
        if found is None or found.client_id != earlier.client_id:
            break
        if found.user_id != session.user_id:
            break
        chain.append(found.session_id)
        earlier = found
    return chain


def _conversation_tip(memory: SessionStore, user_id: str, session: Session) -> Session:
    """The last session of the conversation `session` is part of: the one its client id names
    now when that one continues the same thread (one more read of the alias and the session,
    for sessions under a client id only), else `session` itself."""
    if not session.client_id:
        return session
    tip_id = memory.get_alias(user_id, session.client_id)
    if tip_id is None or tip_id == session.session_id:
        return session
    tip = memory.get_session(tip_id)
    if tip is None or tip.user_id != session.user_id or _root(tip) != _root(session):
        return session
    return tip


def _root(session: Session) -> str:
    return session.thread_root or session.session_id


def list_messages(
    memory: SessionTurns, user_id: str, session_id: str, asked: TurnPage
) -> Page[Turn]:
    """The page of the caller's session's turns `asked` for."""
    owned_session(memory, user_id, session_id)
    return turn_page(memory, session_id, asked)


# A page of an export: its messages take at most this many bytes as Lambda's runtime sends
# them (the body's JSON, non-ASCII characters escaped, inside the proxy answer's JSON, which
# escapes quotes and backslashes again): a synchronous Lambda answer is at most 6 MB, and a
# long session is more (2,000 turns of 4,000 characters are 16 MB, 56 MB in a script JSON
# escapes).
EXPORT_PAGE_BYTES = 4 * 1024 * 1024
# Turns read at once while a page fills.
_EXPORT_READ = 200


def export_session(
    memory: SessionTurns,
    user_id: str,
    session_id: str,
    *,
    next_token: str | None = None,
    size_of: Callable[[Turn], int],
    page_bytes: int = EXPORT_PAGE_BYTES,
) -> tuple[Session, list[Turn], str | None]:
    """The session and its turns from `next_token` on, as many as fit `page_bytes` by
    `size_of` (at least one), and the token of the rest (None: the export is complete). The
    whole export is the pages' messages in order (save/load of a chat;
    api_models.ExportDocument)."""
    session = owned_session(memory, user_id, session_id)
    after = _export_position(next_token, session_id)
    turns: list[Turn] = []
    used = 0
    while after < session.num_turns:
        read = memory.turns_between(session_id, after, min(after + _EXPORT_READ, session.num_turns))
        if not read:
            break
        for turn in read:
            size = size_of(turn)
            if turns and used + size > page_bytes:
                return session, turns, _export_token(session_id, turns[-1].turn)
            turns.append(turn)
            used += size
        after = read[-1].turn
    return session, turns, None


def _export_token(session_id: str, after: int) -> str:
    raw = json.dumps({"s": session_id, "after": after}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _export_position(token: str | None, session_id: str) -> int:
    """The turn an export page starts after (0 without a token); a token of another session
    or export is refused."""
    if not token:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        after = data["after"]
        valid = data["s"] == session_id and type(after) is int and after >= 0
    except (ValueError, TypeError, KeyError):
        valid = False
    if not valid:
        raise BadRequest("next_token is not valid")
    return int(after)


class ImportLimits(NamedTuple):
    max_input_chars: int = MAX_INPUT_CHARS_DEFAULT
    # The writes of one import must end well inside the API's 29 s: past this, the import is
    # abandoned (and cleaned up) rather than cut off by API Gateway half-way.
    max_seconds: float = 20.0


def _put_turns(
    memory: TurnStore, turns: Sequence[Turn], late: Callable[[], bool], limits: ImportLimits
) -> None:
    """An import's turns written 500 at a time, until it runs `late`."""
    for start in range(0, len(turns), 500):
        if late():
            raise PayloadTooLarge(
                f"the import did not finish within {limits.max_seconds:.0f} s; "
                "import fewer messages at once"
            )
        memory.put_turns(turns[start : start + 500])


def _create_importing(memory: UserSessions, user_id: str, importing: Session) -> Session:
    """The IMPORTING session item written under the caller's owner key, conditional on their
    memory's generation (retried when a forget moved it meanwhile)."""
    for _ in range(_ATTEMPTS):
        user = memory.get_user(user_id)
        session = replace(importing, user_id=user.owner)
        try:
            memory.create_session(session, SessionCreation(user))
        except Conflict:
            continue
        return session
    raise Conflict("the caller's memory kept changing; retry the import")


def import_session(
    memory: ShortTermMemory,
    user_id: str,
    imported: ImportedSession,
    *,
    limits: ImportLimits = ImportLimits(),
    clock: Clock = utc_now,
    make_id: Callable[[], str] = new_id,
    monotonic: Callable[[], float] = time.monotonic,
) -> Session:
    """Restore an exported session under the caller as a new OPEN session.

    The document was validated whole (api_models.ImportDocument) before it came here. The
    session item is written first as IMPORTING, which no reader sees; then the turns; then one
    conditional write makes it OPEN. A failure in between marks it DELETING, so the purge
    collects what was written; a crash leaves it IMPORTING until the sweeper does the same.
    """
    started = monotonic()
    for index, message in enumerate(imported.turns):
        if len(message.input) > limits.max_input_chars:
            raise BadRequest(
                f"messages[{index}].input is longer than {limits.max_input_chars} characters"
            )
    now = iso(clock())
    session_id = make_id()
    turns = [
        replace(turn, session_id=session_id, created_at=turn.created_at or now)
        for turn in imported.turns
    ]
    started_at = imported.started_at or (turns[0].created_at if turns else now)
    last_active = max(turns[-1].created_at if turns else started_at, started_at)
    importing = Session(
        session_id=session_id,
        user_id="",  # the caller's owner key, read in _create_importing
        name=imported.name or "Imported session",
        status=SessionStatus.IMPORTING,
        started_at=started_at,
        # Until it is OPEN, the sweeper judges an import by when it began.
        last_active_at=now,
        num_turns=len(turns),
        running_summary=imported.running_summary,
        summary_through_turn=min(imported.summary_through_turn, len(turns)),
    )
    session = _create_importing(memory, user_id, importing)
    try:
        for turn in turns:
            turn.user_id = session.user_id
        _put_turns(memory, turns, lambda: monotonic() - started > limits.max_seconds, limits)
        memory.finish_import(session_id, last_active)
    except BaseException:
        # Nothing of a failed import may stay: the tombstone hands what was written to the
        # purge. If even this write fails, the IMPORTING item is swept later.
        with contextlib.suppress(Exception):
            memory.mark_deleting(session_id, iso(clock()))
        raise
    session.status = SessionStatus.OPEN
    session.last_active_at = last_active
    return session
