"""The routes of sessions: start, name, list, import, read, end, delete and export one."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from chatmemory import api_models as m
from chatmemory import wiring
from chatmemory.services.conversation import sessions
from handlers.routes.common import (
    ClientSessionId,
    Limit,
    NextToken,
    SessionId,
    on_session,
    route,
    session,
    user,
)

router = APIGatewayRouter()


@route(router.post, "/sessions", responses={201: {"description": "Created"}})
def create_session(
    body: Annotated[m.CreateSessionRequest | None, Body()] = None,
) -> tuple[m.SessionEnvelope, int]:
    """Start a session.

    Creates an OPEN session for the caller, optionally named. With end_previous, the caller's open
    sessions are ended first (their consolidation into long-term memory follows). With
    continue_from, it continues one of the caller's sessions (after the idle sweeper ended it, a
    message to it answers 409 session_ended).
    """
    body = body or m.CreateSessionRequest()
    memory = wiring.chat_deps().memory
    created = sessions.create_session(
        memory,
        user(router),
        name=body.name,
        end_previous=body.end_previous,
        continue_from=session(router, body.continue_from) if body.continue_from else None,
    )
    return m.SessionEnvelope.of(created), 201


@route(
    router.put,
    "/sessions/<session_id>",
    responses={201: {"description": "Created"}, 200: {"description": "It exists"}},
)
def put_session(
    session_id: ClientSessionId,
    body: Annotated[m.CreateSessionRequest | None, Body()] = None,
) -> tuple[m.SessionEnvelope, int]:
    """Create or get a session by the caller's id.

    The caller's session named by the caller's own id (a framework's thread id), created OPEN if
    there is none (201), else answered as it is (200; the body is then ignored). The id is the
    caller's alone: two callers' same id are two sessions. Every /sessions/{session_id} route takes
    it. A message or a turn sent to it after its session ended (the idle sweeper) continues the
    conversation in a new session that takes the id over (continued_from names the ended one).
    DELETE deletes the whole conversation (every session the id named), and the id is free again at
    once.
    """
    body = body or m.CreateSessionRequest()
    session, created = sessions.ensure_session(
        wiring.chat_deps().memory,
        user(router),
        session_id,
        name=body.name,
        end_previous=body.end_previous,
        continue_from=body.continue_from,
    )
    return m.SessionEnvelope.of(session), 201 if created else 200


@route(router.get, "/sessions")
def list_sessions(limit: Limit = 20, next_token: NextToken = None) -> m.SessionList:
    """List sessions.

    The caller's sessions, newest first, one page at a time: pass the next_token of a page to read
    the next one.
    """
    page = sessions.list_sessions(
        wiring.chat_deps().memory, user(router), limit=limit, next_token=next_token
    )
    return m.SessionList.of(page)


@route(router.post, "/sessions/import", responses={201: {"description": "Imported"}})
def import_session(body: Annotated[m.ImportDocument, Body()]) -> tuple[m.SessionEnvelope, int]:
    """Import a session.

    Creates a new OPEN session of the caller from an export document (GET
    /sessions/{session_id}/export), with every message, answer and time. The whole document is
    checked before anything is stored.
    """
    settings = wiring.settings()
    created = sessions.import_session(
        wiring.chat_deps().memory,
        user(router),
        body.imported(),
        limits=sessions.ImportLimits(max_input_chars=settings.max_input_chars),
    )
    return m.SessionEnvelope.of(created), 201


@route(router.get, "/sessions/<session_id>")
def get_session(session_id: SessionId) -> m.SessionEnvelope:
    """Get a session.

    The session's name, status, times and number of turns.
    """
    return m.SessionEnvelope.of(on_session(router, session_id, sessions.get_session))


@route(router.post, "/sessions/<session_id>/end")
def end_session(session_id: SessionId) -> m.SessionEnvelope:
    """End a session.

    Ends an open session; its consolidation into long-term memory follows and no message can be
    added. Ending an ended session answers it unchanged.
    """
    return m.SessionEnvelope.of(on_session(router, session_id, sessions.end_session))


@route(router.delete, "/sessions/<session_id>", responses={204: {"description": "Deleted"}})
def delete_session(session_id: SessionId) -> Response[None]:
    """Delete a session.

    Hides the session from every route at once; its turns, its long-term memory and the session
    itself are removed in the background (GET /deletions tells when). A conversation under a client
    id (PUT /sessions/{id}) is deleted whole, whether named by its client id or by the server id of
    any of its sessions: they share one LangGraph thread, and the id then starts a new one.
    """
    sessions.delete_session(wiring.chat_deps().memory, user(router), session_id)
    return Response(status_code=204, body=None)


@route(router.get, "/sessions/<session_id>/export")
def export_session(session_id: SessionId, next_token: NextToken = None) -> m.ExportDocument:
    """Export a session.

    The session and its turns as a document that POST /sessions/import accepts. A long session comes
    in pages of at most 4 MB (a Lambda answer is at most 6 MB): while next_token is set, ask again
    with it and append the page's messages.
    """
    found, stored, token = on_session(
        router, session_id, sessions.export_session, next_token=next_token, size_of=m.turn_bytes
    )
    return m.ExportDocument.of(found, stored, token)
